"""`make app` / `python -m rag_lib.app`: the course's RAG app in the browser (Gradio), on the router graph.

Left: upload .md / .txt / .pdf files (each is checked, stored in the upload folder and indexed; a refused file
changes nothing), the indexed files (read from Milvus, so the list survives restarts), chunking and retrieval
choices ("auto" lets the router read them from the request) and the evaluation switch. Right: the chat, with the
answer streamed token by token, then its sources, the retrieval used and the evaluation.

Conversation memory: the router graph runs with a SQLite checkpointer, one thread per browser. The thread id is kept
in the browser (gr.BrowserState, localStorage), so a page reload or an app restart reopens the same conversation
(its turns are read back with get_state); "New conversation" starts another thread. A follow-up question is
rewritten with the earlier turns before the search, and the answer sees them too (rag_lib.app.router).

Long-term memory: a fact the user states about themselves or their team ("My team uses Milvus 2.5.") is kept in a
LangGraph store (rag_lib.memory) and recalled, in any conversation, for the questions it is relevant to; the reply
says what was kept and what was recalled, and the left column lists every fact with where it came from and can
forget one. One user per app (LOCAL_USER): the app runs on the learner's machine, without logins.

Milvus: `rag_lib.store.connect("app")` (`.milvus/app.db`, or a server in MILVUS_URI), or --milvus-uri (a server or a
Lite path: pymilvus refuses a Lite path in MILVUS_URI at import time). Upload folder: `<project>/.uploads/`, or
RAG_UPLOAD_DIR / --upload-dir. Conversations: `.uploads.conversations.sqlite` beside the upload folder (git-ignored),
or --conversations; long-term memory: `.uploads.conversations.memories.sqlite` beside it. Host and port: --host /
--port (default 127.0.0.1:7860, or GRADIO_SERVER_PORT).
"""

from __future__ import annotations

import argparse
import secrets
import uuid
from collections.abc import Iterator
from contextlib import closing
from dataclasses import asdict
from pathlib import Path

import gradio as gr
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from pymilvus import MilvusClient

from rag_lib.app.router import RouterContext, build_router_graph, stream_request
from rag_lib.app.uploads import CHUNKINGS, UPLOAD_TYPES, indexed_documents, save_upload
from rag_lib.graphs.checkpoints import sqlite_checkpointer
from rag_lib.loaders import max_file_bytes
from rag_lib.memory import Memory, forget, memories, open_memory_store
from rag_lib.settings import settings
from rag_lib.store import DEFAULT_COLLECTION

FILE_COLUMNS = ["file", "chunks", "language", "chunking"]
START_HINT = (f"**Nothing is indexed yet.** Upload {', '.join(UPLOAD_TYPES)} files on the left, or write "
              "\"Save this note: ...\" in the chat; then ask a question. Answers cite the passages they use.")
RETRIEVAL_CHOICES = [
    ("auto (router reads the request)", "auto"),
    ("hybrid: dense + BM25, RRF", "hybrid"),
    ("dense", "dense"),
    ("keyword: BM25", "bm25"),
    ("HyDE (+1 LLM call)", "hyde"),
]
CHUNK_SIZES = ["auto", "200", "300", "500", "800"]
# shown when a node has finished, until the next one does (the answer's tokens replace them)
PROGRESS = {"route": "routed · working…", "save": "saved…", "retrieve": "reading the passages…",
            "answer": "evaluating…"}
STATUS_ICON = {"indexed": "✓", "updated": "✓", "duplicate": "⚠", "error": "✗"}  # in DejaVu Sans: no emoji font needed
THREAD_KEY = "rag-app-conversation"  # the browser's localStorage key for its conversation's thread id
MEMORY_COLUMNS = ["fact", "conversation", "told (UTC)", "message"]
LOCAL_USER = "local"  # the user whose long-term memory the app keeps


def default_upload_dir() -> Path:
    """RAG_UPLOAD_DIR, else `<project>/.uploads` (git-ignored)."""
    return settings().RAG_UPLOAD_DIR


def default_conversations(upload_dir: Path) -> Path:
    """The conversations' SQLite file, beside the upload folder: `.uploads` -> `.uploads.conversations.sqlite`."""
    return upload_dir.with_name(f"{upload_dir.name}.conversations.sqlite")


def default_memories(conversations: Path) -> Path:
    """The long-term memory's SQLite file, beside the conversations: `x.sqlite` -> `x.memories.sqlite`."""
    return conversations.with_name(f"{conversations.stem}.memories.sqlite")


