"""Files' passages (issue 23): extraction by the real worker into passages found by search
and recall with a citation of the file and span; the cascades of delete, archive and move;
the fence that drops a replaced version's extraction; unreadable files; read-only passages;
tenant isolation. PDFs are written in the test with fpdf2 and read back with pypdf."""

from __future__ import annotations

import functools
import io
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from fpdf import FPDF
from pypdf import PdfReader, PdfWriter

from grove_auth.principal import Principal
from grove_cli import admin
from grove_contracts.files import FileUpdate
from grove_contracts.notebooks import CreateNotebookRequest
from grove_db import embedded, queue
from grove_db.pool import transaction
from grove_memory.files import files, passages, sandbox
from grove_memory.files.blobs import PostgresBlobs
from grove_memory.notes import notebooks, subtrees
from grove_memory.store import Store
from tests.support.clients import Client, data_of, error_of
from tests.support.files import FILES, upload, uploaded
from tests.support.processes import Running, start_api, start_ask, start_worker
from tests.support.readers import breaks
from tests.support.tenants import Tenant, new_tenant, owner_of
from tests.support.waiting import wait_for

GATEWAY = "The billing gateway restarts at two in the morning, every night, without paging anyone."


def pdf(pages: dict[int, str], count: int = 4) -> bytes:
    """A ``count``-page PDF whose page n says ``pages[n]`` (else filler about plants)."""
    document = FPDF()
    document.set_font("Helvetica", size=12)
    for number in range(1, count + 1):
        document.add_page()
        text = pages.get(number, f"Page {number} is about watering the office plants.")
        document.multi_cell(0, 8, text)
    return bytes(document.output())


@pytest.fixture(scope="module")
def api(database: embedded.EmbeddedDatabase) -> Iterator[Running]:
    """A lexical api answering through an extractive grove-ask, and a worker (which
    extracts files whatever its profile)."""
    ask = start_ask({"GROVE_EMBEDDING_PROFILE": "disabled"})
    worker = start_worker(database, ask.url, GROVE_EMBEDDING_PROFILE="disabled")
    running = start_api(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_EMBEDDING_PROFILE": "disabled",
            "GROVE_ASK_ADDRESS": ask.url,
        }
    )
    yield running
    running.stop()
    worker.stop()
    ask.stop()


@pytest.fixture
def tenant(database: embedded.EmbeddedDatabase, api: Running) -> Tenant:
    return new_tenant(database, api.url)


def settled(client: Client, file_id: str, version: int = 1) -> dict[str, Any]:
    """The file once its ``version`` is extracted (ready or failed)."""
    file: dict[str, Any] = wait_for(
        lambda: data_of(client.get(f"{FILES}/{file_id}")),
        lambda now: now["version"] == version and now["indexing"] in ("ready", "failed"),
    )
    return file


def search(client: Client, query: str, **fields: Any) -> list[dict[str, Any]]:
    response = client.post("/v1/memories/search", {"query": query, "mode": "lexical", **fields})
    assert response.status_code == 200, response.text
    return [item["memory"] for item in data_of(response)["items"]]


def passages_of(client: Client, file_id: str) -> list[dict[str, Any]]:
    found = search(client, "gateway runbook plants restart", kind="passage", limit=50)
    return [m for m in found if m["file"]["fileId"] == file_id]


