"""Notebook display helpers that work offline: graph drawings, CRAG stream printing, notebook 09's grader plot,
notebook 03's HNSW drawing, recall curves and crossing plot."""

from __future__ import annotations

import io
import math
import re
import textwrap
from typing import TYPE_CHECKING, Any

import numpy as np
from IPython.display import Image, Markdown
from langchain_core.runnables.graph import Graph
from langgraph.graph import END, START
from langgraph.graph.state import CompiledStateGraph
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Ellipse, FancyArrowPatch, FancyBboxPatch
from matplotlib.path import Path
from matplotlib.textpath import TextPath
from matplotlib.ticker import ScalarFormatter

if TYPE_CHECKING:
    import pandas as pd

GAP, STEP_Y, BOX_H, INK = 0.35, 0.8, 0.34, "#3c5a99"  # inches between boxes, between layers; box height; colour
HANDLER = "__error_handler__"  # LangGraph's name prefix for a node's error_handler, which it draws with no edges


def mermaid(graph: CompiledStateGraph, xray: bool = False) -> Markdown:
    """The graph as a Mermaid diagram in Markdown: JupyterLab (>= 4.1) draws it with no web service."""
    return Markdown(f"```mermaid\n{graph.get_graph(xray=xray).draw_mermaid()}\n```")


def drawing(graph: CompiledStateGraph, xray: bool = False) -> Graph:
    """`graph.get_graph()` with each node's error handler wired in: a dashed "error" edge from the node to its handler,
    and from the handler to where the node goes on (the course's handlers answer with Command(goto=that node))."""
    drawn = graph.get_graph(xray=xray)
    for handler in [n for n in drawn.nodes if n.startswith(HANDLER)]:
        guarded = handler.removeprefix(HANDLER)
        onward = [e.target for e in drawn.edges if e.source == guarded]
        drawn.add_edge(drawn.nodes[guarded], drawn.nodes[handler], "error", conditional=True)
        for target in onward:
            drawn.add_edge(drawn.nodes[handler], drawn.nodes[target], conditional=True)
    return drawn


def back_edges(graph: Graph) -> set[tuple[str, str]]:
    """The edges that close a loop in a depth-first walk from __start__: without them the graph can be layered."""
    children = {n: [e.target for e in graph.edges if e.source == n] for n in graph.nodes}
    on_path: dict[str, bool] = {}  # True while the walk is below the node, False once it is finished
    back: set[tuple[str, str]] = set()

    def walk(node: str) -> None:
        on_path[node] = True
        for child in children[node]:
            if on_path.get(child):
                back.add((node, child))
            elif child not in on_path:
                walk(child)
        on_path[node] = False

    for node in sorted(graph.nodes, key=lambda n: n != START):  # __start__ first, then nodes it cannot reach
        if node not in on_path:
            walk(node)
    return back


def layers(graph: Graph, back: set[tuple[str, str]]) -> tuple[list[list[str]], dict[int, list[str]]]:
    """Nodes by layer (longest forward path from __start__, __end__ last) plus a waypoint in every layer an edge
    skips, so no edge crosses a box; each layer is ordered under its parents to keep crossings few."""
    depth = dict.fromkeys(graph.nodes, 0)
    forward = [(i, e.source, e.target) for i, e in enumerate(graph.edges) if (e.source, e.target) not in back]
    for _ in graph.nodes:
        for _, source, target in forward:
            depth[target] = max(depth[target], depth[source] + 1)
    if END in depth:
        depth[END] = max((d for n, d in depth.items() if n != END), default=-1) + 1
    waypoints = {i: [f"\0{i}:{d}" for d in range(depth[s] + 1, depth[t])] for i, s, t in forward}
    parents: dict[str, list[str]] = {}
    for i, source, target in forward:
        chain = [source, *waypoints[i], target]
        for above, below in zip(chain, chain[1:]):
            parents.setdefault(below, []).append(above)
        depth.update({w: depth[source] + 1 + k for k, w in enumerate(waypoints[i])})
    rows: list[list[str]] = []
    column: dict[str, float] = {}
    for level in range(max(depth.values()) + 1):
        def under_parents(node: str) -> float:
            placed = [column[p] for p in parents.get(node, []) if p in column]
            return sum(placed) / len(placed) if placed else 0.0

        rows.append(sorted((n for n in depth if depth[n] == level), key=under_parents))
        column.update({n: i - (len(rows[-1]) - 1) / 2 for i, n in enumerate(rows[-1])})
    return rows, waypoints