def origin(memory: Memory) -> str:
    """Where a fact came from, in one line: its conversation (the thread id's start) and when it was told."""
    thread = f"conversation `{memory['thread_id'][:8]}`" if memory.get("thread_id") else "no conversation"
    return f"{thread} · {memory['saved_at'].replace('T', ' ')} UTC"


def browser_secret(conversations: Path) -> str:
    """The key the browser's thread id is encrypted with in localStorage, made once and kept beside the conversations
    (`<file>-key`, git-ignored like them): Gradio's default is a new key per start, and the browser could no longer
    read its thread id after a restart."""
    path = conversations.with_name(f"{conversations.name}-key")
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(24), encoding="utf-8")
        path.chmod(0o600)
    return path.read_text(encoding="utf-8").strip()


def saved_markdown(saved: list[dict]) -> str:
    """One line per document (an uploads.Saved as a dict, as the graph's state holds it): icon and message."""
    return "\n".join(f"{STATUS_ICON[s['status']]} {s['message']}" for s in saved)


def reply_markdown(state: dict) -> str:
    """The assistant's chat message: answer, saved documents, sources, retrieval used, evaluation, notes."""
    parts = [state.get("answer", "")]
    if state.get("recalled"):
        parts.append("**From earlier conversations** (what you told me)\n" + "\n".join(
            f"- {m['fact']} · {origin(m)} · similarity {m['score']:.3f}" for m in state["recalled"]))
    if state.get("remembered"):
        parts.append("**Remembered**\n" + "\n".join(f"- {m['fact']}" for m in state["remembered"]))
    if state.get("saved") and state.get("action") == "save_then_retrieve":
        parts.append("**Saved**\n" + saved_markdown(state["saved"]))
    documents = state.get("documents") or []
    if documents:
        parts.append("**Sources**\n" + "\n".join(
            f"{i}. `{Path(d.metadata['source']).name}` · chunk {d.metadata['chunk_index']} · "
            f"similarity {d.metadata['similarity']:.3f}" for i, d in enumerate(documents, 1)
        ))
    strategy = state.get("strategy")
    if strategy:
        line = (f"route: {state['action']} ({state['routed_by']}) · "
                f"retrieval: {strategy.get('used', strategy['requested'])}")
        if strategy.get("filter"):
            line += f" · only {strategy['filter_reason']}: `{strategy['filter']}`"
        parts.append(f"_{line}_")
    elif state.get("action"):
        parts.append(f"_route: {state['action']} ({state['routed_by']})_")
    scores = state.get("scores")
    if scores:
        diversity = "n/a (one passage)" if scores.get("diversity") is None else f"{scores['diversity']:.3f}"
        grades = (
            f"faithfulness {scores['faithfulness']}/5 · relevance {scores['relevance']}/5 · "
            f"completeness {scores['completeness']}/5" if scores.get("faithfulness") is not None
            else "LLM grade unavailable"
        )
        parts.append(
            f"**Evaluation** · mean similarity {scores['mean_similarity']:.3f} · diversity {diversity} · {grades}"
        )
    parts += [f"_note: {note}_" for note in state.get("notes", [])]
    return "\n\n".join(p for p in parts if p)


