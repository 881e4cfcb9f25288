"""docs/benchmarks.md, speed sections: the machine, model builds, answer speed, ANN indexes."""

from __future__ import annotations

from rag_lib.experiments.leaderboard.numbers import (
    columns,
    interval,
    measured,
    ms,
    one,
    results,
    section,
    share,
    table,
    three,
    times,
)


def setup_section() -> str:
    """Setting up and answering on this machine (quickstart.json) and the two llama.cpp builds (builds.json)."""
    quick = results("quickstart")
    steps = quick["setup"]
    questions = [[q["question"], f"{ms(q['retrieval_ms'])} ms",
                  f"{q['ttft_s']:.1f} s" if q["ttft_s"] else "— (refused before the model)",
                  f"{q['tokens_per_s']:.1f} tok/s" if q["tokens_per_s"] else "—", f"{q['total_s']:.2f} s"]
                 for q in quick["questions"]]
    return section(
        "Setting up and answering", "quickstart.json", "make bench", measured("quickstart"),
        table(["setup step", "measured"], [
            ["llama.cpp build in the venv", steps["llama.cpp build"]],
            ["model assembly from its parts, first run", f"{steps['model assembly, first run (s)']:.1f} s"],
            ["model assembly, cached", f"{1000 * steps['model assembly, cached (s)']:.1f} ms"],
            ["model load (llama.cpp)", f"{steps['model load (s)']:.1f} s"],
            [f"index data/docs: {steps['chunks']} chunks, uncached embeddings",
             f"{steps['index data/docs (s)']:.0f} s ({steps['chunks/s']:.1f} chunks/s)"]]),
        table(["question", "retrieval", "first token", "generation", "total"], questions),
        "Reading the prompt (instructions and passages) dominates the time to the first token.",
        builds_text())


def builds_text() -> str:
    """Two llama.cpp builds (the venv's and another) on the same prompts (builds.json)."""
    data = results("builds")
    rows = [[b["build"], f"{b['prompt tok/s p50']:.1f}", f"{b['first token s p50']:.1f} s",
             f"{b['generation tok/s p50']:.1f}", f"{b['total s p50']:.1f} s", share(b["EM"], 2)]
            for b in data["builds"]]
    cmp = data["comparison"]
    venv, other = data["setup"]["venv build"], data["setup"]["other build"]
    ratio, ratio_ci = cmp["prompt tok/s ratio (other / venv), median"], cmp["prompt tok/s ratio CI"]
    speedup, speedup_ci = cmp["answer speed-up (venv s / other s), median"], cmp["answer speed-up CI"]
    if ratio < 1:  # say it of the faster build: the inverse of a ratio and of its interval's ends
        venv, other = other, venv
        ratio, ratio_ci = 1 / ratio, [1 / ratio_ci[1], 1 / ratio_ci[0]]
        speedup, speedup_ci = 1 / speedup, [1 / speedup_ci[1], 1 / speedup_ci[0]]
    return "\n\n".join([
        f"**Two llama.cpp builds** (`python -m benchmarks builds`, `bench_results/builds.json`): the same "
        f"{data['setup']['prompts']} extractive answer prompts (CMRC questions with their paragraph), run "
        f"alternately in rounds of {data['setup']['round']}, medians:",
        table(["build", "prompt tokens/s", "first token", "generation tokens/s", "answer", "EM"], rows),
        f"Per prompt, {other} reads prompts {ratio:.2f}x as fast as {venv} [{ratio_ci[0]:.2f}, {ratio_ci[1]:.2f}] "
        f"and answers {speedup:.2f}x as soon [{speedup_ci[0]:.2f}, {speedup_ci[1]:.2f}] (95% bootstrap intervals of "
        f"the paired ratio); {cmp['answers that differ']} of the {data['setup']['prompts']} answers came out worded "
        "differently.",
    ])