def smooth(points: list[tuple[float, float]]) -> Path:
    """A path from the first point to the last that rounds the corner at every point between (quadratic B-spline)."""
    vertices, codes = [points[0]], [Path.MOVETO]
    for a, b, c in zip(points, points[1:], points[2:]):
        vertices += [((a[0] + b[0]) / 2, (a[1] + b[1]) / 2), b, ((b[0] + c[0]) / 2, (b[1] + c[1]) / 2)]
        codes += [Path.LINETO, Path.CURVE3, Path.CURVE3]
    return Path([*vertices, points[-1]], [*codes, Path.LINETO])


def graph_png(graph: CompiledStateGraph, xray: bool = False) -> Image:
    """The graph drawn with matplotlib as a PNG: offline, and every notebook viewer shows it (Mermaid needs one)."""
    drawn = drawing(graph, xray)
    back = back_edges(drawn)
    rows, waypoints = layers(drawn, back)
    label = {n: {START: "start", END: "end"}.get(n, n.replace(HANDLER, "on error: ")) for n in drawn.nodes}
    font = {n: 8 if n in (START, END) else 10 for n in drawn.nodes}
    width = {n: TextPath((0, 0), label[n], size=font[n]).get_extents().width / 72 + 0.3 for n in drawn.nodes}
    width.update({w: 0.1 for chain in waypoints.values() for w in chain})
    where: dict[str, tuple[float, float]] = {}
    for level, row in enumerate(rows):
        left = -(sum(width[n] for n in row) + GAP * (len(row) - 1)) / 2
        for node in row:
            where[node], left = (left + width[node] / 2, -level * STEP_Y), left + width[node] + GAP
    right = [max(where[n][0] + width[n] / 2 for n in row) for row in rows]  # each layer's right edge
    layer_of = {n: i for i, row in enumerate(rows) for n in row}
    x0, x1 = min(where[n][0] - width[n] / 2 for n in where) - 0.3, max(right) + 0.4 + 0.15 * len(back)
    figure = Figure(figsize=(x1 - x0, len(rows) * STEP_Y), dpi=100)  # one data unit = one inch
    FigureCanvasAgg(figure)
    axes = figure.add_axes((0, 0, 1, 1), xlim=(x0, x1), ylim=((0.5 - len(rows)) * STEP_Y, 0.5 * STEP_Y))
    axes.set_axis_off()
    for i, edge in enumerate(drawn.edges):
        (xs, ys), (xt, yt) = where[edge.source], where[edge.target]
        if (edge.source, edge.target) in back:  # out below, up a lane right of every box it passes, in on top
            k = sorted(back).index((edge.source, edge.target))  # its own lane and entry point
            lane, gap = max(right[layer_of[edge.target]:layer_of[edge.source] + 1]) + 0.25 + 0.15 * k, 0.08 + 0.05 * k
            xs, xt = xs + width[edge.source] / 4 + 0.12 * k, xt + width[edge.target] / 4 + 0.12 * k
            low, high = ys - BOX_H / 2 - gap, yt + BOX_H / 2 + gap
            points = [(xs, low + gap), (xs, low), (lane, low), (lane, high), (xt, high), (xt, high - gap)]
            path, mid = Path(points), (lane, (ys + yt) / 2)
        else:  # down from the bottom of one box, through the waypoints, to the top of the other
            points = [(xs, ys - BOX_H / 2), *(where[w] for w in waypoints[i]), (xt, yt + BOX_H / 2)]
            path, mid = smooth(points), ((points[0][0] + points[1][0]) / 2, (points[0][1] + points[1][1]) / 2)
        axes.add_patch(FancyArrowPatch(path=path, arrowstyle="-|>", mutation_scale=12, color=INK, lw=1.2,
                                       linestyle="--" if edge.conditional else "-"))
        if edge.data:
            axes.text(*mid, str(edge.data), ha="center", va="center", fontsize=8, color=INK, zorder=3,
                      bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none"})
    for node in drawn.nodes:
        (x, y), w = where[node], width[node]
        axes.add_patch(Ellipse((x, y), w, BOX_H, fc="#eeeeee", ec=INK) if node in (START, END) else
                       FancyBboxPatch((x - w / 2, y - BOX_H / 2), w, BOX_H, "round,pad=0,rounding_size=0.08",
                                      fc="#e6edfa", ec=INK))
        axes.text(x, y, label[node], ha="center", va="center", fontsize=font[node], zorder=3)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return Image(data=buffer.getvalue(), format="png")


def show_crag_node(node: str, update: dict) -> None:
    """Print what one CRAG node returned, a few lines (passages, grades, web query, pages, kept strips, answer)."""
    if node == "retrieve":
        for d in update["documents"]:
            print(f"    {d.metadata['similarity']:.3f}  {d.metadata['source']} chunk {d.metadata['chunk_index']}")
    elif node == "grade_documents":
        for g in update["grades"]:
            how = g["decided_by"]
            if how == "llm":
                found = ", found in the passage" if g["relevant"] else ", NOT in the passage"
                how = f"LLM copied {g['copied']!r}{found}"
            print(f"    {'keep' if g['relevant'] else 'drop'}  {g['similarity']:.3f}  by {how}")
        print(f"    action: {update['action']}")
    elif node == "rewrite_query":
        print(f"    web query: {update['web_query']!r}")
    elif node == "web_search":
        for d in update["web_results"]:
            print(f"    BM25 {d.metadata['score']:5.2f}  {d.metadata['title'][:45]}  {d.metadata['url']}")
    elif node == "refine_knowledge":
        for s in update["strips"]:
            if s["kept"]:
                print(f"    keep strip, score {s['score']:.2f} ({s['origin']}): {s['text'][:90]}")
    elif node in ("generate", "refuse"):
        print(textwrap.indent(update["answer"], "    "))
    for note in update.get("notes", []):
        print(f"    note: {note}")


def show_crag_update(chunk: dict) -> list[str]:
    """Print one `stream_mode="updates"` chunk of the CRAG graph, node by node; returns the nodes that ran."""
    ran = []
    for node, update in chunk.items():
        if node == "__metadata__":  # LangGraph's mark on an update served by the node's cache
            print(f"    from the cache: {update['cached']} (the node did not run)")
        elif node != "approve_web":  # approve_web passes straight through unless the context asks first
            print(f"-> {node}")
            show_crag_node(node, update or {})
            ran.append(node)
    return ran


def numbered_sources(state: dict) -> None:
    """The knowledge a CRAG answer read, numbered as in its prompt, so [1], [2] in the answer can be looked up."""
    for i, doc in enumerate(state.get("knowledge", []), 1):
        print(f"    [{i}] {doc.metadata['source']} ({doc.metadata['origin']})")


GRADER_LABELS = {"naive_yes_no": "naive\nyes/no", "copy_and_verify": "copy and\nverify",
                 "similarity_only": "similarity\nonly", "similarity_band_then_copy": "band, then\ncopy (graph)"}


def plot_grader(passages: list[dict], lower: float, upper: float) -> Image:
    """Notebook 09's grader plot as a PNG, from the labelled passages of bench_results/answers.json (each with
    "label", "similarity" and one boolean per GRADER_LABELS key): left, the share of answer-bearing passages each
    grader kept and of off-topic ones it dropped; right, each passage's cosine, what copy-and-verify said, and the
    band [lower, upper) where the graph asks the model."""
    figure = Figure(figsize=(11, 3.2))
    FigureCanvasAgg(figure)
    bars, dots = figure.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.4]})
    keep = [p for p in passages if p["label"]]
    off = [p for p in passages if not p["label"]]
    x = range(len(GRADER_LABELS))
    bars.bar([i - 0.2 for i in x], [sum(p[k] for p in keep) / len(keep) for k in GRADER_LABELS], 0.4,
             label="answer-bearing kept")
    bars.bar([i + 0.2 for i in x], [sum(not p[k] for p in off) / len(off) for k in GRADER_LABELS], 0.4,
             label="off-topic dropped")
    bars.set_xticks(list(x), list(GRADER_LABELS.values()), fontsize=8)
    bars.set_ylim(0, 1.15)
    bars.set_ylabel("share of passages")
    bars.legend(fontsize=8, loc="upper left", ncol=2)
    bars.set_title(f"{len(keep)} answer-bearing and {len(off)} off-topic passages", fontsize=9)
    for label, y, colour in [(True, 1, "tab:blue"), (False, 0, "tab:red")]:
        group = [p for p in passages if p["label"] == label]
        name = "answer-bearing" if label else "off-topic"
        for copied, shift, marker, said in [(True, 0.08, "o", "kept"), (False, -0.08, "x", "dropped")]:
            similarities = [p["similarity"] for p in group if p["copy_and_verify"] == copied]
            if similarities:
                dots.scatter(similarities, [y + shift] * len(similarities), marker=marker, color=colour,
                             label=f"{name}, copy {said}")
    dots.axvspan(lower, upper, color="gray", alpha=0.15)
    dots.text((lower + upper) / 2, 1.42, "LLM band", ha="center", fontsize=8)
    dots.set_yticks([0, 1], ["off-topic", "answer-\nbearing"])
    dots.set_ylim(-0.5, 1.6)
    dots.set_xlabel("cosine similarity of the passage to the question (e5)")
    dots.legend(fontsize=7, loc="upper left")
    dots.set_title("each passage, and what copy-and-verify said", fontsize=9)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return Image(data=buffer.getvalue(), format="png")


