"""The technique leaderboard: one row per technique, from the committed JSON, and the README's tables."""

from __future__ import annotations

from dataclasses import dataclass

from rag_lib.experiments.leaderboard.labels import (
    BM25,
    BM25_JIEBA,
    CLIENT,
    COMPLETE,
    CUTOFF,
    DENSE,
    ENSEMBLE,
    FUSED,
    PARENT,
    RERANK,
    RRF,
    WEIGHTED,
    label,
)
from rag_lib.experiments.leaderboard.numbers import (
    TRIAL,
    agent_held_out_kinds,
    agent_pair,
    answer_cost,
    answer_pair,
    answers_paired,
    calls,
    condense_pair,
    crag_tuned,
    interval,
    joined,
    matched_medians,
    ms,
    multihop_cost,
    multihop_pair,
    node_group_indexing,
    paired,
    pick,
    results,
    signed,
    summary_row,
    table,
    trial_of,
)


@dataclass(frozen=True)
class Row:
    """One technique: what it buys over the baseline it replaces, what it costs, where that was measured."""

    family: str  # "retrieval", "query" or "answer"
    technique: str
    baseline: str
    metric: str
    diff: float
    ci: tuple[float, float] | None  # None: the JSON holds point values only
    cost: str
    data: str
    tuned: str  # what was chosen looking at `data`
    source: str
    digits: int = 3
    elsewhere: str = ""  # the same comparison on data no choice was made on (dev split, other questions)
    n: int = 0  # questions paired (0: not recorded)
    also: str = ""  # a second metric on the same questions, written after the difference
    note: str = ""  # how the cost was measured when it is not comparable with the other rows' (a note below)

    def quality(self) -> str:
        """The difference as the table writes it, then the second metric when the row has one."""
        if self.ci is None:
            text = f"{signed(self.diff, self.digits)} (point values only)"
        else:
            text = paired(self.diff, self.ci, self.n, self.digits) if self.n else interval(self.diff, self.ci,
                                                                                           self.digits)
        return joined(text, self.also)

    @property
    def cost_cell(self) -> str:
        """The cost, marked † when a note below the table says how it was measured."""
        return f"{self.cost} †" if self.note else self.cost

    @property
    def tuning(self) -> str:
        """What was tuned on the data, then how the comparison came out elsewhere."""
        return joined(self.tuned, self.elsewhere)


def cost_notes(rows: list[Row]) -> str:
    """The notes the † of the cost column points to, one line per marked row."""
    return "\n".join(f"- † {r.technique}: {r.note}" for r in rows if r.note)


def retrieval_pipeline(name: str, file: str = "retrieval") -> dict:
    """One pipeline's row in bench_results/retrieval.json (or retrieval_dev.json)."""
    return pick(results(file)["pipelines"], pipeline=name)


def fusion_vs(name: str, part: str = "all", file: str = "retrieval") -> tuple[float, tuple]:
    """Per-context fusion minus `name`, R@1, paired (the retrieval benchmark's fusion section)."""
    row = results(file)["per-context fusion"][part][name]
    return row["fused - this, R@1"], tuple(row["fused - this, R@1 95% CI"])


def negated(pair: tuple[float, tuple]) -> tuple[float, tuple[float, float]]:
    """The same paired difference the other way round (the percentile interval flips with it)."""
    value, (low, high) = pair
    return -value, (-high, -low)


def fusion_knob(name: str) -> tuple[float, tuple]:
    """A pipeline of bench_results/fusion.json minus the default (hybrid RRF k=60), R@1, paired."""
    row = pick(results("fusion")["pipelines"], pipeline=name)
    return row["R@1 - default"], tuple(row["95% CI"])


NOT_TUNED = "nothing tuned"
CUTOFF_ONLY = f"{NOT_TUNED} (cutoff from notebook 00)"


def point(file: str, name: str, baseline: str, metric: str = "R@1") -> float:
    """The difference of two pipelines' point values in a retrieval JSON."""
    return retrieval_pipeline(name, file)[metric] - retrieval_pipeline(baseline, file)[metric]


def p50(name: str) -> str:
    """`23 ms/q` for a pipeline of bench_results/retrieval.json."""
    return f"{ms(retrieval_pipeline(name)['p50 ms'])} ms/q"


def dev_point(name: str, baseline: str) -> str:
    """The same comparison on the held-out CMRC dev sample, point values."""
    return f"dev: {signed(point('retrieval_dev', name, baseline))} (point values)"


