"""Two builds of llama.cpp side by side: the venv's (the one `make setup` picked for this CPU, named by what llama.cpp
reports: avx512 or portable) and another one installed in a folder of its own (e.g. the portable AVX2 wheel given
with --wheel, or the AVX-512 build on a venv that has the portable one).

Each build runs in its own process (one process cannot load two builds), on the same prompts, alternately in
rounds (build A prompts 1-5, build B prompts 1-5, A 6-10, ...), so a change of load hits both alike. The prompts are
the course's extractive answer prompts over the gold CMRC 2018 paragraph (--n questions of the answers benchmark's
seeded sample), the prompt cache cleared before each. Per prompt: prompt tokens, seconds to the first token (prompt
reading), generated tokens and their rate, the answer. Reported: medians per build, the paired ratio of prompt
tokens per second with a 95 % bootstrap interval, and how many answers differ between the builds (floating-point
order differs between builds, so greedy decoding can pick another token)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks import write_results
from rag_lib.experiments.evaluation import exact_match
from rag_lib.experiments.results import format_table
from rag_lib.index import source_name

ROUND = 5  # prompts per build per round
RESAMPLES = 2000


def prompts(n: int) -> list[dict]:
    """The first n questions of the answers benchmark's sample, each with its extractive prompt on the gold context."""
    from langchain_core.documents import Document

    from benchmarks.answers_sample import sample_questions
    from rag_lib.experiments.cmrc import cmrc_path, load_cmrc
    from rag_lib.graphs.rag import extract_prompt

    data = load_cmrc(cmrc_path(None))
    items = []
    for q in sample_questions(data, n, seed=0):
        context = Document(data.contexts[q["context_id"]], metadata={"source": f"{q['context_id']}.txt"})
        messages = extract_prompt(q["question"], [context])
        items.append({"id": q["id"], "golds": q["golds"],
                      "messages": [{"role": m.type, "content": str(m.content)} for m in messages]})
    return items


def worker(items: list[dict]) -> list[dict]:
    """In this process's llama.cpp build: each prompt streamed from a cleared cache, timed to the first token."""
    import llama_cpp
    from langchain_core.messages import HumanMessage, SystemMessage

    from rag_lib.graphs.rag import EXTRACT_TOKENS, cleaned_span
    from rag_lib.llm import get_chat_model

    llm = get_chat_model()
    copier = llm.bind(max_tokens=EXTRACT_TOKENS)
    count = lambda text: len(llm.client.tokenize(text.encode("utf-8"), add_bos=False, special=True))  # noqa: E731
    rows = []
    for item in items:
        messages = [SystemMessage(m["content"]) if m["role"] == "system" else HumanMessage(m["content"])
                    for m in item["messages"]]
        llm.client.reset()
        started, first, text = time.perf_counter(), None, ""
        for chunk in copier.stream(messages):
            if first is None and chunk.content:
                first = time.perf_counter()
            text += str(chunk.content)
        ended = time.perf_counter()
        first = first or ended
        generated = count(text)
        rows.append({"id": item["id"], "prompt tokens": sum(count(m["content"]) for m in item["messages"]),
                     "first token s": first - started, "total s": ended - started, "generated tokens": generated,
                     "generation tok/s": (generated - 1) / (ended - first) if generated > 1 and ended > first else None,
                     "answer": cleaned_span(text), "em": exact_match(cleaned_span(text), item["golds"]),
                     "llama_cpp": source_name(Path(llama_cpp.__file__).parent)})
    return rows


def venv_build() -> str:
    """The venv's llama.cpp build by the CPU features it reports: "avx512" or "portable"."""
    import llama_cpp

    return "avx512" if "AVX512 = 1" in llama_cpp.llama_print_system_info().decode() else "portable"


def run_build(site: Path | None, items: list[dict]) -> list[dict]:
    """`worker` in a subprocess whose llama_cpp is the venv's (site None) or the one installed in `site`."""
    env = dict(os.environ)
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "benchmarks.builds", "--worker"], input=json.dumps(items),
                          capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the build in {site or 'the venv'} failed (exit {done.returncode}; an illegal instruction "
                         f"is -4: that build needs CPU features this machine lacks):\n{done.stderr[-1500:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def install(wheel: Path, site: Path) -> Path:
    """pip-install a llama-cpp-python wheel (no dependencies) into its own folder, once."""
    if not (site / "llama_cpp").exists():
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site),
                        str(wheel)], check=True)
    return site