class RagApp:
    """The app's state and event handlers, independent of the widgets (unit tests call them directly)."""

    def __init__(
        self,
        client: MilvusClient,
        embeddings: Embeddings,
        llm: BaseChatModel,
        upload_dir: str | Path,
        collection: str = DEFAULT_COLLECTION,
        conversations: str | Path | None = None,
    ) -> None:
        """`conversations`: the checkpointer's SQLite file (None: `default_conversations` beside the upload folder)."""
        self.client, self.embeddings, self.collection = client, embeddings, collection
        self.upload_dir = Path(upload_dir)
        self.conversations = Path(conversations) if conversations else default_conversations(self.upload_dir)
        self.conversations.parent.mkdir(parents=True, exist_ok=True)
        self.context = RouterContext(client, embeddings, llm, self.upload_dir, collection, user_id=LOCAL_USER)
        self.memory = open_memory_store(default_memories(self.conversations), embeddings)
        self.graph = build_router_graph(sqlite_checkpointer(self.conversations), self.memory)

    def close(self) -> None:
        """Close the app's SQLite connections (conversations, long-term memory); the Milvus client is its caller's."""
        self.graph.checkpointer.conn.close()
        self.memory.conn.close()

    def index_hint(self) -> str:
        """What to do first when nothing is indexed yet; empty once a file or note is saved."""
        return "" if self.files_table() else START_HINT

    def files_table(self) -> list[list]:
        """The indexed files, one row each (FILE_COLUMNS)."""
        return [[d[c] for c in FILE_COLUMNS] for d in indexed_documents(self.client, self.collection)]

    def upload(
        self, paths: list[str] | None, chunking: str = "auto", chunk_size: str = "auto"
    ) -> tuple[str, list[list]]:
        """Save uploaded files one by one: (status message, indexed files). Oversized files are not even read, and a
        refused file is listed while the others are saved."""
        saved = [
            save_upload(self.client, self.embeddings, self.upload_dir, path, None if chunking == "auto" else chunking,
                        None if chunk_size == "auto" else int(chunk_size), self.collection)
            for path in paths or []
        ]
        return saved_markdown([asdict(s) for s in saved]), self.files_table()

    def memory_view(self) -> tuple[list[list], gr.Dropdown]:
        """Every remembered fact, the last told first (MEMORY_COLUMNS), and the same facts as the forget list."""
        kept = memories(self.memory, LOCAL_USER)
        rows = [[m["fact"], m["thread_id"] or "", m["saved_at"].replace("T", " "), m["message"]] for m in kept]
        return rows, gr.Dropdown(choices=[(m["fact"], m["key"]) for m in kept], value=None)

    def forget_fact(self, key: str | None) -> tuple[str, list[list], gr.Dropdown]:
        """Forget the fact chosen in the forget list: (status message, memory table, forget list)."""
        if not key:
            return "Choose a fact to forget first.", *self.memory_view()
        try:
            gone = forget(self.memory, LOCAL_USER, key)
        except KeyError:  # forgotten already, in another tab
            return "That fact was already forgotten.", *self.memory_view()
        return f"Forgotten: {gone['fact']}", *self.memory_view()

    def conversation(self, thread_id: str) -> list[dict]:
        """A thread's turns as the chat panel shows them, read from the checkpointer (answers without their sources)."""
        state = self.graph.get_state({"configurable": {"thread_id": thread_id}})
        return [{"role": "user" if isinstance(m, HumanMessage) else "assistant", "content": str(m.content)}
                for m in state.values.get("messages", [])]

    def open_conversation(self, thread_id: str | None) -> tuple[str, list[dict]]:
        """On page load: (the browser's thread id, its turns); a browser without one gets a new thread."""
        if not thread_id:
            return self.new_conversation()
        return thread_id, self.conversation(thread_id)

    def new_conversation(self) -> tuple[str, list[dict]]:
        """A new thread id and an empty chat panel (the old thread stays in the checkpointer)."""
        return uuid.uuid4().hex, []

    def chat(
        self, message: str, history: list[dict], chunking: str = "auto", chunk_size: str = "auto",
        retrieval: str = "auto", evaluate: bool = False, thread_id: str | None = None,
    ) -> Iterator[tuple[list[dict], str, list[list]]]:
        """Run one request through the router graph on conversation `thread_id` (None: a one-off request in a new
        thread), yielding (chat history, textbox, files) as the answer grows."""
        if not message.strip():
            yield history, "", self.files_table()
            return
        history = [*history, {"role": "user", "content": message}, {"role": "assistant", "content": "_routing…_"}]
        yield history, "", self.files_table()
        inputs = {"chunking": chunking, "chunk_size": None if chunk_size == "auto" else int(chunk_size),
                  "retrieval": retrieval, "evaluate": evaluate}
        answer, thread_id = "", thread_id or uuid.uuid4().hex
        for kind, payload in stream_request(self.graph, message, context=self.context, thread_id=thread_id, **inputs):
            if kind == "token":
                answer += payload
                content = answer
            elif kind == "node":
                step = PROGRESS.get(payload)
                if not step:
                    continue
                content = f"{answer}\n\n_{step}_" if answer else f"_{step}_"
            else:
                content = reply_markdown(payload)
            history = [*history[:-1], {"role": "assistant", "content": content}]  # a new list per update
            yield history, "", self.files_table() if kind == "done" else gr.skip()

    def browser_chat(
        self, message: str, history: list[dict], chunking: str, chunk_size: str, retrieval: str, evaluate: bool,
        thread_id: str | None,
    ) -> Iterator[tuple[list[dict], str, list[list], str]]:
        """`chat` for the page, with the thread id as a fourth output: a message sent before the page had finished
        loading has no thread id yet, and the new one must be stored in the browser with the reply."""
        thread_id = thread_id or self.new_conversation()[0]
        for update in self.chat(message, history, chunking, chunk_size, retrieval, evaluate, thread_id):
            yield *update, thread_id