def answer_speed_section() -> str:
    """Where an answer's seconds go, per pipeline, against the speed targets (answer_speed.json)."""
    data = results("answer_speed")
    setup, rows = data["setup"], data["pipelines"]
    body = [[r["pipeline"], str(r["n"]), f"{r['s p50']:.1f} s [{r['s p50 ci'][0]:.1f}, {r['s p50 ci'][1]:.1f}]",
             f"{r['target s']:.0f} s", r["target"],
             f"{r['s reading the prompt p50']:.1f} s", f"{r['s generating p50']:.1f} s",
             f"{r['prompt tokens given p50']:.0f} / {r['prompt tokens read p50']:.0f} / "
             f"{r['prompt tokens reused p50']:.0f}", f"{r['generated tokens p50']:.0f}", f"{r['LLM calls mean']:.1f}",
             f"{r['F1']:.3f}", "—" if not r["F1 diff vs answers.json"] else
             interval(r["F1 diff vs answers.json"][0], r["F1 diff vs answers.json"][1:], 3)] for r in rows]
    load = setup["load_1min over the rows"]
    return section(
        "Answer speed", "answer_speed.json", "python -m benchmarks answer_speed", measured("answer_speed"),
        f"Plain RAG, Corrective RAG and the judge (extractive answers, every context indexed) on the first "
        f"{setup['questions']} questions of the answer benchmark's sample, side by side, each run from an empty "
        f"prompt cache, on the **{setup['build']}** llama.cpp build (1-minute load over the rows: median "
        f"{load['median']:.1f}, at most {load['max']:.1f}). Medians with 95% bootstrap intervals; prompt tokens given "
        "(chat template included) / read by llama.cpp / reused from its cache; the last column is F1's paired "
        "difference with the same pipeline's rows in `answers.json` on the same questions.",
        table(["pipeline", "n", "s per answer", "target", "verdict", "reading the prompt", "generating",
               "prompt tokens given / read / reused", "generated tokens", "LLM calls", "F1", "F1 vs answers.json"],
              body),
        speed_reading(setup, rows))


def speed_reading(setup: dict, rows: list[dict]) -> str:
    """What the answer-speed table says about where the seconds go (answer_speed.json)."""
    rates, by_name = setup["llama.cpp rates over the rows"], {r["pipeline"]: r for r in rows}
    earlier = results("answers")["cmrc"]["where the seconds go"]["overall"]
    text = (f"Over these rows llama.cpp read {rates['prompt tokens read per s']:.1f} prompt tokens and generated "
            f"{rates['generated tokens per s']:.1f} tokens per second, so a prompt of a few hundred tokens costs "
            "seconds before the first word; only the judge reuses a cached prefix (its calls share their "
            f"instructions). The rows of `answers.json`, measured on earlier days, generated "
            f"{earlier['generated tokens per s']:.1f} tokens per second: this machine's speed varies from day to day, "
            "so compare pipelines within one run.")
    variant = by_name.get("rag_extractive_k2")
    if variant and "beside" in variant:
        f1, s = variant["F1 diff beside"], variant["s diff beside"]
        text += (f" Two passages instead of three read {variant['prompt tokens read p50']:.0f} prompt tokens instead "
                 f"of {by_name['rag_extractive']['prompt tokens read p50']:.0f} (medians); paired with plain RAG: F1 "
                 f"{interval(f1[0], f1[1:], 3)}, seconds {s[0]:+.1f} [{s[1]:+.1f}, {s[2]:+.1f}] (means).")
    return text


def ann_rows(file: str, part: str) -> str:
    """Every ANN setting of one index benchmark run."""
    spec = [("M", "M", str), ("efConstruction", "efConstruction", str), ("nlist", "nlist", str), ("ef", "ef", str),
            ("nprobe", "nprobe", str), ("recall@10", "recall@10", three), ("CPU ms/q", "cpu_ms_per_query", ms),
            ("p50 single ms", "p50_single_ms", ms), ("build s", "build_s", one), ("index MB", "index_mb", one)]
    rows = [{**r, **{k: ("" if r.get(k) is None else r[k]) for k in ("M", "efConstruction", "nlist", "ef", "nprobe")}}
            for r in results(file)[part]["settings"]]
    return columns(rows, spec, label="index")