def test_a_pdf_page_is_found_by_search_and_recall_and_cited_by_page(tenant: Tenant) -> None:
    key = tenant.client
    file = uploaded(key, pdf({3: GATEWAY}), "application/pdf", name="runbook.pdf")
    assert (file["indexing"], file["passages"]) == ("pending", 0)
    file = settled(key, file["id"])
    assert (file["indexing"], file["indexingError"], file["passages"]) == ("ready", None, 4)

    (hit, *_) = search(key, "when does the billing gateway restart")
    assert hit["kind"] == "passage" and GATEWAY in " ".join(hit["content"].split())
    assert hit["file"] == {"fileId": file["id"], "version": 1, "pages": [3, 3], "bytes": None}
    assert hit["projectId"] is None and hit["indexing"] == "disabled"
    recalled = data_of(key.post("/v1/recall", {"query": "billing gateway restart"}))["items"]
    assert recalled[0]["memory"]["id"] == hit["id"]
    answer = data_of(key.post("/v1/ask", {"query": "When does the billing gateway restart?"}))
    assert answer["status"] == "answered", answer
    assert answer["sources"][0]["noteId"] == hit["id"]
    assert answer["sources"][0]["file"] == hit["file"]

    # Passages are not notes a caller saved: not listed, not exported, never written.
    assert data_of(key.get("/v1/memories"))["items"] == []
    assert key.get("/v1/export").text.count('"type":"memory"') == 0
    for refused in (
        key.patch(f"/v1/memories/{hit['id']}", {"content": "changed"}),
        key.post("/v1/memories/forget", {"ids": [hit["id"]]}),
    ):
        assert refused.status_code == 409, refused.text
        assert error_of(refused)["code"] == "passage_read_only"
    assert data_of(key.get(f"/v1/memories/{hit['id']}"))["content"] == hit["content"]


def test_text_passages_cite_the_exact_bytes_of_the_original(tenant: Tenant) -> None:
    key = tenant.client
    html = (
        "<html><head><title>Runbook</title><script>var restart = 1;</script></head><body>"
        f"<h1>Runbook</h1><p>{GATEWAY.replace('every', '<b>every</b>')}</p>"
        "<p>Water the plants &amp; the ferns.</p></body></html>"
    ).encode()
    markdown = f"# Runbook\n\nThe api restarts with the deploy.\n\n{GATEWAY}\n".encode()
    for media, data in (("text/html", html), ("text/markdown", markdown)):
        file = settled(key, uploaded(key, data, media, name=f"runbook {media}")["id"])
        assert file["indexing"] == "ready", file
        (passage,) = passages_of(key, file["id"])
        start, end = passage["file"]["bytes"]
        assert passage["file"]["pages"] is None
        assert b"billing gateway restarts" in data[start:end]
        assert b"<script>" not in data[start:end] and "var restart" not in passage["content"]
        if media == "text/markdown":
            assert data[start:end].decode() == passage["content"]
        else:
            assert "Water the plants & the ferns." in passage["content"]


def test_delete_archive_and_move_carry_the_passages(tenant: Tenant) -> None:
    key = tenant.client
    personal = tenant.key("personal", personal=True, all_notebooks=False)
    file = settled(
        key, uploaded(key, pdf({2: GATEWAY}), "application/pdf", name="runbook.pdf")["id"]
    )
    (hit, *_) = search(key, "billing gateway")
    notebook = tenant.notebook("ops")

    moved = key.patch(f"{FILES}/{file['id']}", {"projectId": notebook})
    assert moved.status_code == 200, moved.text
    assert data_of(moved)["projectId"] == notebook
    assert data_of(key.get(f"/v1/memories/{hit['id']}"))["projectId"] == notebook
    assert search(personal, "billing gateway") == []  # the key sees personal notes only
    assert personal.get(f"/v1/memories/{hit['id']}").status_code == 404

    archived = data_of(key.patch(f"{FILES}/{file['id']}", {"archived": True}))
    assert archived["archived"] is True and archived["name"] == "runbook.pdf"
    assert data_of(key.get(f"/v1/memories/{hit['id']}"))["archived"] is True
    assert search(key, "billing gateway") == []
    data_of(key.patch(f"{FILES}/{file['id']}", {"archived": False, "name": "ops.pdf"}))
    assert search(key, "billing gateway")[0]["id"] == hit["id"]

    assert key.delete(f"{FILES}/{file['id']}").status_code == 200
    assert search(key, "billing gateway") == []
    assert key.get(f"/v1/memories/{hit['id']}").status_code == 404
    with psycopg.connect(tenant.database.grove_superuser_url) as conn:
        live = conn.execute(
            "SELECT count(*) FROM memories WHERE account_id = %s AND deleted_at IS NULL",
            (tenant.account_id,),
        ).fetchone()
        usage = conn.execute(
            "SELECT items FROM account_usage WHERE account_id = %s AND kind = 'passages'",
            (tenant.account_id,),
        ).fetchone()
    assert live == (0,) and usage == (0,)  # nothing live, nothing counted