def build_ui(app: RagApp) -> gr.Blocks:
    """The page: uploads, indexed files and settings on the left; the chat on the right."""
    with gr.Blocks(title="RAG app", analytics_enabled=False) as demo:
        gr.Markdown("## RAG app · save documents, ask questions, see the sources\nLocal model and Milvus Lite; "
                    "answers cite the passages they use.")
        with gr.Row():
            with gr.Column(scale=2, min_width=340):
                upload = gr.File(label=f"Upload {', '.join(UPLOAD_TYPES)} files", file_count="multiple",
                                 elem_id="upload", height=120)
                status = gr.Markdown(app.index_hint, elem_id="upload-status")
                files = gr.Dataframe(headers=FILE_COLUMNS, value=app.files_table, label="Indexed files",
                                     interactive=False, wrap=True, elem_id="files")
                chunking = gr.Dropdown(["auto", *CHUNKINGS], value="auto", label="Chunking", elem_id="chunking")
                chunk_size = gr.Dropdown(CHUNK_SIZES, value="auto", label="Chunk size (characters)")
                retrieval = gr.Dropdown(RETRIEVAL_CHOICES, value="auto", label="Retrieval", elem_id="retrieval")
                evaluate = gr.Checkbox(False, label="Grade answers with the model (+1 LLM call)", elem_id="evaluate")
                with gr.Accordion("Long-term memory: what you told me about yourself", elem_id="memory"):
                    remembered = gr.Dataframe(headers=MEMORY_COLUMNS, label="Remembered facts", interactive=False,
                                              wrap=True, elem_id="memories")
                    with gr.Row():
                        to_forget = gr.Dropdown([], label="Fact to forget", scale=3, elem_id="forget-choice")
                        forget_button = gr.Button("Forget", size="sm", scale=1, elem_id="forget")
                    memory_status = gr.Markdown(elem_id="memory-status")
            with gr.Column(scale=3):
                chatbot = gr.Chatbot(label="Chat", height=520, elem_id="chat", buttons=["copy"], placeholder=START_HINT)
                with gr.Row():
                    question = gr.Textbox(placeholder="Ask a question, or \"Save this note: ...\"", show_label=False,
                                          scale=5, elem_id="question")
                    send = gr.Button("Send", variant="primary", scale=1, elem_id="send")
                new = gr.Button("New conversation", size="sm", elem_id="new-conversation")
        # this browser's thread id, in its localStorage, encrypted with a key that survives restarts
        thread = gr.BrowserState(None, storage_key=THREAD_KEY, secret=browser_secret(app.conversations))
        demo.load(app.open_conversation, thread, [thread, chatbot])
        demo.load(app.memory_view, None, [remembered, to_forget])
        forget_button.click(app.forget_fact, to_forget, [memory_status, remembered, to_forget])
        new.click(app.new_conversation, None, [thread, chatbot])
        upload.upload(app.upload, [upload, chunking, chunk_size], [status, files], concurrency_id="rag").then(
            lambda: None, None, upload
        )
        chat_inputs = [question, chatbot, chunking, chunk_size, retrieval, evaluate, thread]
        for trigger in (send.click, question.submit):
            trigger(app.browser_chat, chat_inputs, [chatbot, question, files, thread], concurrency_id="rag").then(
                app.memory_view, None, [remembered, to_forget]
            )
    return demo


def main(argv: list[str] | None = None) -> None:
    from rag_lib.embeddings import get_embeddings
    from rag_lib.llm import get_chat_model
    from rag_lib.store import opened

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=settings().GRADIO_SERVER_PORT)
    parser.add_argument("--upload-dir", type=Path, default=default_upload_dir())
    parser.add_argument("--milvus-uri", default=None, help="default: MILVUS_URI, else .milvus/app.db")
    parser.add_argument("--conversations", type=Path, default=None,
                        help="the conversations' SQLite file (default: beside the upload folder)")
    args = parser.parse_args(argv)
    theme = gr.themes.Default(font=["system-ui", "sans-serif"], font_mono=["ui-monospace", "monospace"])  # offline
    # launch() serves until Ctrl+C; then the Milvus database and the SQLite files are closed
    with opened("app", uri=args.milvus_uri) as client, closing(
        RagApp(client, get_embeddings(), get_chat_model(), args.upload_dir, conversations=args.conversations)
    ) as app:
        build_ui(app).queue(default_concurrency_limit=1).launch(
            server_name=args.host, server_port=args.port, theme=theme, max_file_size=10 * max_file_bytes(),
            show_error=True,
        )


if __name__ == "__main__":
    main()