def paired_ratio(a: np.ndarray, b: np.ndarray, seed: int = 0) -> tuple[float, list[float]]:
    """Median of b/a per prompt, with a 95 % percentile-bootstrap interval over the prompts."""
    ratios = b / a
    rng = np.random.default_rng(seed)
    medians = [float(np.median(rng.choice(ratios, len(ratios)))) for _ in range(RESAMPLES)]
    return float(np.median(ratios)), [float(np.percentile(medians, 2.5)), float(np.percentile(medians, 97.5))]


def summary(name: str, rows: list[dict]) -> dict:
    """Medians of one build's rows."""
    rates = [r["generation tok/s"] for r in rows if r["generation tok/s"]]
    return {"build": name, "prompts": len(rows),
            "prompt tokens p50": float(np.median([r["prompt tokens"] for r in rows])),
            "prompt tok/s p50": float(np.median([r["prompt tokens"] / r["first token s"] for r in rows])),
            "first token s p50": float(np.median([r["first token s"] for r in rows])),
            "generation tok/s p50": float(np.median(rates)) if rates else None,
            "total s p50": float(np.median([r["total s"] for r in rows])),
            "EM": float(np.mean([r["em"] for r in rows]))}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks builds", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--site", type=Path, help="folder where the other build is installed (pip install --target)")
    parser.add_argument("--wheel", type=Path, help="a llama-cpp-python wheel: installed into --site first")
    parser.add_argument("--name", help="the other build's name in the results (default: the build the venv lacks)")
    parser.add_argument("--n", type=int, default=20, help="prompts (CMRC questions with their gold paragraph)")
    parser.add_argument("--out", default="builds", help="results name: bench_results/<out>.json")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(sys.stdin.read())), ensure_ascii=False))
        return
    if args.site is None:
        raise SystemExit("--site DIR: the folder holding the other build (with --wheel FILE it is installed there)")
    site = install(args.wheel, args.site) if args.wheel else args.site
    if not (site / "llama_cpp").exists():
        raise SystemExit(f"{site} holds no llama_cpp package: give --wheel, or pip install --target it yourself")
    items = prompts(args.n)
    venv = venv_build()
    name = args.name or ("portable" if venv == "avx512" else "avx512")
    venv = f"{venv} (venv)"
    rows: dict[str, list[dict]] = {venv: [], name: []}
    load = [round(os.getloadavg()[0], 2)]
    for start in range(0, len(items), ROUND):
        batch = items[start : start + ROUND]
        rows[venv] += run_build(None, batch)
        rows[name] += run_build(site, batch)
        print(f"{start + len(batch)}/{len(items)} prompts on both builds", flush=True)
    load.append(round(os.getloadavg()[0], 2))
    base, other = rows[venv], rows[name]
    rate = lambda rs: np.array([r["prompt tokens"] / r["first token s"] for r in rs])  # noqa: E731
    ratio, interval = paired_ratio(rate(base), rate(other))
    seconds = lambda rs: np.array([r["total s"] for r in rs])  # noqa: E731
    total, total_interval = paired_ratio(seconds(other), seconds(base))
    differ = [b["id"] for b, o in zip(base, other) if b["answer"] != o["answer"]]
    table = [summary(name, rs) for name, rs in rows.items()]
    print(format_table(table))
    print(f"\nprompt tok/s, {name} / {venv}: {ratio:.2f} [{interval[0]:.2f}, {interval[1]:.2f}]; answer "
          f"seconds, {venv} / {name}: {total:.2f} [{total_interval[0]:.2f}, {total_interval[1]:.2f}]; "
          f"answers that differ: {len(differ)} of {len(base)}")
    comparison = {"prompt tok/s ratio (other / venv), median": ratio, "prompt tok/s ratio CI": interval,
                  "answer speed-up (venv s / other s), median": total, "answer speed-up CI": total_interval,
                  "answers that differ": len(differ), "differing ids": differ}
    setup = {"prompts": len(items), "round": ROUND, "venv build": venv, "other build": name,
             "load_1min": {"start": load[0], "end": load[1]},
             "prompt": "extractive answer prompt over the gold CMRC 2018 paragraph, cache cleared before each"}
    print("\nwrote", write_results(args.out, {"setup": setup, "builds": table, "comparison": comparison, "rows": rows}))


if __name__ == "__main__":
    main(sys.argv[1:])
