"""rag_lib.experiments.display: the Mermaid text and the matplotlib PNG of a LangGraph graph, drawn offline.

The agent test builds the agent on a FAKE chat model (langchain_core's GenericFakeChatModel) with a fake tool:
drawing a graph never calls the model, so the real one is not needed. Every other graph is the course's own."""

from __future__ import annotations

import io
import socket
from typing import TypedDict

import pandas as pd
import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.tools import StructuredTool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from matplotlib.image import imread

from rag_lib.agent import build_agent
from rag_lib.app.router import build_router_graph
from rag_lib.experiments.display import (
    STEP_Y,
    back_edges,
    draw_hnsw_layers,
    graph_png,
    layers,
    mermaid,
    plot_crossing,
    plot_grader,
    plot_recall_curves,
    show_crag_update,
)
from rag_lib.experiments.display import drawing as display_drawing
from rag_lib.graphs.crag import build_crag_graph
from rag_lib.graphs.judge import build_judge_graph
from rag_lib.graphs.rag import build_rag_graph

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class State(TypedDict, total=False):
    tries: int


def chain(length: int) -> CompiledStateGraph:
    """start -> n0 -> n1 -> ... -> end."""
    builder = StateGraph(State)
    names = [f"n{i}" for i in range(length)]
    for name in names:
        builder.add_node(name, lambda state: {})
    for source, target in zip([START, *names], [*names, END]):
        builder.add_edge(source, target)
    return builder.compile()


def retry_loop(conditional: bool = True, labels: bool = True) -> CompiledStateGraph:
    """retrieve -> grade -> (good) generate | (bad) rewrite -> retrieve: a loop back to an earlier node."""
    builder = StateGraph(State)
    for name in ("retrieve", "grade", "rewrite", "generate"):
        builder.add_node(name, lambda state: {})
    builder.add_edge(START, "retrieve")
    builder.add_edge("retrieve", "grade")
    if conditional:
        path_map = {"good": "generate", "bad": "rewrite"} if labels else ["generate", "rewrite"]
        builder.add_conditional_edges("grade", lambda state: "generate", path_map)
    else:
        builder.add_edge("grade", "generate")
        builder.add_edge("grade", "rewrite")
    builder.add_edge("rewrite", "retrieve")
    builder.add_edge("generate", END)
    return builder.compile()


def fake_agent() -> CompiledStateGraph:
    """The course's agent on a FAKE chat model and a fake tool (neither is called: the graph is only drawn)."""

    def search_docs(query: str) -> str:
        """Search the documentation."""
        return "No results."

    return build_agent(GenericFakeChatModel(messages=iter([])), [StructuredTool.from_function(search_docs)])


def pixels(graph: CompiledStateGraph, xray: bool = False):
    return imread(io.BytesIO(graph_png(graph, xray=xray).data), format="png")


def test_mermaid_is_a_markdown_code_block_with_every_edge():
    text = mermaid(retry_loop()).data
    assert text.startswith("```mermaid\n") and text.endswith("\n```")
    assert "rewrite --> retrieve" in text and "grade -. &nbsp;bad&nbsp; .-> rewrite" in text


def test_graph_png_is_a_png_that_decodes_to_rgba_pixels():
    image = graph_png(retry_loop())
    assert image.format == "png" and image.data.startswith(PNG_SIGNATURE)
    array = pixels(retry_loop())
    height, width, channels = array.shape
    assert channels in (3, 4)
    assert height == round(5 * STEP_Y * 100)  # 5 layers: start, retrieve, grade, rewrite|generate, end; 100 dpi
    assert 150 <= width <= 600
    assert array.min() < 0.5 < array.max()  # dark ink on a light background, not a blank image


def test_same_graph_gives_byte_identical_png():
    first, second = graph_png(build_crag_graph()).data, graph_png(build_crag_graph()).data
    assert first == second
    assert b"Software" not in first and b"matplotlib" not in first  # no version stamp in the file


def test_a_loop_is_a_back_edge_and_the_rest_are_layered_by_longest_path():
    drawing = retry_loop().get_graph()
    back = back_edges(drawing)
    assert back == {("rewrite", "retrieve")}
    rows, waypoints = layers(drawing, back)
    assert rows == [[START], ["retrieve"], ["grade"], ["rewrite", "generate"], [END]]
    assert all(chain == [] for chain in waypoints.values())  # no edge skips a layer
    assert pixels(retry_loop()).shape[0] > 0


def test_an_edge_that_skips_layers_gets_one_waypoint_per_skipped_layer():
    drawing = display_drawing(build_crag_graph())
    rows, waypoints = layers(drawing, back_edges(drawing))
    level = {node: i for i, row in enumerate(rows) for node in row}
    assert rows[0] == [START] and rows[-1] == [END]
    for i, edge in enumerate(drawing.edges):
        skipped = level[edge.target] - level[edge.source] - 1
        assert len(waypoints.get(i, [])) == max(skipped, 0)
    assert level["refine_knowledge"] > level["web_search"] > level["approve_web"] > level["grade_documents"]
    # the error handler LangGraph draws unconnected sits between the node it guards and where the run goes on
    assert level["refine_knowledge"] > level["__error_handler__web_search"] > level["web_search"]


def test_taller_graphs_give_taller_images():
    short, tall = pixels(chain(2)), pixels(chain(6))
    assert tall.shape[0] > short.shape[0]
    assert tall.shape[0] - short.shape[0] == round(4 * STEP_Y * 100)  # one layer more per node


