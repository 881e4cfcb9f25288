"""`python -m benchmarks builds` end to end on two prompts, with the venv's own llama.cpp build standing in for
the other one (a folder whose llama_cpp links to the venv's): both processes must load from where they are told and
give the same answers. The real local model; no timing is asserted."""

from __future__ import annotations

from pathlib import Path

import llama_cpp
import pytest

from benchmarks import builds
from rag_lib.index import source_name


def test_both_builds_answer_the_same_prompts_from_their_own_folders(tmp_path, bench_output):
    site = tmp_path / "other-build"
    site.mkdir()
    (site / "llama_cpp").symlink_to(Path(llama_cpp.__file__).parent, target_is_directory=True)
    builds.main(["--site", str(site), "--name", "same build", "--n", "2", "--out", "mini_builds"])
    results = bench_output("mini_builds")
    rows, venv = results["rows"], results["setup"]["venv build"]
    info = llama_cpp.llama_print_system_info().decode()
    assert venv == ("avx512 (venv)" if "AVX512 = 1" in info else "portable (venv)")  # named by what it reports
    assert [r["llama_cpp"] for r in rows["same build"]] == [source_name(site / "llama_cpp")] * 2
    assert {r["llama_cpp"] for r in rows[venv]} == {source_name(Path(llama_cpp.__file__).parent)}
    assert [r["id"] for r in rows["same build"]] == [r["id"] for r in rows[venv]]
    assert results["comparison"]["answers that differ"] == 0  # one build, one cleared cache: the same greedy answers
    for row in rows["same build"] + rows[venv]:
        assert row["prompt tokens"] > 100 and row["generated tokens"] >= 1 and row["first token s"] > 0
    low, high = results["comparison"]["prompt tok/s ratio CI"]
    assert low <= results["comparison"]["prompt tok/s ratio (other / venv), median"] <= high


def test_a_folder_without_a_build_is_a_clear_error(tmp_path):
    with pytest.raises(SystemExit, match="holds no llama_cpp package"):
        builds.main(["--site", str(tmp_path), "--n", "1"])