def ann_section() -> str:
    """Indexing throughput and the ANN sweeps (index.json, index_100k.json)."""
    data = results("index")
    stages = table(["stage", "seconds", "chunks/s", "share of the time"],
                   [[s["stage"], f"{s['seconds']:.2f}", f"{s['chunks/s']:.1f}", f"{100 * s['share of total']:.1f} %"]
                    for s in data["indexing"]["stages"]])
    return section(
        "Indexing and ANN indexes", "index.json", "python -m benchmarks index", measured("index"),
        f"Indexing `data/docs` ({data['indexing']['files']} files, {data['indexing']['chunks']} chunks), by stage: "
        "embedding is nearly all of it; re-runs skip unchanged files and embeddings are cached on disk.", stages,
        f"**{data['cmrc']['vectors']} CMRC chunk vectors** (recall@10 against FLAT, {data['cmrc']['queries']:,} "
        "queries):", ann_rows("index", "cmrc"),
        f"**{data['synthetic']['vectors']:,} random unit vectors** (no cluster structure, the worst case for graph "
        "and cluster indexes):", ann_rows("index", "synthetic"),
        f"**{results('index_100k')['synthetic']['vectors']:,} random unit vectors** (`bench_results/index_100k.json`, "
        "`--synthetic-n 100000`):", ann_rows("index_100k", "synthetic"),
        crossing_text())


def crossing_text() -> str:
    """Where HNSW starts to pay through Milvus Lite, beside faiss and numpy (crossing.json)."""
    data = results("crossing")
    by = {(c["engine"], c["metric"]): c for c in data["crossings"]}
    numpy = {r["vectors"]: r["cpu_ms_per_query"] for r in data["rows"] if r["engine"] == "numpy"}
    rows = []
    for size, lite in by["Milvus Lite", "cpu_ms_per_query"]["by size"].items():
        single = by["Milvus Lite", "p50_single_ms"]["by size"][size]
        faiss = by["faiss", "cpu_ms_per_query"]["by size"][size]
        rows.append([f"{int(size):,}", ms(lite["FLAT"]), ms(lite["HNSW"]), f"{ms(single['FLAT'])} ms",
                     f"{ms(single['HNSW'])} ms", times(faiss['FLAT'] / faiss['HNSW']), ms(numpy[int(size)])])
    return "\n\n".join([
        f"**Clustered vectors shaped like embeddings** (`python -m benchmarks crossing`, "
        f"`bench_results/crossing.json`): HNSW M={data['hnsw']['M']}, efConstruction={data['hnsw']['efConstruction']}"
        f", the cheapest `ef` reaching recall@10 >= {data['floor']}. Through Lite, HNSW is cheaper than FLAT from "
        f"{by['Milvus Lite', 'cpu_ms_per_query']['HNSW cheaper from']:,} vectors on.",
        table(["vectors", "Lite FLAT CPU ms/q", "Lite HNSW CPU ms/q", "Lite FLAT single-query p50",
               "Lite HNSW single-query p50", "faiss: FLAT CPU / HNSW CPU", "numpy exact scan CPU ms/q"], rows),
    ])


def speed_summary() -> str:
    """The README's paragraph on answer speed: each pipeline's median against its target (answer_speed.json)."""
    data = results("answer_speed")
    setup, rows = data["setup"], {r["pipeline"]: r for r in data["pipelines"]}
    names = {"rag_extractive": "plain RAG", "crag_extractive": "Corrective RAG", "judge_extractive": "the judge"}
    parts = [f"{label} {rows[p]['s p50']:.1f} s [{rows[p]['s p50 ci'][0]:.1f}, {rows[p]['s p50 ci'][1]:.1f}] "
             f"against {rows[p]['target s']:.0f} s ({rows[p]['target']})" for p, label in names.items() if p in rows]
    plain, rates = rows["rag_extractive"], setup["llama.cpp rates over the rows"]
    return (f"**Answer speed** ({setup['build']} build, {setup['questions']} CMRC questions side by side, "
            f"`bench_results/answer_speed.json`; median seconds per answer [95% CI]): {'; '.join(parts)}. Reading the "
            f"prompt is where the time goes: plain RAG reads {plain['prompt tokens read p50']:.0f} tokens "
            f"({plain['s reading the prompt p50']:.1f} s of its {plain['s p50']:.1f} s) at "
            f"{rates['prompt tokens read per s']:.0f} tokens/s on one thread, and the judge also writes "
            f"{rows['judge_extractive']['generated tokens p50']:.0f} tokens (grades, follow-ups, answer) at "
            f"{rates['generated tokens per s']:.1f} tokens/s. A shorter prompt (two passages) did not measurably help "
            "(docs/benchmarks.md, Answer speed).")