def dev_pair(pair: tuple[float, tuple]) -> str:
    """A paired difference on the held-out CMRC dev sample."""
    return f"dev: {interval(*pair)}"


def lite_row(file: str, name: str) -> dict:
    """One row of the segments study in bench_results/lite.json or lite_dev.json."""
    return pick(results(file)["segments"]["pipelines"], pipeline=name)


def embedding_speedup() -> float:
    """How many times more chunks per second USE embeds than e5 (embeddings.json)."""
    speed = {m["model"].split()[0]: m["chunks/s"] for m in results("embeddings")["indexing"]["models"]}
    return speed["USE"] / speed["e5"]


def search_rows() -> list[Row]:
    """Sparse, dense and hybrid search and their fusions (CMRC trial, recall@1)."""
    stop, stop_dev = (lite_row(f, "BM25, flushed once, stop filter") for f in ("lite", "lite_dev"))
    rrf = negated(fusion_knob("weighted, dense share 1.0"))
    course, best = fusion_knob("weighted, dense share 0.6"), fusion_knob("weighted, dense share 0.5")
    use = pick(results("embeddings")["differences"], pipeline="e5 + USE + BM25, weighted equal")
    use_ms = {p["pipeline"]: p["p50 ms"] for p in results("embeddings")["pipelines"]}
    return [
        Row("retrieval", label(BM25), label(BM25_JIEBA), "R@1", stop["R@1 - flushed once"], tuple(stop["95% CI"]),
            f"{p50(BM25)} vs {p50(BM25_JIEBA)}", TRIAL, "stop words fixed by hand",
            "lite.json, lite_dev.json, retrieval.json",
            elsewhere=dev_pair((stop_dev["R@1 - flushed once"], stop_dev["95% CI"])),
            note="difference from lite.json (each index flushed once), ms from retrieval.json's run"),
        Row("retrieval", label(RRF), label(DENSE), "R@1", *rrf,
            f"{p50(RRF)} vs {p50(DENSE)}", trial_of("fusion"), "k=60, untuned",
            "fusion.json, retrieval.json", elsewhere=dev_point(RRF, DENSE)),
        Row("retrieval", label(WEIGHTED), label(RRF), "R@1", *course,
            f"{p50(WEIGHTED)} vs {p50(RRF)}", trial_of("fusion"),
            f"share chosen on these questions (the best here, .5: {interval(*best)})",
            "fusion.json, retrieval_dev.json",
            elsewhere=dev_point(WEIGHTED, RRF)),
        Row("retrieval", label(CLIENT), label(BM25), "R@1",
            point("retrieval", CLIENT, BM25), None, f"{p50(CLIENT)} vs {p50(BM25)}", TRIAL, NOT_TUNED,
            "retrieval.json, retrieval_dev.json", elsewhere=dev_point(CLIENT, BM25)),
        Row("retrieval", "a second embedding model (USE) in the hybrid", "e5 + BM25, weighted .6/.4", "R@1",
            use["R@1 diff"], tuple(use["R@1 diff 95% CI"]),
            f"{ms(use_ms[use['pipeline']])} vs {ms(use_ms[use['against']])} ms/q", trial_of("embeddings"), NOT_TUNED,
            "embeddings.json", note=f"embeddings.json's own run; at indexing USE embeds {embedding_speedup():.0f}x "
            "faster than e5"),
    ]