def test_a_new_version_replaces_the_passages(tenant: Tenant) -> None:
    key = tenant.client
    file = settled(
        key, uploaded(key, pdf({1: GATEWAY}), "application/pdf", name="runbook.pdf")["id"]
    )
    ledger = pdf({4: "The payments ledger closes at noon on the last Friday."})
    response = upload(key, ledger, "application/pdf", path=f"{FILES}/{file['id']}")
    assert response.status_code == 200, response.text
    assert (data_of(response)["version"], data_of(response)["indexing"]) == (2, "pending")
    assert settled(key, file["id"], 2)["indexing"] == "ready"
    assert search(key, "billing gateway") == []
    (hit, *_) = search(key, "payments ledger")
    assert hit["file"] == {"fileId": file["id"], "version": 2, "pages": [4, 4], "bytes": None}


def encrypted() -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf({1: GATEWAY}))))
    writer.encrypt("secret")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@pytest.mark.parametrize(
    ("data", "media", "reason"),
    [
        (b"%PDF-1.4\n1 0 obj << >> endobj\n%%EOF\n", "application/pdf", "the PDF cannot be read"),
        (encrypted(), "application/pdf", "the PDF is encrypted"),
        (b"caf\xe9 au lait", "text/plain", "the file is not UTF-8 text"),
    ],
)
def test_an_unreadable_file_fails_once_with_its_reason(
    tenant: Tenant, data: bytes, media: str, reason: str
) -> None:
    key = tenant.client
    file = settled(key, uploaded(key, data, media, name="broken")["id"])
    assert file["indexing"] == "failed" and file["passages"] == 0
    assert file["indexingError"].startswith(reason), file
    with psycopg.connect(tenant.database.grove_superuser_url) as conn:
        jobs = conn.execute(
            "SELECT status, attempts FROM jobs WHERE account_id = %s AND kind = %s",
            (tenant.account_id, queue.EXTRACT_FILE),
        ).fetchall()
    assert jobs == [("done", 1)]  # completed, not retried


def test_another_tenant_never_sees_the_passages(
    tenant: Tenant, database: embedded.EmbeddedDatabase, api: Running
) -> None:
    key = tenant.client
    settled(key, uploaded(key, pdf({1: GATEWAY}), "application/pdf", name="runbook.pdf")["id"])
    (hit, *_) = search(key, "billing gateway")
    other = new_tenant(database, api.url).client
    assert search(other, "billing gateway") == []
    assert other.get(f"/v1/memories/{hit['id']}").status_code == 404
    assert other.patch(f"{FILES}/{hit['file']['fileId']}", {"archived": True}).status_code == 404


# --- the fence, with the jobs run by hand on a database no worker watches ---------------


def test_an_extraction_of_a_replaced_version_stores_nothing(quiet: tuple[str, Any]) -> None:
    url, pool = quiet
    account = admin.create_account(embedded.role_url(url, embedded.MIGRATION_ROLE), "fence")
    owner = Principal(
        account, uuid.uuid4(), personal=True, all_notebooks=True, can_write=True, can_delete=True
    )
    store = Store(pool=pool, cursor_secret=b"x" * 32)
    blobs = PostgresBlobs()

    def body(text: str) -> files.Body:
        return files.Body.of([pdf({1: text}, 1)], "application/pdf")

    first = files.upload(store, blobs, owner, body(GATEWAY), name="a.pdf", notebook_id=None)

    def claimed() -> list[queue.Job]:
        return queue.claim(pool, "test", None, 10, 60, [queue.EXTRACT_FILE])

    (v1,) = claimed()
    # A new version arrives while version 1 is being extracted.
    files.upload_version(store, blobs, owner, first.file.id, body("The ledger closes at noon."))
    assert passages.run(pool, blobs, "test", v1, None).result == "stale"
    (v2,) = claimed()
    done = passages.run(pool, blobs, "test", v2, None)
    assert (done.result, done.passages) == ("stored", 1)
    with transaction(pool, account) as conn:
        rows = conn.execute(
            "SELECT file_version, content FROM memories WHERE deleted_at IS NULL"
        ).fetchall()
        jobs = conn.execute(
            "SELECT status FROM jobs WHERE kind = 'extract_file' ORDER BY id"
        ).fetchall()
    assert [(r["file_version"], r["content"]) for r in rows] == [(2, "The ledger closes at noon.")]
    assert [j["status"] for j in jobs] == ["done", "done"]


