"""The Gradio app's handlers (rag_lib.app): upload validation, path sanitisation, the persistent file list,
the streamed chat reply, the conversations kept per browser (and across a restart), and the page's widgets.

Real Milvus Lite (temporary) and the real offline embeddings. The chat model is the TEST DOUBLE from
tests/test_router.py (`ScriptedChatModel`: scripted routes and rewrites, fixed grades, a fixed answer streamed word by
word, every prompt recorded).
The browser end-to-end test with the real model is tests/test_browser.py.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import gradio as gr
import pytest
from langchain_core.documents import Document
from pymilvus.exceptions import MilvusException
from test_router import ANSWER, ASK_CAFETERIA, CAFETERIA, FOLLOW_UP, ScriptedChatModel

from rag_lib.app.ui import FILE_COLUMNS, START_HINT, THREAD_KEY, RagApp, build_ui, reply_markdown
from rag_lib.app.ui import main as app_main
from rag_lib.app.uploads import UploadError, indexed_documents, safe_name, save_document
from rag_lib.experiments.sample_pdf import make_pdf
from rag_lib.store import DEFAULT_COLLECTION, connect, count_rows


@pytest.fixture()
def app(milvus, embeddings, tmp_path):
    return RagApp(milvus, embeddings, ScriptedChatModel(), tmp_path / "uploads")


def upload_file(tmp_path, name: str, data: bytes) -> str:
    """A file as Gradio hands it to the handler: a path in its own temporary folder, named like the upload."""
    folder = tmp_path / "gradio" / str(len(list((tmp_path).glob("gradio/*"))))
    folder.mkdir(parents=True)
    (folder / name).write_bytes(data)
    return str(folder / name)


def state_of(app: RagApp) -> tuple[int, list[str], list[list]]:
    """Rows in Milvus, files in the upload folder, the file table: what a refused upload must not change."""
    rows = count_rows(app.client, DEFAULT_COLLECTION) if app.client.has_collection(DEFAULT_COLLECTION) else 0
    files = sorted(p.name for p in app.upload_dir.iterdir()) if app.upload_dir.exists() else []
    return rows, files, app.files_table()


@pytest.mark.parametrize(
    ("name", "expected"),
    [("notes.md", "notes.md"), ("docs/notes.md", "notes.md"), ("C:\\Users\\me\\报告.pdf", None),
     ("../notes.md", None), ("docs/../../etc/passwd.txt", None), ("..\\..\\notes.md", None),
     ("/etc/passwd.txt", None), (".env.md", None), ("docs/.hidden.txt", None), ("", None),
     ("bad\x00name.md", None), ("项目 计划.md", "项目 计划.md"), ("line\nbreak.md", None), ("del\x7f.md", None),
     ("caf\udce9.md", None)],
)
def test_safe_name_keeps_the_base_name_and_refuses_escapes(name, expected):
    if expected is None:
        with pytest.raises(UploadError):
            safe_name(name)
    else:
        assert safe_name(name) == expected


def test_a_name_that_tries_to_escape_writes_nothing_anywhere(milvus, embeddings, tmp_path):
    uploads = tmp_path / "deep" / "uploads"
    for name in ["../escaped.md", "/tmp/escaped.md", "..\\escaped.md", ".escaped.md"]:
        saved = save_document(milvus, embeddings, uploads, name, b"# Escape\nThis must never be written.\n")
        assert saved.status == "error", name
    assert not uploads.exists() and not (tmp_path / "deep" / "escaped.md").exists()
    assert not milvus.has_collection(DEFAULT_COLLECTION)


def test_a_symlink_in_the_upload_folder_cannot_redirect_a_write(milvus, embeddings, tmp_path):
    uploads, outside = tmp_path / "uploads", tmp_path / "outside.md"
    uploads.mkdir()
    outside.write_text("# Outside\nkeep me\n", encoding="utf-8")
    (uploads / "link.md").symlink_to(outside)
    saved = save_document(milvus, embeddings, uploads, "link.md", b"# Replaced\nnew text\n")
    assert saved.status == "error" and "outside the upload folder" in saved.message
    assert outside.read_text(encoding="utf-8") == "# Outside\nkeep me\n"


def test_good_uploads_are_indexed_and_listed(app, tmp_path):
    md = upload_file(tmp_path, "cafeteria.md", f"# Cafeteria\n{CAFETERIA}\n".encode())
    pdf = upload_file(tmp_path, "vpn.pdf", make_pdf(["The VPN server for the Lyon office is vpn2.example.org."]))
    status, table = app.upload([md, pdf])
    assert status.count("✓") == 2 and "cafeteria.md: indexed" in status and "vpn.pdf: indexed" in status
    assert [row[0] for row in table] == ["cafeteria.md", "vpn.pdf"]
    assert table[0][FILE_COLUMNS.index("chunking")] == "markdown/300"
    assert table[1][FILE_COLUMNS.index("chunking")] == "recursive/300"
    assert sorted(p.name for p in app.upload_dir.iterdir()) == ["cafeteria.md", "vpn.pdf"]


def test_chunking_choice_from_the_ui_applies_to_uploads(app, tmp_path):
    status, table = app.upload([upload_file(tmp_path, "c.txt", CAFETERIA.encode())], "fixed", "200")
    assert "fixed/200" in status and table[0][FILE_COLUMNS.index("chunking")] == "fixed/200"


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("script.exe", b"MZ binary", "unsupported file type '.exe'"),
        ("data.csv", b"a,b\n1,2\n", "unsupported file type '.csv'"),
        ("empty.md", b"", "the file is empty"),
        ("blank.txt", b"  \n\n ", "the file is empty"),
        ("binary.txt", bytes(range(256)) * 8, "binary content"),
        ("broken.pdf", b"%PDF-1.4 this is not really a PDF", "corrupt or unreadable PDF"),
    ],
)
def test_bad_uploads_get_a_clear_message_and_change_nothing(app, tmp_path, name, data, message):
    app.upload([upload_file(tmp_path, "ok.md", b"# Ok\nA good file is already there.\n")])
    before = state_of(app)
    status, table = app.upload([upload_file(tmp_path, name, data)])
    assert status.startswith("✗") and message in status and name in status
    assert state_of(app) == before and table == before[2]


def test_an_oversized_upload_is_refused_before_it_is_read(app, tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_MAX_FILE_MB", "0.001")  # about 1 KB
    status, _ = app.upload([upload_file(tmp_path, "big.txt", b"words " * 400)])
    assert status.startswith("✗") and "over the" in status and "RAG_MAX_FILE_MB" in status
    assert state_of(app) == (0, [], [])


def test_a_duplicate_upload_is_refused_even_under_another_name(app, tmp_path):
    app.upload([upload_file(tmp_path, "first.txt", CAFETERIA.encode())])
    before = state_of(app)
    status, _ = app.upload([upload_file(tmp_path, "copy.txt", CAFETERIA.encode()),
                            upload_file(tmp_path, "first.txt", CAFETERIA.encode())])
    assert status.count("⚠") == 2 and "already indexed as first.txt" in status
    assert state_of(app) == before


def test_one_bad_file_does_not_stop_the_good_ones(app, tmp_path):
    status, table = app.upload([upload_file(tmp_path, "bad.docx", b"PK.."),
                                upload_file(tmp_path, "good.txt", b"Fine.")])
    assert "✗ bad.docx" in status and "✓ good.txt" in status and [r[0] for r in table] == ["good.txt"]


def test_names_too_long_for_the_file_system_are_refused_and_the_batch_goes_on(app, tmp_path):
    """The upload is written as `.NAME.partial` first: a 246-byte name is the longest that fits in 255 bytes."""
    longest, too_long = "a" * 242 + ".txt", "b" * 244 + ".txt"
    status, table = app.upload([upload_file(tmp_path, too_long, b"Too long a name."),
                                upload_file(tmp_path, "good.txt", b"Fine."),
                                upload_file(tmp_path, "长" * 83 + ".md", b"# Too long\nin UTF-8 bytes.")])
    assert f"✗ {too_long}: the name is 248 bytes, over the 246 the upload folder takes; rename" in status
    assert "✓ good.txt" in status and "the name is 252 bytes" in status
    assert [r[0] for r in table] == ["good.txt"]
    status, table = app.upload([upload_file(tmp_path, longest, b"Just fits.")])
    assert status.startswith("✓") and longest in [r[0] for r in table]


def test_a_file_that_cannot_be_read_or_written_is_reported_and_the_batch_goes_on(app, tmp_path, monkeypatch):
    gone = upload_file(tmp_path, "gone.txt", b"Removed before it was read.")
    Path(gone).unlink()
    batch = [gone, upload_file(tmp_path, "full.txt", b"No room left."), upload_file(tmp_path, "good.txt", b"Fine.")]
    write_bytes = Path.write_bytes

    def disk_full(self, data):  # FAKE: the disk is full for this one file
        if "full.txt" in self.name:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return write_bytes(self, data)

    monkeypatch.setattr(Path, "write_bytes", disk_full)
    status, table = app.upload(batch)
    assert "✗ gone.txt: cannot be read (No such file or directory)" in status
    assert "✗ full.txt: cannot be written to the upload folder (No space left on device); nothing changed" in status
    assert "✓ good.txt" in status and [r[0] for r in table] == ["good.txt"]
    assert sorted(p.name for p in app.upload_dir.iterdir()) == ["good.txt"]  # no partial file left behind


def file_rows(client, name: str) -> list[tuple]:
    """(id, file_hash, chunk_index, text) of every row stored for the upload called `name`, sorted."""
    rows = client.query(DEFAULT_COLLECTION, filter=f'source like "%/{name}"', limit=1000,
                        output_fields=["file_hash", "chunk_index", "text"])
    return sorted((r["id"], r["file_hash"], r["chunk_index"], r["text"]) for r in rows)


def test_a_failed_delete_puts_the_old_version_back_in_the_folder_and_the_database(milvus, embeddings, tmp_path,
                                                                                  monkeypatch):
    """Saving a new version upserts its rows, then deletes the old version's: when that delete fails, the folder and
    the database both keep the old version, once, including the chunk both versions share (one id for both)."""
    uploads = tmp_path / "uploads"
    old = b"# Opening hours\nThe cafeteria opens at 8 am.\n\n# Prices\nA meal costs 5 euros.\n"
    new = b"# Opening hours\nThe cafeteria opens at 8 am.\n\n# Prices\nA meal costs 6 euros.\n"
    assert save_document(milvus, embeddings, uploads, "cafe.md", old).status == "indexed"
    before = file_rows(milvus, "cafe.md")
    delete, failed = milvus.delete, []

    def delete_failing_once(collection, **kwargs):  # FAKE: the first delete is lost (a dropped connection)
        if not failed:
            failed.append(kwargs)
            raise MilvusException(message="connection lost")
        return delete(collection, **kwargs)

    monkeypatch.setattr(milvus, "delete", delete_failing_once)
    with pytest.raises(MilvusException, match="connection lost"):
        save_document(milvus, embeddings, uploads, "cafe.md", new)
    assert (uploads / "cafe.md").read_bytes() == old and file_rows(milvus, "cafe.md") == before
    assert len(before) == 2 and before[0][1] == before[1][1]  # two chunks, one version
    saved = save_document(milvus, embeddings, uploads, "cafe.md", new)  # the next attempt goes through
    after = file_rows(milvus, "cafe.md")
    assert saved.status == "updated" and len(after) == 2 and {r[1] for r in after} != {before[0][1]}
    assert {r[0] for r in after} & {r[0] for r in before}  # the shared chunk kept its id
    assert (uploads / "cafe.md").read_bytes() == new and [d["file"] for d in indexed_documents(milvus)] == ["cafe.md"]


def test_the_file_list_survives_a_restart(embeddings, tmp_path):
    uri = str(tmp_path / "app.db")
    first = RagApp(connect(uri=uri), embeddings, ScriptedChatModel(), tmp_path / "uploads")
    first.upload([upload_file(tmp_path, "kept.txt", CAFETERIA.encode())])
    table = first.files_table()
    first.client.close()
    again = RagApp(connect(uri=uri), embeddings, ScriptedChatModel(), tmp_path / "uploads")
    assert again.files_table() == table and table[0][0] == "kept.txt"
    again.client.close()


def open_files_under(folder: Path) -> list[str]:
    """The files below `folder` that this process has open (its file descriptors)."""
    paths = (os.path.realpath(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd"))
    return sorted(p for p in paths if p.startswith(str(folder.resolve())))


def test_the_app_closes_its_database_and_files_when_it_stops(embeddings, tmp_path, monkeypatch,
                                                             rows_seen_by_another_process):
    """`python -m rag_lib.app` serves until Ctrl+C; then its Milvus Lite database is free for another process and
    its SQLite files (conversations, long-term memory) are closed."""
    import rag_lib.embeddings
    import rag_lib.llm

    served: list[dict] = []
    # FAKE launch: returns at once, as the real one returns after Ctrl+C
    monkeypatch.setattr(gr.Blocks, "launch", lambda self, **kwargs: served.append(kwargs))
    monkeypatch.setattr(rag_lib.llm, "get_chat_model", ScriptedChatModel)
    monkeypatch.setattr(rag_lib.embeddings, "get_embeddings", lambda: embeddings)
    uri, uploads = str(tmp_path / "app.db"), tmp_path / "uploads"
    app_main(["--milvus-uri", uri, "--upload-dir", str(uploads), "--conversations", str(tmp_path / "talk.sqlite")])
    assert served and served[0]["server_name"] == "127.0.0.1"
    assert sorted(p.name for p in tmp_path.glob("talk*.sqlite")) == ["talk.memories.sqlite", "talk.sqlite"]
    assert open_files_under(tmp_path) == []
    assert rows_seen_by_another_process(uri) == {}


def test_chat_streams_the_answer_then_shows_sources_and_evaluation(app, tmp_path):
    app.upload([upload_file(tmp_path, "cafeteria.txt", CAFETERIA.encode())])
    updates = list(app.chat(ASK_CAFETERIA, [], evaluate=True))
    contents = [history[-1]["content"] for history, _, _ in updates]
    assert all(history[-2] == {"role": "user", "content": ASK_CAFETERIA} for history, _, _ in updates)
    partial = [c for c in contents if c and ANSWER.startswith(c) and c != ANSWER]
    assert len(partial) >= 3  # the answer grew word by word
    final = contents[-1]
    assert final.startswith(ANSWER) and "**Sources**" in final and "`cafeteria.txt` · chunk 0" in final
    assert "**Evaluation**" in final and "faithfulness 4/5" in final and "diversity n/a (one passage)" in final
    assert "route: retrieve (model)" in final
    assert all(textbox == "" for _, textbox, _ in updates)
    assert updates[-1][2] == app.files_table()


def test_chat_saving_a_note_refreshes_the_file_list(app):
    *_, (history, _, table) = app.chat("Save this note: " + CAFETERIA, [])
    assert "indexed, 1 chunk (recursive/300), language en" in history[-1]["content"]
    assert len(table) == 1 and table[0][0].startswith("note_")


def test_an_empty_message_does_nothing(app):
    assert list(app.chat("  ", [])) == [([], "", [])]


def test_two_browsers_do_not_see_each_other_s_conversation(app, tmp_path):
    app.upload([upload_file(tmp_path, "cafeteria.txt", CAFETERIA.encode())])
    (a, shown_a), (b, shown_b) = app.open_conversation(None), app.new_conversation()
    assert a != b and shown_a == shown_b == []
    list(app.chat(ASK_CAFETERIA, [], thread_id=a))
    llm = app.context.llm
    llm.calls.clear()
    llm.prompts.clear()
    list(app.chat(FOLLOW_UP, [], thread_id=b))
    assert "condense" not in llm.calls  # thread b has no earlier turn to rewrite with
    assert not any(ASK_CAFETERIA in str(m.content) for prompt in llm.prompts for m in prompt)
    assert app.conversation(a) == [{"role": "user", "content": ASK_CAFETERIA}, {"role": "assistant", "content": ANSWER}]
    assert [turn["content"] for turn in app.conversation(b)][0] == FOLLOW_UP and len(app.conversation(b)) == 2


def test_a_restarted_app_shows_the_conversation_and_answers_a_follow_up(milvus, embeddings, tmp_path):
    first = RagApp(milvus, embeddings, ScriptedChatModel(), tmp_path / "uploads")
    first.upload([upload_file(tmp_path, "cafeteria.txt", CAFETERIA.encode())])
    thread, _ = first.open_conversation(None)
    list(first.chat(ASK_CAFETERIA, [], thread_id=thread))
    first.graph.checkpointer.conn.close()  # the app stops

    llm = ScriptedChatModel()
    again = RagApp(milvus, embeddings, llm, tmp_path / "uploads")  # a new graph and checkpointer on the same file
    thread_again, shown = again.open_conversation(thread)  # what the page shows on load for this browser's thread
    assert thread_again == thread
    assert shown == [{"role": "user", "content": ASK_CAFETERIA}, {"role": "assistant", "content": ANSWER}]
    *_, (history, _, _) = again.chat(FOLLOW_UP, shown, thread_id=thread)
    assert llm.calls == ["route", "condense", "answer"]  # no model grade unless asked for (evaluate=True)
    assert f"User: {ASK_CAFETERIA}\nAssistant: {ANSWER}" in llm.prompts[0][-1].content  # rewritten with turn 1
    assert history[:2] == shown
    assert history[-1]["content"].startswith(ANSWER) and "**Sources**" in history[-1]["content"]
    assert [turn["content"] for turn in again.conversation(thread)] == [ASK_CAFETERIA, ANSWER, FOLLOW_UP, ANSWER]


def test_a_message_sent_before_the_page_has_a_thread_id_starts_one_and_stores_it(app):
    *_, (history, _, _, thread) = app.browser_chat(ASK_CAFETERIA, [], "auto", "auto", "auto", False, None)
    (user, assistant) = app.conversation(thread)
    assert thread and user == {"role": "user", "content": ASK_CAFETERIA}
    assert history[-1]["content"].startswith(assistant["content"])  # the panel adds route and notes to the answer
    *_, (_, _, _, same) = app.browser_chat(FOLLOW_UP, history, "auto", "auto", "auto", False, thread)
    assert same == thread and len(app.conversation(thread)) == 4


def test_reply_markdown_lists_sources_strategy_and_notes():
    state = {
        "answer": "It opens at 9 [1].", "action": "retrieve", "routed_by": "model",
        "documents": [Document("x", id="1", metadata={"source": "/a/b/c.md", "chunk_index": 2, "similarity": 0.91234})],
        "strategy": {"requested": "hyde", "used": "dense", "filter": 'source in ["/a/b/c.md"]',
                     "filter_reason": "files named in the request"},
        "scores": {"mean_similarity": 0.9, "diversity": 0.25, "faithfulness": 5, "relevance": 4, "completeness": 3},
        "notes": ["something to know"],
    }
    text = reply_markdown(state)
    assert "1. `c.md` · chunk 2 · similarity 0.912" in text
    assert "retrieval: dense" in text and 'only files named in the request: `source in ["/a/b/c.md"]`' in text
    assert "diversity 0.250" in text and "completeness 3/5" in text and "_note: something to know_" in text


def test_the_page_has_the_widgets_the_browser_test_uses(app):
    demo = build_ui(app)
    assert isinstance(demo, gr.Blocks)
    ids = {block.elem_id for block in demo.blocks.values() if getattr(block, "elem_id", None)}
    assert {"upload", "upload-status", "files", "chunking", "retrieval", "evaluate", "chat", "question", "send",
            "new-conversation"} <= ids


def test_the_browser_keeps_its_thread_id_under_a_key_that_survives_a_restart(app, milvus, embeddings):
    """Gradio encrypts a BrowserState with its `secret`, a new random one per start unless given: the app keeps its
    own beside the conversations file, so a restarted app can still read the thread id the browser kept."""
    def browser_state(demo: gr.Blocks) -> gr.BrowserState:
        (state,) = [b for b in demo.blocks.values() if isinstance(b, gr.BrowserState)]
        return state

    first = browser_state(build_ui(app))
    restarted = RagApp(milvus, embeddings, ScriptedChatModel(), app.upload_dir)
    again = browser_state(build_ui(restarted))
    assert first.storage_key == again.storage_key == THREAD_KEY
    assert first.secret == again.secret and len(first.secret) >= 24
    assert app.conversations.exists() and app.conversations.parent == app.upload_dir.parent


def test_a_new_app_says_what_to_do_first_and_grades_only_when_asked(app, tmp_path):
    """An empty index shows where to start; the model grade (+1 LLM call) is off unless the user turns it on."""
    demo = build_ui(app)
    blocks = {block.elem_id: block for block in demo.blocks.values() if getattr(block, "elem_id", None)}
    assert blocks["evaluate"].value is False
    assert blocks["chat"].placeholder == START_HINT
    assert app.index_hint() == START_HINT
    app.upload([upload_file(tmp_path, "hours.md", CAFETERIA.encode())])
    assert app.index_hint() == ""