def test_dashes_and_labels_change_the_drawing():
    plain, dashed, labelled = (graph_png(retry_loop(conditional=False)).data,
                               graph_png(retry_loop(labels=False)).data, graph_png(retry_loop()).data)
    assert len({plain, dashed, labelled}) == 3


def test_drawing_needs_no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("no network in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    assert graph_png(build_router_graph()).data.startswith(PNG_SIGNATURE)


def test_xray_draws_a_subgraph_as_its_flattened_nodes():
    inner = StateGraph(State)
    inner.add_node("decide", lambda state: {})
    inner.add_edge(START, "decide")
    inner.add_edge("decide", END)
    builder = StateGraph(State)
    builder.add_node("grade", inner.compile())
    builder.add_edge(START, "grade")
    builder.add_edge("grade", END)
    graph = builder.compile()
    drawing = graph.get_graph(xray=True)
    assert layers(drawing, back_edges(drawing))[0] == [[START], ["grade:decide"], [END]]
    assert graph_png(graph, xray=True).data != graph_png(graph).data


@pytest.mark.parametrize("build", [build_rag_graph, build_crag_graph, build_router_graph, build_judge_graph,
                                   fake_agent])
def test_every_course_graph_draws(build):
    graph = build()
    for xray in (False, True):
        array = pixels(graph, xray=xray)
        assert array.ndim == 3 and array.shape[2] in (3, 4)
        assert 200 <= array.shape[0] <= 1500 and 150 <= array.shape[1] <= 1500


def test_the_agent_loops_are_drawn_as_back_edges():
    drawing = fake_agent().get_graph()
    # every turn of the loop passes the model call limit (ModelCallLimitMiddleware) before the model
    limit = "ModelCallLimitMiddleware.before_model"
    assert back_edges(drawing) == {("ModelCallLimitMiddleware.after_model", limit), ("tools", limit)}
    rows, _ = layers(drawing, back_edges(drawing))
    # the first step of a run (FreshQuestion) clears what the thread's last question searched, then the loop
    assert rows[:3] == [[START], ["FreshQuestion.before_agent"], [limit]] and rows[3][0] == "model"
    assert "tools" in rows[5]
    assert rows[-1] == [END]


def test_a_crag_update_prints_each_node_and_returns_the_nodes_that_ran(capsys) -> None:
    chunk = {"rewrite_query": {"web_query": "Gradio port", "notes": ["rewrote"]}, "approve_web": None,
             "__metadata__": {"cached": True}}
    assert show_crag_update(chunk) == ["rewrite_query"]  # approve_web passes through, the cache mark is no node
    assert capsys.readouterr().out.splitlines() == [
        "-> rewrite_query", "    web query: 'Gradio port'", "    note: rewrote",
        "    from the cache: True (the node did not run)"]


def test_the_grader_plot_is_a_png_and_needs_every_grader_column() -> None:
    passages = [{"label": label, "similarity": s, "naive_yes_no": True, "copy_and_verify": label,
                 "similarity_only": s >= 0.86, "similarity_band_then_copy": label}
                for label, s in [(True, 0.93), (True, 0.87), (False, 0.88), (False, 0.80)]]
    image = plot_grader(passages, 0.86, 0.90)
    assert image.data.startswith(PNG_SIGNATURE)
    assert imread(io.BytesIO(image.data)).shape[:2] == (320, 1100)
    with pytest.raises(KeyError):
        plot_grader([{k: v for k, v in p.items() if k != "similarity_only"} for p in passages], 0.86, 0.90)


def test_the_hnsw_drawing_is_a_png() -> None:
    image = draw_hnsw_layers()
    assert image.data.startswith(PNG_SIGNATURE)
    assert imread(io.BytesIO(image.data)).shape[:2] == (300, 800)


def test_recall_curves_have_one_panel_per_data_set_and_need_a_known_index_family() -> None:
    settings = pd.DataFrame({"index": ["FLAT", "HNSW", "HNSW", "IVF_FLAT"],
                             "build": ["", "M=16 efC=64", "M=16 efC=64", "nlist=16"],
                             "knob": pd.array([None, 16, 64, 4], dtype="Int64"), "recall@10": [1.0, 0.9, 0.99, 0.87]})
    image = plot_recall_curves([("one", settings), ("two", settings)])
    assert image.data.startswith(PNG_SIGNATURE)
    assert imread(io.BytesIO(image.data)).shape[:2] == (800, 1000)
    with pytest.raises(KeyError):  # no colour for an index family the course does not build
        plot_recall_curves([("one", settings.assign(index="DISKANN"))])


def test_the_crossing_plot_is_a_png() -> None:
    table = pd.DataFrame([{"engine": engine, "vectors": n, "FLAT CPU ms/q": n / 1e3, "HNSW CPU ms/q": 1.0,
                           "FLAT single ms": n / 500, "HNSW single ms": 2.0}
                          for engine in ("Milvus Lite", "faiss") for n in (1_000, 10_000)])
    scan = pd.DataFrame({"cpu_ms_per_query": [0.1, 1.0], "p50_single_ms": [0.2, 2.0]},
                        index=pd.Index([1_000, 10_000], name="vectors"))
    crossing = {"floor": 0.99, "margin": 1.25,
                "crossings": [{"engine": "Milvus Lite", "metric": metric, "HNSW cheaper from": 10_000}
                              for metric in ("cpu_ms_per_query", "p50_single_ms")]}
    image = plot_crossing(table, scan, crossing)
    assert image.data.startswith(PNG_SIGNATURE)
    assert imread(io.BytesIO(image.data)).shape[:2] == (440, 1300)