def test_a_notebooks_subtree_carries_its_files_and_their_passages(quiet: tuple[str, Any]) -> None:
    url, pool = quiet
    account = admin.create_account(embedded.role_url(url, embedded.MIGRATION_ROLE), "tree")
    owner = owner_of(account)
    store = Store(pool=pool, cursor_secret=b"x" * 32)
    blobs = PostgresBlobs()
    (notebook, _) = notebooks.create_notebook(store, owner, CreateNotebookRequest(name="ops"))
    file = files.upload(
        store,
        blobs,
        owner,
        files.Body.of([pdf({1: GATEWAY}, 1)], "application/pdf"),
        name="runbook.pdf",
        notebook_id=notebook.id,
    ).file
    (job,) = queue.claim(pool, "test", None, 10, 60, [queue.EXTRACT_FILE])
    assert passages.run(pool, blobs, "test", job, None).result == "stored"

    def state() -> tuple[bool, list[bool]]:
        with transaction(pool, account) as conn:
            row = conn.execute("SELECT archived_at, deleted_at FROM files").fetchone()
            notes = conn.execute(
                "SELECT archived_at FROM memories WHERE deleted_at IS NULL"
            ).fetchall()
        assert row is not None
        if row["deleted_at"] is not None:
            return True, [n["archived_at"] is not None for n in notes]
        return row["archived_at"] is not None, [n["archived_at"] is not None for n in notes]

    before = subtrees.preview(store, owner, notebook.id)
    assert (before.notebooks, before.notes) == (1, 0)  # a passage is not a note here
    subtrees.apply(store, owner, notebook.id, "archive", before.fingerprint)
    assert state() == (True, [True])
    with pytest.raises(subtrees.SubtreeChanged):  # the file is part of the fingerprint
        archived = subtrees.preview(store, owner, notebook.id)
        files.update_file(store, owner, file.id, FileUpdate(name="renamed.pdf"))
        subtrees.apply(store, owner, notebook.id, "restore", archived.fingerprint)
    archived = subtrees.preview(store, owner, notebook.id)
    subtrees.apply(store, owner, notebook.id, "restore", archived.fingerprint)
    assert state() == (False, [False])
    restored = subtrees.preview(store, owner, notebook.id)
    subtrees.apply(store, owner, notebook.id, "delete", restored.fingerprint)
    assert state() == (True, [])  # the file deleted, and no live passage left


def test_a_parser_that_breaks_fails_the_file_not_the_worker(
    quiet: tuple[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, pool = quiet
    account = admin.create_account(embedded.role_url(url, embedded.MIGRATION_ROLE), "broken")
    owner = Principal(account, uuid.uuid4(), personal=True, all_notebooks=True, can_write=True)
    store = Store(pool=pool, cursor_secret=b"x" * 32)
    blobs = PostgresBlobs()
    body = files.Body.of([b"<p>fine</p>"], "text/html")
    files.upload(store, blobs, owner, body, name="page.html", notebook_id=None)

    monkeypatch.setattr(
        sandbox, "passages_of", functools.partial(sandbox.passages_of, reader=breaks)
    )
    (job,) = queue.claim(pool, "test", None, 10, 60, [queue.EXTRACT_FILE])
    done = passages.run(pool, blobs, "test", job, None)
    assert (done.result, done.reason) == (
        "failed",
        "the file's text cannot be read (RecursionError)",
    )
    with transaction(pool, account) as conn:
        file = conn.execute("SELECT indexing, indexing_error FROM files").fetchone()
        status = conn.execute("SELECT status FROM jobs").fetchone()
    assert file is not None and status is not None
    assert (file["indexing"], status["status"]) == ("failed", "done")
