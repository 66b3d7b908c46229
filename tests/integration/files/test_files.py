"""Files (issue 23, first slice): uploads and versions, originals, listing, the storage
view; against a real api (owner sessions signed by the test provider) whose upload limit
is ``LIMIT`` bytes, and PostgreSQL with row-level security."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from typing import Any
from uuid import UUID

import psycopg
import pytest
import requests

from grove_db import embedded
from grove_db.pool import set_tenant
from grove_memory.files.blobs import CHUNK_BYTES
from tests.support.clients import Client, data_of, error_of
from tests.support.files import FILES, upload, uploaded
from tests.support.owners import OwnedAccount, OwnerStack, Provider, owned_tenant
from tests.support.processes import start_api

#: ``GROVE_MAX_FILE_BYTES`` of this module's api.
LIMIT = 4096
ACCEPTED = {
    "text/plain": b"the deploy runbook: restart the api, then the worker\n",
    "text/markdown": b"# Runbook\n\n- restart the api\n",
    "text/html": b"<html><body><script>alert(1)</script>runbook</body></html>",
    "application/pdf": b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj << >> endobj\n%%EOF\n",
    "application/json": b'{"runbook": ["restart the api"]}',
}


#: An account with its owner's session and a full-access key on the files stack.
Account = OwnedAccount


@pytest.fixture(scope="module")
def stack(database: embedded.EmbeddedDatabase) -> Iterator[OwnerStack]:
    provider = Provider()
    api = start_api(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_EMBEDDING_PROFILE": "disabled",
            "GROVE_MAX_FILE_BYTES": str(LIMIT),
            **provider.env(),
        }
    )
    yield OwnerStack(provider, api, database)
    api.stop()
    provider.close()


def new_account(stack: OwnerStack) -> Account:
    return Account(stack, *owned_tenant(stack.database, stack.api.url))


@pytest.fixture
def account(stack: OwnerStack) -> Account:
    return new_account(stack)


def download(client: Client, file_id: str) -> requests.Response:
    return client.get(f"{FILES}/{file_id}/original")


def listed(client: Client, **params: Any) -> list[str]:
    response = client.get(FILES, params=params)
    assert response.status_code == 200, response.text
    return [item["id"] for item in data_of(response)["items"]]


def superuser(stack: OwnerStack) -> psycopg.Connection[Any]:
    return psycopg.connect(stack.database.grove_superuser_url)


def test_each_accepted_type_uploads_and_downloads_exactly(account: Account) -> None:
    for media, data in ACCEPTED.items():
        file = uploaded(account.key, data, f"{media}; charset=utf-8", name=f"doc {media}")
        assert file["mediaType"] == media  # normalised: the type alone
        assert (file["version"], file["sizeBytes"]) == (1, len(data))
        assert file["sha256"] == hashlib.sha256(data).hexdigest()
        assert (file["indexing"], file["archived"], file["projectId"]) == ("pending", False, None)
        original = download(account.key, file["id"])
        assert original.status_code == 200
        assert original.content == data
        served = "application/octet-stream" if media == "text/html" else media
        assert original.headers["Content-Type"] == served
        assert original.headers["X-Content-Type-Options"] == "nosniff"
        assert original.headers["Content-Disposition"].startswith("attachment;")
        again = data_of(account.key.get(f"{FILES}/{file['id']}"))
        for extraction in ("indexing", "indexingError", "passages"):  # a worker may run
            again.pop(extraction), file.pop(extraction)
        assert again == file


def test_another_type_is_refused_with_415(account: Account) -> None:
    for media in ("image/png", "application/octet-stream", "text/csv", "textplain"):
        response = upload(account.key, b"\x89PNG....", media)
        assert response.status_code == 415, media
        assert error_of(response)["code"] == "unsupported_media_type"
    no_type = account.key.session.post(
        account.key.base + FILES,
        params={"name": "x"},
        data=b"abc",
        headers=account.key.headers(),
        timeout=30,
    )
    assert no_type.status_code == 415
    assert listed(account.key) == []


def test_an_uploaded_content_type_is_never_stored_or_sent_back_verbatim(
    account: Account, stack: OwnerStack
) -> None:
    sent = {
        'TEXT/Plain ; charset="utf-8"; x=<script>alert(1)</script>': ("text/plain", "text/plain"),
        "text/html; charset=utf-8": ("text/html", "application/octet-stream"),
        "Application/PDF": ("application/pdf", "application/pdf"),
    }
    for header, (stored, served) in sent.items():
        file = uploaded(account.key, ACCEPTED[stored], header)
        assert file["mediaType"] == stored
        version = upload(account.key, ACCEPTED[stored], header, path=f"{FILES}/{file['id']}")
        assert data_of(version)["mediaType"] == stored
        original = download(account.key, file["id"])
        assert original.headers["Content-Type"] == served, header
        assert original.headers["Content-Disposition"].startswith("attachment;")
        assert original.headers["X-Content-Type-Options"] == "nosniff"
    # A version stored before types were normalised (or imported so) is served by type too.
    html = uploaded(account.key, ACCEPTED["text/html"], "text/html")
    with superuser(stack) as conn:
        conn.execute(
            "UPDATE files SET media_type = 'text/html; charset=utf-8' WHERE id = %s", (html["id"],)
        )
    assert download(account.key, html["id"]).headers["Content-Type"] == "application/octet-stream"
    for refused in ("image/svg+xml", "text/xml", "application/xhtml+xml"):
        response = upload(account.key, b"<svg onload='alert(1)'/>", refused)
        assert response.status_code == 415, refused
        assert error_of(response)["code"] == "unsupported_media_type"


def test_exactly_the_size_limit_passes_and_one_byte_more_is_413(account: Account) -> None:
    at_limit = bytes(range(256)) * (LIMIT // 256)
    assert len(at_limit) == LIMIT
    file = uploaded(account.key, at_limit, "application/pdf")
    assert file["sizeBytes"] == LIMIT
    assert download(account.key, file["id"]).content == at_limit
    over = upload(account.key, at_limit + b"!", "application/pdf")
    assert over.status_code == 413
    assert error_of(over)["code"] == "payload_too_large"
    version = upload(account.key, at_limit + b"!", "application/pdf", path=f"{FILES}/{file['id']}")
    assert version.status_code == 413
    assert listed(account.key) == [file["id"]]
    assert data_of(account.key.get(f"{FILES}/{file['id']}"))["version"] == 1


def test_a_chunked_upload_is_bounded_too(account: Account) -> None:
    def pieces(total: int) -> Iterator[bytes]:
        for _ in range(total // 512):
            yield b"x" * 512

    ok = upload(account.key, pieces(LIMIT), "text/plain")
    assert ok.status_code == 201, ok.text
    over = upload(account.key, pieces(LIMIT + 512), "text/plain")
    assert over.status_code == 413


def test_the_download_is_an_attachment_named_in_rfc_5987(account: Account) -> None:
    name = 'Überblick "Q3" plan/€.html'
    file = uploaded(account.key, ACCEPTED["text/html"], "text/html", name=name)
    original = download(account.key, file["id"])
    disposition = original.headers["Content-Disposition"]
    assert disposition.startswith('attachment; filename="')
    assert disposition.endswith(
        "filename*=UTF-8''%C3%9Cberblick%20%22Q3%22%20plan%2F%E2%82%AC.html"
    )
    assert original.headers["X-Content-Type-Options"] == "nosniff"
    assert "sandbox" in original.headers["Content-Security-Policy"]
    assert original.headers["Content-Type"] == "application/octet-stream"  # never run
    assert int(original.headers["Content-Length"]) == len(ACCEPTED["text/html"])


def test_a_new_version_bumps_the_version_and_the_download_follows(account: Account) -> None:
    first = uploaded(account.key, b"version one", "text/plain", name="notes.txt")
    again = upload(
        account.key, b"# version two", "text/markdown", path=f"{FILES}/{first['id']}", name="n.md"
    )
    assert again.status_code == 200, again.text
    second = data_of(again)
    assert (second["id"], second["version"], second["name"]) == (first["id"], 2, "n.md")
    assert second["sha256"] == hashlib.sha256(b"# version two").hexdigest()
    assert second["createdAt"] == first["createdAt"]
    original = download(account.key, first["id"])
    assert original.content == b"# version two"
    assert original.headers["Content-Type"] == "text/markdown"
    unknown = upload(account.key, b"x", path=f"{FILES}/{uuid.uuid4()}")
    assert unknown.status_code == 404


def test_a_large_file_is_stored_in_chunks_and_read_back_whole(
    stack: OwnerStack, database: embedded.EmbeddedDatabase
) -> None:
    api = start_api(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_EMBEDDING_PROFILE": "disabled",
            "GROVE_API_WORKERS": "1",
        }
    )
    try:
        tenant, _ = owned_tenant(database, api.url)
        data = bytes((i * 7) % 251 for i in range(2 * CHUNK_BYTES + 1000))
        file = uploaded(tenant.client, data, "application/pdf")
        assert download(tenant.client, file["id"]).content == data
        with superuser(stack) as conn:
            sizes = conn.execute(
                "SELECT octet_length(data) FROM file_chunks WHERE file_id = %s ORDER BY ordinal",
                (file["id"],),
            ).fetchall()
        assert [size for (size,) in sizes] == [CHUNK_BYTES, CHUNK_BYTES, 1000]
    finally:
        api.stop()


def test_a_replay_returns_the_first_result_and_stores_nothing_twice(
    account: Account, stack: OwnerStack
) -> None:
    operation = str(uuid.uuid4())
    first = upload(account.key, b"once", operationId=operation)
    assert first.status_code == 201
    replay = upload(account.key, b"once", headers={"Idempotency-Key": operation})
    assert replay.status_code == 200
    assert data_of(replay) == data_of(first)
    other = upload(account.key, b"twice", operationId=operation)
    assert other.status_code == 409
    assert error_of(other)["code"] == "idempotency_conflict"
    renamed = upload(account.key, b"once", operationId=operation, name="other.txt")
    assert error_of(renamed)["code"] == "idempotency_conflict"
    assert listed(account.key) == [data_of(first)["id"]]
    with superuser(stack) as conn:
        counts = conn.execute(
            "SELECT (SELECT count(*) FROM files WHERE account_id = %(a)s),"
            " (SELECT count(*) FROM file_chunks WHERE account_id = %(a)s)",
            {"a": account.tenant.account_id},
        ).fetchone()
    assert counts == (1, 1)

    version_op = str(uuid.uuid4())
    path = f"{FILES}/{data_of(first)['id']}"
    v2 = upload(account.key, b"two", path=path, operationId=version_op)
    v2_again = upload(account.key, b"two", path=path, operationId=version_op)
    assert v2.status_code == v2_again.status_code == 200
    assert data_of(v2) == data_of(v2_again) and data_of(v2)["version"] == 2

    deleted = account.key.delete(path)
    assert deleted.status_code == 200
    gone = upload(account.key, b"once", operationId=operation)
    assert gone.status_code == 410


def test_files_live_in_a_notebook_scope_and_keys_see_only_theirs(account: Account) -> None:
    work, home = account.tenant.notebook("work"), account.tenant.notebook("home")
    in_work = uploaded(account.key, b"work doc", projectId=work)
    in_home = uploaded(account.key, b"home doc", projectId=home)
    personal = uploaded(account.key, b"personal doc", projectId="personal")
    assert (in_work["projectId"], personal["projectId"]) == (work, None)

    work_key = account.tenant.key("work only", personal=False, notebook_ids=[UUID(work)])
    assert listed(work_key) == [in_work["id"]]
    assert download(work_key, in_work["id"]).content == b"work doc"
    for hidden in (in_home["id"], personal["id"]):
        assert work_key.get(f"{FILES}/{hidden}").status_code == 404
        assert download(work_key, hidden).status_code == 404
        assert upload(work_key, b"v2", path=f"{FILES}/{hidden}").status_code == 404
        assert work_key.delete(f"{FILES}/{hidden}").status_code == 404
    for scope in (home, "personal", None):
        params: dict[str, Any] = {} if scope is None else {"projectId": scope}
        refused = upload(work_key, b"elsewhere", **params)
        assert refused.status_code == 404, scope
        assert error_of(refused)["code"] == "not_found"
    assert upload(work_key, b"mine", projectId=work).status_code == 201

    reader = account.tenant.key("reader", personal=True, all_notebooks=True, read_only=True)
    refused = upload(reader, b"read only")
    assert refused.status_code == 403
    assert error_of(refused)["code"] == "forbidden"
    assert reader.delete(f"{FILES}/{personal['id']}").status_code == 403
    assert set(listed(account.session)) >= {in_work["id"], in_home["id"], personal["id"]}


def test_another_tenant_sees_nothing(stack: OwnerStack) -> None:
    owner, stranger = new_account(stack), new_account(stack)
    notebook = owner.tenant.notebook("private")
    file = uploaded(owner.key, b"secret", projectId=notebook)
    for client in (stranger.key, stranger.session):
        assert listed(client) == []
        assert client.get(f"{FILES}/{file['id']}").status_code == 404
        assert download(client, file["id"]).status_code == 404
        assert upload(client, b"x", path=f"{FILES}/{file['id']}").status_code == 404
        assert client.delete(f"{FILES}/{file['id']}").status_code == 404
        assert upload(client, b"x", projectId=notebook).status_code == 404
    assert download(owner.key, file["id"]).content == b"secret"


def test_delete_hides_the_file_everywhere(account: Account) -> None:
    kept = uploaded(account.key, b"kept")
    dropped = uploaded(account.key, b"dropped")
    deleted = account.key.delete(f"{FILES}/{dropped['id']}")
    assert deleted.status_code == 200
    assert data_of(deleted) == {"id": dropped["id"], "deleted": True}
    assert listed(account.key) == [kept["id"]]
    assert account.key.get(f"{FILES}/{dropped['id']}").status_code == 404
    assert download(account.key, dropped["id"]).status_code == 404
    assert account.key.delete(f"{FILES}/{dropped['id']}").status_code == 404


def test_the_list_pages_newest_first_with_signed_cursors(account: Account) -> None:
    ids = [uploaded(account.key, f"file {i}".encode(), name=f"f{i}.txt")["id"] for i in range(5)]
    seen: list[str] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = data_of(account.key.get(FILES, params=params))
        seen += [item["id"] for item in page["items"]]
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert seen == list(reversed(ids))
    first = data_of(account.key.get(FILES, params={"limit": 1}))["nextCursor"]
    other_key = account.tenant.key("second")
    foreign = other_key.get(FILES, params={"limit": 1, "cursor": first})
    assert error_of(foreign)["code"] == "invalid_cursor"
    assert account.key.get(FILES, params={"limit": 101}).status_code == 400


def storage_of(client: Client) -> dict[str, Any]:
    response = client.get("/v1/storage")
    assert response.status_code == 200, response.text
    return data_of(response)  # type: ignore[no-any-return]


TRUTH = """
    SELECT
      (SELECT count(*) FROM memories WHERE account_id = %(a)s AND file_id IS NULL)
        AS notes_items,
      (SELECT coalesce(sum(octet_length(content)), 0) FROM memories
        WHERE account_id = %(a)s AND file_id IS NULL) AS notes_bytes,
      (SELECT count(*) FROM memories WHERE account_id = %(a)s AND file_id IS NOT NULL)
        AS passages_items,
      (SELECT coalesce(sum(octet_length(content)), 0) FROM memories
        WHERE account_id = %(a)s AND file_id IS NOT NULL) AS passages_bytes,
      (SELECT count(*) FROM memory_revisions WHERE account_id = %(a)s) AS revisions_items,
      (SELECT coalesce(sum(octet_length(content)), 0) FROM memory_revisions
        WHERE account_id = %(a)s) AS revisions_bytes,
      (SELECT count(*) FROM files WHERE account_id = %(a)s) AS files_items,
      (SELECT coalesce(sum(octet_length(data)), 0) FROM file_chunks
        WHERE account_id = %(a)s) AS files_bytes,
      (SELECT count(*) FROM conversations WHERE account_id = %(a)s) AS conversations_items