def png(figure: Figure) -> Image:
    """A finished matplotlib figure as PNG bytes without a version stamp, so the same plot gives the same file."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return Image(data=buffer.getvalue(), format="png")


def draw_hnsw_layers() -> Image:
    """Notebook 03's HNSW drawing as a PNG: three layers over eight vectors A-H (every vector on layer 0, fewer on
    each layer above) and a search for a query near G that hops along a layer, then descends."""
    layers_of = {2: ["A", "F"], 1: ["A", "C", "F", "H"], 0: list("ABCDEFGH")}
    links = {2: [("A", "F")], 1: [("A", "C"), ("C", "F"), ("F", "H")],
             0: [(a, b) for a, b in zip("ABCDEFG", "BCDEFGH")] + [("B", "E"), ("D", "G")]}
    x = {name: i for i, name in enumerate("ABCDEFGH")}
    figure = Figure(figsize=(8, 3))
    FigureCanvasAgg(figure)
    ax = figure.subplots()
    t = np.linspace(0, 1, 30)
    for level, names in layers_of.items():
        for a, b in links[level]:
            bend = 0.3 * np.sin(np.pi * t) if level == 0 and abs(x[a] - x[b]) > 1 else 0 * t  # long links arc over
            ax.plot(x[a] + (x[b] - x[a]) * t, level + bend, color="gray", zorder=1)
        ax.scatter([x[n] for n in names], [level] * len(names), s=350, color="white", edgecolor="tab:orange",
                   zorder=2)
        for n in names:
            ax.text(x[n], level, n, ha="center", va="center", zorder=3)
    path = [("A", 2), ("F", 2), ("F", 1), ("H", 1), ("H", 0), ("G", 0)]  # hop, descend, hop, ...
    for (a, la), (b, lb) in zip(path, path[1:]):
        down = lb < la
        ax.annotate("", (x[b], lb + (0.2 if down else -0.25)), (x[a], la - (0.2 if down else 0.25)),
                    arrowprops={"arrowstyle": "->", "color": "tab:blue", "linestyle": "--" if down else "-",
                                "lw": 1.5})
    ax.set_yticks([0, 1, 2], ["layer 0: every vector,\nup to 2·M links,\nbeam of ef", "layer 1",
                              "layer 2:\nfew vectors"])
    ax.set_xticks([])
    ax.set_xlim(-0.6, 7.6)
    ax.set_ylim(-0.5, 2.5)
    for side in ("top", "right", "bottom"):
        ax.spines[side].set_visible(False)
    ax.set_title("HNSW: a search for a query near G (blue) hops on a layer, then descends (dashed)", fontsize=9)
    figure.tight_layout()
    return png(figure)


# Recall curves: a build keeps one look in every panel. Each index family has a colour map (oranges for the HNSW
# graphs, blues for IVF), and a build's shade and marker follow its size, `M` or `nlist`: darker and a later marker
# as it grows. The 8-bit variants are dashed over their float32 twin; Lite's default graph is grey and dotted.
FAMILY_STYLES = {"HNSW": ("Oranges", "-"), "HNSW_SQ": ("Oranges", "--"), "IVF_FLAT": ("Blues", "-"),
                 "IVF_SQ8": ("Blues", "--"), "HNSW, params dropped": (None, ":")}
SIZE_STEPS = {"M": (4, 2), "nlist": (16, 4)}  # (smallest value, factor per step): M 4, 8, 16, 32; nlist 16, 64, 256
BUILD_MARKERS = ["v", "s", "o", "D", "p"]
KNOB_TICKS = [1, 2, 4, 8, 16, 32, 64, 160, 320, 640]


def build_size(build: str) -> tuple[str, int] | None:
    """("M", 16) for "M=16 efC=64", ("nlist", 64) for "nlist=64"; None for a build named otherwise."""
    match = re.search(r"\b(M|nlist)=(\d+)", build)
    return (match[1], int(match[2])) if match else None


def build_style(family: str, build: str) -> dict[str, Any]:
    """Colour, line style and marker of one build's recall curve: the same in every panel (KeyError for a family the
    course does not build)."""
    colour_map, line = FAMILY_STYLES[family]
    size = build_size(build)
    if colour_map is None or size is None:
        return {"color": "tab:gray", "linestyle": line, "marker": "x"}
    smallest, factor = SIZE_STEPS[size[0]]
    step = min(max(0, round(math.log(size[1] / smallest, factor))), len(BUILD_MARKERS) - 1)
    shade = colormaps[colour_map](min(0.4 + 0.2 * step, 1.0))
    return {"color": shade, "linestyle": line, "marker": BUILD_MARKERS[step]}


def plot_recall_curves(panels: list[tuple[str, pd.DataFrame]]) -> Image:
    """Notebook 03's recall curves as a PNG, one panel per (title, settings) pair: recall@10 against the search
    knob (`ef` or `nprobe`, log axis, over the range the panel measured), one curve per build, styled by
    `build_style` so a build looks the same in every panel. Each settings frame has the columns "index", "build",
    "knob" and "recall@10"; FLAT rows have no knob and are left out."""
    figure = Figure(figsize=(10, 4 * len(panels)))
    FigureCanvasAgg(figure)
    families = list(FAMILY_STYLES)
    for ax, (title, settings) in zip(figure.subplots(len(panels), 1, squeeze=False)[:, 0], panels):
        curves = settings.dropna(subset=["knob"])
        builds = curves.groupby(["index", "build"], sort=False)
        order = sorted(builds.groups, key=lambda key: (families.index(key[0]) if key[0] in families else len(families),
                                                       (build_size(key[1]) or ("", 0))[1]))
        for family, build in order:
            curve = builds.get_group((family, build)).sort_values("knob")
            ax.plot(curve["knob"], curve["recall@10"], markersize=4, label=f"{family} {build}".strip(),
                    **build_style(family, build))
        low, high = float(curves["knob"].min()), float(curves["knob"].max())
        ax.set_xscale("log")
        ax.set_xlim(low / 1.3, high * 1.3)
        ax.set_xticks([t for t in sorted({*KNOB_TICKS, low, high}) if low <= t <= high])
        ax.minorticks_off()
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.set_xlabel("search knob: ef (HNSW) or nprobe (IVF)")
        ax.set_ylabel("recall@10 vs FLAT")
        ax.set_title(title)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    figure.tight_layout()
    return png(figure)


def plot_crossing(table: pd.DataFrame, exact_scan: pd.DataFrame, crossing: dict[str, Any]) -> Image:
    """Notebook 03's crossing plot as a PNG: FLAT's and the chosen HNSW's cost per query against the collection
    size (log-log), Milvus Lite solid and faiss dashed, the numpy scan dotted, and a band where Lite's HNSW becomes
    the cheaper one. Left, CPU ms per query batched; right, wall-clock ms of one query per call. `table` has one row
    per "engine" and "vectors" with the columns "FLAT CPU ms/q", "HNSW CPU ms/q", "FLAT single ms" and "HNSW single
    ms"; `exact_scan` is indexed by "vectors" with "cpu_ms_per_query" and "p50_single_ms"; `crossing` is
    bench_results/crossing.json ("crossings", "floor", "margin")."""
    figure = Figure(figsize=(13, 4.4))
    FigureCanvasAgg(figure)
    axes = figure.subplots(1, 2)
    panels = [("cpu_ms_per_query", "CPU ms/q", "CPU ms per query (25 per call)"),
              ("p50_single_ms", "single ms", "p50 wall-clock ms, one query per call")]
    for ax, (metric, key, label) in zip(axes, panels):
        for engine, style in (("Milvus Lite", "-"), ("faiss", "--")):
            part = table[table["engine"] == engine].set_index("vectors")
            ax.plot(part.index, part[f"FLAT {key}"], style + "*", color="black", label=f"{engine} FLAT")
            ax.plot(part.index, part[f"HNSW {key}"], style + "o", color="tab:orange",
                    label=f"{engine} HNSW (recall >= {crossing['floor']})")
        ax.plot(exact_scan.index, exact_scan[metric], ":", color="gray", label="numpy exact scan")
        crossing_at = next(c["HNSW cheaper from"] for c in crossing["crossings"]
                           if c["engine"] == "Milvus Lite" and c["metric"] == metric)
        ax.axvline(crossing_at, color="tab:orange", alpha=0.3, lw=6,
                   label=f"Lite: HNSW >= {crossing['margin']}x cheaper from here")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("vectors in the collection")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3, which="both")
    axes[1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    figure.tight_layout()
    return png(figure)
