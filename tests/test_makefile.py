"""`make setup` picks the llama.cpp build by CPU: AVX-512 where the CPU has its flags, portable AVX2 on other x86-64,
llama.cpp's native default elsewhere; the portable build when asked for."""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
AVX512_FLAGS = "avx512f avx512bw avx512vl avx512_vnni avx512_bf16 avx512vbmi"
# what an enclosing `make test` passes down (its exported CMAKE_ARGS, its command-line LLAMA_BUILD via MAKEFLAGS)
INHERITED = {"CMAKE_ARGS", "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "LLAMA_BUILD", "ARCH", "CPUINFO"}


def llama_info(tmp_path: Path, flags: str, arch: str = "x86_64", *extra: str) -> dict[str, str]:
    """What `make llama-info` says for a CPU with these /proc/cpuinfo flags on this machine kind."""
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor : 0\nflags : fpu sse2 avx avx2 fma {flags}\n")
    out = subprocess.run(
        ["make", "-s", "-C", str(ROOT), "llama-info", f"CPUINFO={cpuinfo}", f"ARCH={arch}", *extra],
        capture_output=True, text=True, check=True, env={k: v for k, v in os.environ.items() if k not in INHERITED},
    ).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def test_an_avx512_cpu_gets_the_avx512_build(tmp_path: Path) -> None:
    info = llama_info(tmp_path, AVX512_FLAGS)
    assert info["LLAMA_BUILD"] == "avx512"
    assert "-DGGML_AVX512=ON" in info["CMAKE_ARGS"] and "-DGGML_NATIVE=OFF" in info["CMAKE_ARGS"]


@pytest.mark.parametrize("missing", ["avx512_bf16", "avx512vbmi"])
def test_a_cpu_without_every_avx512_flag_gets_the_portable_build(tmp_path: Path, missing: str) -> None:
    info = llama_info(tmp_path, AVX512_FLAGS.replace(missing, ""))
    assert info["LLAMA_BUILD"] == "portable"
    assert "-DGGML_AVX2=ON" in info["CMAKE_ARGS"] and "AVX512" not in info["CMAKE_ARGS"]


def test_the_portable_build_when_asked_for_on_an_avx512_cpu(tmp_path: Path) -> None:
    info = llama_info(tmp_path, AVX512_FLAGS, "x86_64", "LLAMA_BUILD=portable")
    assert info["LLAMA_BUILD"] == "portable" and "AVX512" not in info["CMAKE_ARGS"]


@pytest.mark.parametrize("arch", ["aarch64", "arm64"])
def test_arm_gets_no_x86_flags(tmp_path: Path, arch: str) -> None:
    info = llama_info(tmp_path, AVX512_FLAGS, arch)
    assert info["LLAMA_BUILD"] == "native"
    assert "AVX" not in info["CMAKE_ARGS"] and "GGML_NATIVE" not in info["CMAKE_ARGS"]


