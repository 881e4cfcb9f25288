"""The model file is assembled from parts, verified by sha256, and a corrupt copy is rebuilt."""

from __future__ import annotations

import hashlib
import os

import pytest

from rag_lib import gguf


@pytest.fixture()
def parts(tmp_path):
    paths = []
    for i, payload in enumerate([b"GGUF-part-one|", b"part-two|", b"part-three"]):
        path = tmp_path / f"part{i}.bin"
        path.write_bytes(payload)
        paths.append(path)
    whole = b"".join(p.read_bytes() for p in paths)
    return paths, hashlib.sha256(whole).hexdigest(), whole


def test_assemble_joins_parts_in_order_and_verifies(parts, tmp_path):
    paths, sha, whole = parts
    target = gguf.assemble(paths, tmp_path / "cache" / "m.gguf", sha)
    assert target.read_bytes() == whole
    assert gguf.is_verified(target, sha)


def test_wrong_hash_is_refused_and_nothing_left_behind(parts, tmp_path):
    paths, _, _ = parts
    target = tmp_path / "m.gguf"
    with pytest.raises(gguf.ModelFileError, match="corrupt"):
        gguf.assemble(paths, target, "0" * 64)
    assert not target.exists()
    assert not list(tmp_path.glob("*.partial"))


def test_two_assemblies_at_once_do_not_collide(parts, tmp_path, monkeypatch):
    """A second assembly into the same cache runs to the end while the first is half-written."""
    paths, sha, whole = parts
    target = tmp_path / "cache" / "m.gguf"
    started: list[bool] = []

    class InterruptingBar:
        """Test double for tqdm: after the first chunk is written, runs a whole second assembly."""

        def __init__(self, **kwargs) -> None:
            pass

        def __enter__(self) -> "InterruptingBar":
            return self

        def __exit__(self, *exc) -> None:
            pass

        def update(self, n: int) -> None:
            if not started:
                started.append(True)
                assert gguf.assemble(paths, target, sha).read_bytes() == whole

    monkeypatch.setattr(gguf, "tqdm", InterruptingBar)
    assert gguf.assemble(paths, target, sha).read_bytes() == whole
    assert started and gguf.is_verified(target, sha)
    assert not list(target.parent.glob("*.partial"))


def test_corrupted_file_is_detected_even_with_same_size(parts, tmp_path):
    paths, sha, whole = parts
    target = gguf.assemble(paths, tmp_path / "m.gguf", sha)
    target.write_bytes(whole[:-1] + b"X")  # same size, new mtime: the stamp no longer matches
    assert not gguf.is_verified(target, sha)


def test_an_unreadable_stamp_means_hash_again(parts, tmp_path, monkeypatch):
    paths, sha, _ = parts
    target = gguf.assemble(paths, tmp_path / "m.gguf", sha)
    stamp = gguf._stamp_path(target)
    stamp.write_text('{"size": 3')  # cut off mid-write
    hashed = []
    monkeypatch.setattr(gguf, "sha256_of", lambda path: hashed.append(path) or sha)
    assert gguf.is_verified(target, sha) and hashed == [target]  # re-hashed, not trusted, not crashed
    assert gguf.is_verified(target, sha) and hashed == [target]  # the rewritten stamp is trusted again
    assert [p.name for p in tmp_path.iterdir() if "partial" in p.name] == []


def test_partial_file_is_detected(parts, tmp_path):
    paths, sha, whole = parts
    target = gguf.assemble(paths, tmp_path / "m.gguf", sha)
    target.write_bytes(whole[:5])
    assert not gguf.is_verified(target, sha)


def test_ensure_rebuilds_a_corrupt_cached_model(monkeypatch, parts, tmp_path):
    paths, sha, whole = parts
    monkeypatch.setenv("RAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(gguf, "QWEN_SHA256", sha)
    monkeypatch.setattr(gguf, "QWEN_SIZE", len(whole))
    monkeypatch.setattr(gguf, "part_paths", lambda: paths)
    first = gguf.ensure_qwen_gguf()
    first.write_bytes(b"garbage")
    os.utime(first, ns=(1, 1))
    rebuilt = gguf.ensure_qwen_gguf()
    assert rebuilt.read_bytes() == whole


def test_ensure_builds_in_an_explicit_folder_without_touching_the_cache(monkeypatch, parts, tmp_path):
    paths, sha, whole = parts
    monkeypatch.setenv("RAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(gguf, "QWEN_SHA256", sha)
    monkeypatch.setattr(gguf, "QWEN_SIZE", len(whole))
    monkeypatch.setattr(gguf, "part_paths", lambda: paths)
    built = gguf.ensure_qwen_gguf(tmp_path / "elsewhere")  # how the quickstart benchmark times a first assembly
    assert built == tmp_path / "elsewhere" / gguf.QWEN_FILENAME and built.read_bytes() == whole
    assert os.environ["RAG_CACHE_DIR"] == str(tmp_path / "cache") and not (tmp_path / "cache").exists()


def test_a_cache_folder_that_cannot_be_a_folder_is_a_config_error_naming_the_variable(monkeypatch, tmp_path):
    from rag_lib.embeddings import get_embeddings
    from rag_lib.settings import ConfigError, cache_dir

    afile = tmp_path / "not_a_folder"
    afile.write_text("x")
    for value in (afile, afile / "sub"):  # the file itself, or a folder below it
        monkeypatch.setenv("RAG_CACHE_DIR", str(value))
        with pytest.raises(ConfigError, match=f"the cache folder {value} cannot be used .*set RAG_CACHE_DIR"):
            cache_dir()
    with pytest.raises(ConfigError, match="RAG_CACHE_DIR"):
        get_embeddings()  # what notebooks call first
    monkeypatch.setenv("RAG_CACHE_DIR", str(tmp_path / "new" / "cache"))
    assert cache_dir().is_dir()  # a missing folder is created


def test_installed_default_model_is_verified():
    path = gguf.ensure_qwen_gguf()
    assert path.stat().st_size == gguf.QWEN_SIZE
    assert gguf.is_verified(path, gguf.QWEN_SHA256)