def structure_rows() -> list[Row]:
    """Chunking, parent-child, per-context fusion, reranking and the cutoff (CMRC trial, recall@1)."""
    chunking = pick(results("components")["pairs"], job="chunking 300/50")
    complete_half_b = negated(fusion_vs(COMPLETE, part="half B (held out)"))
    return [
        Row("retrieval", "chunking: LangChain RecursiveCharacterTextSplitter defaults",
            "recursive_split with Chinese separators", "R@1", chunking["R@1 diff"],
            tuple(chunking["R@1 diff 95% CI"]),
            f"{ms(chunking['p50 ms langchain'])} vs {ms(chunking['p50 ms rag_lib'])} ms/q",
            trial_of("components"), NOT_TUNED, "components.json",
            note="measured side by side on a loaded machine (components.json): compare within this row only"),
        Row("retrieval", label(RERANK), label(RRF), "R@1", point("retrieval", RERANK, RRF),
            None, f"{p50(RERANK)} vs {p50(RRF)}", TRIAL, NOT_TUNED, "retrieval.json"),
        Row("retrieval", label(CUTOFF), label(WEIGHTED), "R@1", point("retrieval", CUTOFF, WEIGHTED),
            None, f"{p50(CUTOFF)} vs {p50(WEIGHTED)}", TRIAL,
            "cutoff calibrated on the course's sample questions (notebook 00)", "retrieval.json"),
        Row("retrieval", label(PARENT), label(WEIGHTED), "R@1",
            point("retrieval", PARENT, WEIGHTED), None, f"{p50(PARENT)} vs {p50(WEIGHTED)}", TRIAL,
            "child size chosen on trial", "retrieval.json, retrieval_dev.json",
            elsewhere=dev_point(PARENT, WEIGHTED)),
        Row("retrieval", label(FUSED), label(PARENT), "R@1", *fusion_vs(PARENT),
            f"{p50(FUSED)} vs {p50(PARENT)}", TRIAL, "weights chosen on half of the trial paragraphs",
            "retrieval.json, retrieval_dev.json", elsewhere=dev_pair(fusion_vs(PARENT, file="retrieval_dev"))),
        Row("retrieval", label(COMPLETE), label(FUSED), "R@1",
            *negated(fusion_vs(COMPLETE)), f"{p50(COMPLETE)} vs {p50(FUSED)}", TRIAL,
            "score scaling chosen on trial", "retrieval.json, retrieval_dev.json",
            elsewhere=f"trial half not used for the weights: {interval(*complete_half_b)}; "
            + dev_pair(negated(fusion_vs(COMPLETE, file="retrieval_dev")))),
        Row("retrieval", label(ENSEMBLE), label(FUSED), "R@1",
            *negated(fusion_vs(ENSEMBLE)), f"{p50(ENSEMBLE)} vs {p50(FUSED)}", TRIAL, NOT_TUNED,
            "retrieval.json, retrieval_dev.json",
            elsewhere=dev_pair(negated(fusion_vs(ENSEMBLE, file="retrieval_dev")))),
    ]


ADVANCED_BASE = "baseline: hybrid RRF"


CROSS, WRITTEN = "translated + hard", "sample as written"


def advanced(name: str, group: str = CROSS) -> dict:
    """One transform on one question set of bench_results/advanced.json."""
    return pick(results("advanced")["summary"], pipeline=name, set=group)


def transform_row(technique: str, name: str, indexing: str = "") -> Row:
    """A query transform against hybrid search on the question, on the cross-lingual and hard questions; `indexing`
    is what it costs before any query (node groups are written by the model at indexing)."""
    row, written = advanced(name), advanced(name, WRITTEN)
    per_query = f"{calls(row['LLM calls'])}{' per query' if indexing else ''}, {row['seconds']:.1f} s/q"
    return Row("query", technique, "hybrid RRF on the question", "recall@3", row["recall@3 diff"],
               tuple(row["recall@3 diff 95% CI"]), joined(per_query, indexing),
               f"{row['questions']} cross-lingual or vague questions", NOT_TUNED, "advanced.json",
               elsewhere=f"{written['questions']} questions as written: "
               f"{paired(written['recall@3 diff'], written['recall@3 diff 95% CI'], written['questions'])}")


def query_rows() -> list[Row]:
    """Query transforms (advanced.json) and condensing a follow-up (chat.json)."""
    condensed, bounds, n = condense_pair()
    chat = results("chat")["answers"]
    written = pick(results("chat")["retrieval"], query="as written")
    kept, kept_bounds = written["condensed minus this, kept"], written["condensed minus this, kept 95% CI"]
    return [
        transform_row("translation alone", "translation"),
        transform_row("question + translation (union)", "question + translation (union)"),
        transform_row("multi-query (question, translation, 2 wordings)",
                      "multi-query (question, translation, 2 wordings)"),
        transform_row("HyDE, passage in the other language", "HyDE (passage in the other language)"),
        transform_row("HyDE, passage in the question's language", "HyDE (passage in the question's language)"),
        transform_row("node groups (LLM summaries, keywords, QA pairs)", "node groups", node_group_indexing()),
        transform_row("multi-path (dense + BM25 + node groups)", "multi-path (dense + BM25 + node groups)",
                      node_group_indexing()),
        Row("query", "rewrite: condense a follow-up from the earlier turns", "the follow-up as written", "hit@1",
            condensed, bounds, f"1 LLM call; {chat['median s, follow-up (condense + answer)']:.1f} s per follow-up "
            f"answer vs {chat['median s, first turn']:.1f} s for a first turn",
            f"{n} two-turn conversations, no similarity cutoff", NOT_TUNED, "chat.json",
            elsewhere=f"the gold file kept above the app's cutoff: {interval(kept, kept_bounds)}", n=n),
        joined_row(),
    ]