"""


def assert_never_under_the_truth(stack: OwnerStack, account: Account) -> dict[str, Any]:
    # The truth first: rows are only ever added (deletes are soft), so the counters read
    # after it hold at least as much, even while a worker extracts passages meanwhile.
    with superuser(stack) as conn:
        cur = conn.cursor(row_factory=psycopg.rows.dict_row)
        truth = cur.execute(TRUTH, {"a": account.tenant.account_id}).fetchone()
    counters = storage_of(account.session)
    assert truth is not None
    for name, value in truth.items():
        kind, _, measure = name.rpartition("_")
        assert counters[kind][measure] >= value, name
    return counters


def test_storage_is_owner_only_and_never_under_the_truth(
    account: Account, stack: OwnerStack
) -> None:
    refused = account.key.get("/v1/storage")
    assert refused.status_code == 403
    assert error_of(refused)["code"] == "owner_session_required"

    empty = assert_never_under_the_truth(stack, account)
    assert empty["files"] == {"items": 0, "bytes": 0}
    assert set(empty) == {
        "notes",
        "passages",
        "revisions",
        "embeddings",
        "files",
        "conversations",
        "projectRecords",
    }
    note = account.key.save("we deploy on tuesdays")
    account.key.patch(f"/v1/memories/{note['id']}", {"content": "we deploy on wednesdays"})
    file = uploaded(account.key, b"a" * 3000, "text/plain")
    upload(account.key, b"b" * 2000, "text/plain", path=f"{FILES}/{file['id']}")
    after = assert_never_under_the_truth(stack, account)
    # Two revisions of the note, and one for each passage a worker may have extracted.
    assert after["notes"]["items"] == 1 and after["revisions"]["items"] >= 2
    assert after["files"]["items"] == 1
    assert after["files"]["bytes"] >= 5000  # both versions are kept
    assert after["notes"]["bytes"] >= len("we deploy on wednesdays")

    account.key.delete(f"{FILES}/{file['id']}")
    account.key.post("/v1/memories/forget", {"ids": [note["id"]]})
    deleted = assert_never_under_the_truth(stack, account)
    assert deleted["files"]["bytes"] >= after["files"]["bytes"]  # retained, still counted
    assert deleted["notes"]["items"] == 1


def test_rows_of_files_are_invisible_to_another_accounts_transaction(
    account: Account, stack: OwnerStack
) -> None:
    uploaded(account.key, b"tenant data")
    other = new_account(stack)
    with psycopg.connect(stack.database.runtime_url) as conn:
        for table in ("files", "file_chunks"):
            with conn.transaction():
                set_tenant(conn, other.tenant.account_id)
                assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,)
            with conn.transaction():
                assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,)
            with conn.transaction():
                set_tenant(conn, account.tenant.account_id)
                assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (1,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege), conn.transaction():
            set_tenant(conn, other.tenant.account_id)
            conn.execute(
                "INSERT INTO files (account_id, id, name, media_type, size_bytes, sha256)"
                " VALUES (%s, %s, 'x', 'text/plain', 0, %s)",
                (account.tenant.account_id, uuid.uuid4(), hashlib.sha256(b"").digest()),
            )


def test_project_records_of_the_accounts_pools_are_counted(account: Account) -> None:
    session = account.session
    org = data_of(session.post("/v1/orgs", {"name": "Acme"}))["id"]
    project = data_of(session.post(f"/v1/orgs/{org}/projects", {"name": "Rocket"}))["id"]
    body = "We deploy on Tuesdays after the standup."
    written = session.put(
        f"/v1/orgs/{org}/projects/{project}/memory/entry",
        {
            "key": "deploy.day",
            "title": "Deploy day",
            "body": body,
            "kind": "fact",
            "provenance": {
                "source": "slack",
                "ref": "https://chat.example/c/123",
                "verification": "unverified",
                "observedAt": "2026-03-01T09:00:00Z",
            },
        },
    )
    assert written.status_code == 200, written.text
    records = storage_of(session)["projectRecords"]
    assert records["items"] == 1
    assert records["bytes"] >= len(body) + len("Deploy day") + len("deploy.day")