def joined_row() -> Row:
    """Joining the follow-up to the previous question (no model call), the cheaper rewrite notebook 08 measures."""
    joined, bounds, n = condense_pair("joined to the first question")
    kept, kept_bounds, _ = condense_pair("joined to the first question", "kept above the cutoff")
    versus = pick(results("chat")["retrieval"], query="joined to the first question")
    condensed = interval(versus["condensed minus this, kept"], versus["condensed minus this, kept 95% CI"])
    return Row("query", "rewrite: join the follow-up to the previous question (no model call)",
               "the follow-up as written", "hit@1", joined, bounds, "0 LLM calls",
               f"{n} two-turn conversations, no similarity cutoff", NOT_TUNED, "chat.json",
               elsewhere=f"the gold file kept above the app's cutoff: {interval(kept, kept_bounds)}; condensed minus "
               f"joined, kept: {condensed}", n=n)


def evidence(pair: dict) -> str:
    """`evidence -.09 [-.13, -.05]`: the paired difference in how often the answer's passage was found."""
    text = interval(pair["evidence diff"], pair["evidence diff ci"], 2)
    return f"evidence {text}" if text != "no question changed" else "evidence the same on every question"


def paired_answer_row(technique: str, comparison: str, baseline: str, tuned: str, elsewhere: str = "",
                      split_setting: str = "split setting") -> Row:
    """An answer pipeline against plain RAG on the local setting (answers.json's paired table), F1 then evidence,
    then the split setting (half of the paragraphs only in the offline web corpus)."""
    local, split = answers_paired(comparison), answers_paired(comparison, "split")
    pipeline = comparison.split(" - ")[0]
    split_text = f"{split_setting}: {interval(split['F1 diff'], split['F1 diff ci'], 2)}"
    return Row("answer", technique, baseline, "F1", local["F1 diff"], tuple(local["F1 diff ci"]),
               answer_cost(pipeline), f"{local['n']} CMRC trial questions, every context indexed", tuned,
               "answers.json", 2, joined(elsewhere, split_text), also=evidence(local))


def web_route_rows() -> list[Row]:
    """The split setting (half of the contexts only on the web): plain RAG given a web fallback, and CRAG against it."""
    fallback, graded = (answers_paired(c, "split") for c in ("rag_web_extractive - rag_extractive",
                                                             "crag_extractive - rag_web_extractive"))
    return [
        Row("answer", "web fallback: search the web when no passage passes the cutoff", "plain RAG (no web route)",
            "F1", fallback["F1 diff"], tuple(fallback["F1 diff ci"]),
            answer_cost("rag_web_extractive", "split", "rag_extractive"),
            f"{fallback['n']} CMRC trial questions, half of the contexts only on the web (split setting)", CUTOFF_ONLY,
            "answers.json", 2, also=evidence(fallback)),
        Row("answer", "Corrective RAG where half the contexts are only on the web", "plain RAG + web fallback", "F1",
            graded["F1 diff"], tuple(graded["F1 diff ci"]),
            answer_cost("crag_extractive", "split", "rag_web_extractive"),
            f"{graded['n']} CMRC trial questions, split setting", crag_tuned(),
            "answers.json", 2, also=evidence(graded)),
    ]


def answer_rows() -> list[Row]:
    """Answer pipelines on CMRC (answers.json and its per-question rows), two-hop questions and the agent."""
    rag, rag_bounds, n = answer_pair("local", "rag_extractive", "llm_only")
    extractive = answers_paired("rag_extractive - rag")
    graded = answers_paired("crag_extractive - rag_web_extractive", "split")
    gold = answers_paired("gold - rag_extractive")
    hop = multihop_pair("judge_extractive")
    bridge = multihop_pair("bridge")
    agent, agent_bounds, agent_n = agent_pair()
    unseen, unseen_bounds, unseen_n = agent_pair(held_out=True)
    server, server_bounds, _ = agent_pair("qwen-local")
    agent_s = results("agent")["local"]["compare"]["summary"]
    extractive_s, generated_s = matched_medians("local", "rag_extractive", "rag")
    return [
        Row("answer", "plain RAG: hybrid retrieval, k=3, extractive answer", "the model alone (no retrieval)", "F1",
            rag, rag_bounds, answer_cost("rag_extractive"), f"{n} CMRC trial questions, every context indexed",
            CUTOFF_ONLY, "answers_runs/local.jsonl", 2),
        Row("answer", "extractive answers (copy a span, verify, cite)", "generated answers (plain RAG)", "F1",
            extractive["F1 diff"], tuple(extractive["F1 diff ci"]),
            f"{calls(summary_row('rag')['LLM calls'], 1)}, {extractive_s:.1f} vs {generated_s:.1f} s/answer "
            "(the same questions)",
            f"{extractive['n']} CMRC trial questions", NOT_TUNED, "answers.json", 2),
        paired_answer_row("Corrective RAG (grade, rewrite, web search)", "crag_extractive - rag_extractive",
                          "plain RAG", crag_tuned(), "split setting, against plain RAG "
                          f"with a web fallback: {interval(graded['F1 diff'], graded['F1 diff ci'], 2)}",
                          split_setting="split setting, against plain RAG with no web route"),
        *web_route_rows(),
        paired_answer_row("RAG with a judge (follow-up searches)", "judge_extractive - rag_extractive", "plain RAG",
                          NOT_TUNED, f"{hop['n']} held-out two-hop questions: "
                          f"{interval(hop['F1 diff'], hop['F1 diff ci'], 2)}"),
        Row("answer", "two-hop bridge (copy the bridge, search it, read the union)", "plain RAG", "F1",
            bridge["F1 diff"], tuple(bridge["F1 diff ci"]), multihop_cost("bridge"),
            f"{bridge['n']} held-out two-hop questions (data/docs + data/web)",
            "search depth, read rule and options chosen on the tune half", "multihop_held_out.json", 2,
            n=bridge["n"], also=evidence(bridge)),
        Row("answer", "gold context (the bound: perfect retrieval)", "plain RAG", "F1", gold["F1 diff"],
            tuple(gold["F1 diff ci"]), answer_cost("gold"), f"{gold['n']} CMRC trial questions", NOT_TUNED,
            "answers.json", 2),
        Row("answer", "tool-calling agent (create_agent, constrained steps)", "Corrective RAG", "answer holds gold",
            agent, agent_bounds, f"{agent_s['agent']['mean_llm_calls']:.2f} vs {agent_s['crag']['mean_llm_calls']:.2f} "
            f"LLM calls; {agent_s['agent']['median_s']:.1f} vs {agent_s['crag']['median_s']:.1f} s/answer",
            f"{agent_n} course questions (docs, web, none)",
            "Corrective RAG's cutoff was calibrated on the documents questions (notebook 10)", "agent.json", 2,
            f"the {unseen_n} questions Corrective RAG was not tuned on ({agent_held_out_kinds()}): "
            f"{interval(unseen, unseen_bounds, 2)}; "
            f"through the server (all {agent_n}): {interval(server, server_bounds, 2)}",
            note=f"at 1-minute load {results('agent')['local']['load_at_start'][0]:.1f} (agent.json)"),
    ]


def leaderboard() -> list[Row]:
    """Every technique of the course, family by family."""
    return search_rows() + structure_rows() + query_rows() + answer_rows()


LEADERBOARD_HEADER = ["technique", "replaces", "metric", "difference [95% CI]", "cost", "measured on",
                      "tuned on / held out", "JSON"]


def leaderboard_table(rows: list[Row] | None = None) -> str:
    """The leaderboard as a markdown table."""
    rows = leaderboard() if rows is None else rows
    return table(LEADERBOARD_HEADER, [[r.technique, r.baseline, r.metric, r.quality(), r.cost_cell, r.data, r.tuning,
                                       f"`{r.source}`"] for r in rows])


SUMMARY = ("hybrid RRF (dense + BM25)", "parent-child (120-char children, whole context)",
           "per-context fusion (five searches)", "question + translation (union)",
           "HyDE, passage in the question's language", "plain RAG: hybrid retrieval, k=3, extractive answer",
           "Corrective RAG (grade, rewrite, web search)", "Corrective RAG where half the contexts are only on the web",
           "RAG with a judge (follow-up searches)",
           "two-hop bridge (copy the bridge, search it, read the union)",
           "tool-calling agent (create_agent, constrained steps)")


def summary_table() -> str:
    """The README's short table: a few leaderboard rows, quality and cost only."""
    rows = [r for r in leaderboard() if r.technique in SUMMARY]
    return "\n\n".join(part for part in [table(["technique", "replaces", "difference [95% CI]", "cost"], [
        [r.technique, r.baseline, f"{r.metric} {r.quality()}", r.cost_cell] for r in rows]), cost_notes(rows)] if part)

