"""Per-account quotas (issue 18 #3): PostgreSQL counts notes, their bytes, notebooks,
shares and conversations and refuses growth past a limit on every path (REST, MCP, in
the same statement as the write); defaults come from the services' settings, an
account's own limits from ``grove accounts quota``. Project pools have a record limit.
Files (issue 48 #6): every stored byte of every version counts until the worker purges
it (a replaced version after its retention, a deleted file after the restoration
window), and the storage view shows the same count."""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import psycopg
import pytest
import requests

from grove_auth import accounts
from grove_auth.principal import Principal
from grove_cli import admin
from grove_contracts.files import StorageCounter
from grove_contracts.project_memory import WriteRecordRequest
from grove_db import embedded, queue
from grove_db.errors import QuotaExceeded
from grove_db.pool import open_pool, transaction
from grove_memory.files import files
from grove_memory.files.blobs import PostgresBlobs
from grove_memory.orgs import project_memory as pm
from grove_memory.store import Store
from grove_worker import sweeps
from tests.support.clients import data_of, error_of, race
from tests.support.files import FILES, upload, uploaded
from tests.support.mcp import call
from tests.support.mcp import error_of as tool_error
from tests.support.owners import McpStack, OwnedAccount, mcp_stack, owned_tenant
from tests.support.processes import run_script
from tests.support.teams import project_with
from tests.support.tenants import owner_of

DEFAULTS = {
    "GROVE_QUOTA_NOTES": "4",
    "GROVE_QUOTA_NOTE_BYTES": "1000",
    "GROVE_QUOTA_NOTEBOOKS": "2",
    "GROVE_QUOTA_SHARES": "1",
    "GROVE_QUOTA_CONVERSATIONS": "1",
    "GROVE_QUOTA_FILE_BYTES": "5000",
}


@pytest.fixture(scope="module")
def stack(database: embedded.EmbeddedDatabase) -> Iterator[McpStack]:
    with mcp_stack(database, {"GROVE_API_WORKERS": "2", **DEFAULTS}) as started:
        yield started


@pytest.fixture
def owner(stack: McpStack) -> OwnedAccount:
    tenant, subject = owned_tenant(stack.database, stack.api.url)
    return OwnedAccount(stack, tenant, subject)


def save(owner: OwnedAccount, content: str) -> requests.Response:
    return owner.key.post("/v1/memories", {"content": content, "kind": "fact"})


def refused(response: requests.Response, limit: str) -> None:
    assert response.status_code == 403, response.text
    error = error_of(response)
    assert error["code"] == "quota_exceeded"
    assert limit in error["message"], error["message"]


def quota_cli(database: embedded.EmbeddedDatabase, *args: str) -> subprocess.CompletedProcess[str]:
    """``grove accounts quota ARGS`` as the administrator runs it."""
    return run_script(
        "grove",
        *("accounts", "quota", *args),
        env={"GROVE_MIGRATION_DATABASE_URL": database.migration_url},
    )


def grove(database: embedded.EmbeddedDatabase, *args: str) -> str:
    done = quota_cli(database, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def listed(owner: OwnedAccount) -> int:
    return len(data_of(owner.key.get("/v1/memories?limit=100"))["items"])


def test_the_default_note_limit_holds_at_its_boundary_and_forgetting_makes_room(
    owner: OwnedAccount,
) -> None:
    ids = [data_of(save(owner, f"note {i}"))["id"] for i in range(4)]
    refused(save(owner, "one too many"), "at most 4 notes")
    assert listed(owner) == 4  # nothing of the refused save is stored
    forgot = owner.key.post("/v1/memories/forget", {"ids": [ids[0]]})
    assert forgot.status_code == 200, forgot.text
    assert save(owner, "fits again").status_code == 201
    refused(save(owner, "and full again"), "at most 4 notes")
    # Correcting a note at the limit is not growth.
    corrected = owner.key.patch(f"/v1/memories/{ids[1]}", {"content": "note 1, corrected"})
    assert corrected.status_code == 200, corrected.text


def test_concurrent_saves_cannot_pass_the_limit_together(owner: OwnedAccount) -> None:
    client = owner.key

    def saving(i: int) -> Any:
        return lambda s: s.post(
            client.base + "/v1/memories",
            json={"content": f"racing note {i}", "kind": "fact"},
            headers=client.headers(),
            timeout=30,
        )

    responses = race([saving(i) for i in range(8)])
    assert sorted(r.status_code for r in responses) == [201] * 4 + [403] * 4
    assert listed(owner) == 4


def test_bytes_are_counted_in_utf8_and_only_growth_is_refused(owner: OwnedAccount) -> None:
    first = data_of(save(owner, "é" * 300))["id"]  # 600 bytes
    assert save(owner, "x" * 400).status_code == 201  # 1000 bytes: the limit passes
    refused(save(owner, "y"), "at most 1000 bytes of notes")
    grown = owner.key.patch(f"/v1/memories/{first}", {"content": "é" * 301})
    refused(grown, "at most 1000 bytes")
    shrunk = owner.key.patch(f"/v1/memories/{first}", {"content": "short"})
    assert shrunk.status_code == 200, shrunk.text
    assert save(owner, "fits now").status_code == 201


def test_notebooks_shares_and_conversations_have_limits(owner: OwnedAccount) -> None:
    session = owner.session
    for name in ("one", "two"):
        assert session.post("/v1/notebooks", {"name": name}).status_code == 201
    refused(session.post("/v1/notebooks", {"name": "three"}), "at most 2 notebooks")

    note = data_of(save(owner, "shared"))["id"]
    target = {"target": {"type": "note", "id": note}}
    share = session.post("/v1/shares", target)
    assert share.status_code == 201, share.text
    refused(session.post("/v1/shares", target), "at most 1 unrevoked share links")
    revoked = session.session.delete(
        session.base + f"/v1/shares/{data_of(share)['id']}", headers=session.headers(), timeout=30
    )
    assert revoked.status_code == 200, revoked.text
    assert session.post("/v1/shares", target).status_code == 201

    assert session.post("/v1/conversations", {"id": str(uuid.uuid4())}).status_code == 201
    refused(session.post("/v1/conversations", {"id": str(uuid.uuid4())}), "at most 1 conversations")


def test_an_accounts_own_limits_are_set_and_shown_by_the_cli(
    stack: McpStack, owner: OwnedAccount
) -> None:
    account = str(owner.tenant.account_id)
    shown = grove(stack.database, "--account", account, "--notes", "6", "--notebooks", "0")
    assert "notes          used 0            limit 6" in shown
    assert "notebooks      used 0            limit 0" in shown
    assert "note_bytes     used 0            limit default" in shown
    for i in range(6):
        assert save(owner, f"note {i}").status_code == 201
    refused(save(owner, "seventh"), "at most 6 notes")
    for name in ("a", "b", "c"):  # 0: no limit, whatever the default
        assert owner.session.post("/v1/notebooks", {"name": name}).status_code == 201
    shown = grove(stack.database, "--account", account, "--notes", "default")
    assert "notes          used 6            limit default" in shown
    refused(save(owner, "seventh"), "at most 4 notes")
    bad = quota_cli(stack.database, "--account", account, "--notes", "-1")
    assert bad.returncode == 2 and "a whole number" in bad.stderr
    missing = quota_cli(stack.database, "--account", str(uuid.uuid4()), "--notes", "1")
    assert missing.returncode == 1 and "no account" in missing.stderr


def test_mcp_saves_obey_the_same_limit(stack: McpStack, owner: OwnedAccount) -> None:
    for i in range(4):
        assert save(owner, f"note {i}").status_code == 201
    result = asyncio.run(
        call(stack.mcp.url, str(owner.key.key), "remember", {"content": "over", "kind": "fact"})
    )
    assert result.is_error
    error = tool_error(result)
    assert error["code"] == "quota_exceeded" and "at most 4 notes" in error["message"]
    assert listed(owner) == 4


def test_usage_is_counted_by_the_database_not_the_services(
    stack: McpStack, owner: OwnedAccount
) -> None:
    """The runtime role reads its usage but cannot change it or its limits."""
    save(owner, "counted")
    with psycopg.connect(stack.database.runtime_url) as conn:
        conn.execute(
            "SELECT set_config('grove.account_id', %s, false)", (str(owner.tenant.account_id),)
        )
        row = conn.execute("SELECT items, bytes FROM account_usage WHERE kind = 'notes'").fetchone()
        assert row == (1, len("counted"))
        for statement in (
            "UPDATE account_usage SET items = 0",
            "INSERT INTO account_quotas (account_id, kind, items)"
            " VALUES (grove_current_account(), 'notes', 0)",
            "SELECT grove_add_usage(grove_current_account(), 'notes', -5, 0)",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
            conn.rollback()
            conn.execute(
                "SELECT set_config('grove.account_id', %s, false)",
                (str(owner.tenant.account_id),),
            )


def test_a_project_pool_holds_at_most_its_record_limit(
    database: embedded.EmbeddedDatabase,
) -> None:
    principal, scope = project_with(database, 2)
    pool = open_pool(database.runtime_url)
    try:
        store = Store(pool=pool, cursor_secret=b"unused", max_project_records=3)

        def write(key: str) -> Any:
            body = WriteRecordRequest.model_validate(
                {
                    "key": key,
                    "title": "t",
                    "body": "b",
                    "kind": "fact",
                    "authority": "observed",
                    "provenance": {
                        "source": "test",
                        "ref": "r",
                        "verification": "unverified",
                        "observedAt": "2026-01-01T00:00:00Z",
                    },
                }
            )
            return pm.upsert(store, principal, scope, body)

        write("third")
        with pytest.raises(QuotaExceeded, match="at most 3 records"):
            write("fourth")
        write("third")  # replacing a record is not growth
        unlimited = Store(pool=pool, cursor_secret=b"unused")
        assert unlimited.max_project_records == 0
    finally:
        pool.close()


# --- files ---------------------------------------------------------------------------


def file_usage(database: embedded.EmbeddedDatabase, account: UUID) -> tuple[int, int]:
    """The account's counted file versions and bytes, as the quota sees them."""
    with psycopg.connect(database.grove_superuser_url) as conn:
        row = conn.execute(
            "SELECT items, bytes FROM account_usage WHERE account_id = %s AND kind = 'files'",
            (account,),
        ).fetchone()
    return (row[0], row[1]) if row else (0, 0)


def stored_files(owner: OwnedAccount) -> list[dict[str, Any]]:
    return data_of(owner.key.get(FILES))["items"]  # type: ignore[no-any-return]


def test_every_file_version_counts_and_one_byte_over_the_quota_stores_nothing(
    stack: McpStack, owner: OwnedAccount
) -> None:
    first = uploaded(owner.key, b"a" * 3000, name="a.txt")
    # A new version counts beside the old one: 3,000 + 2,000 lands exactly at the limit.
    second = upload(owner.key, b"b" * 2000, path=f"{FILES}/{first['id']}")
    assert second.status_code == 200, second.text
    assert file_usage(stack.database, owner.tenant.account_id) == (2, 5000)
    storage = data_of(owner.session.get("/v1/storage"))
    assert storage["files"] == {"items": 1, "bytes": 5000}  # what the quota counts
    before = stored_files(owner)

    refused(upload(owner.key, b"c", name="c.txt"), "at most 5000 bytes of files")
    refused(upload(owner.key, b"c", path=f"{FILES}/{first['id']}"), "at most 5000 bytes of files")
    assert stored_files(owner) == before  # still one file, at version 2
    original = owner.key.get(f"{FILES}/{first['id']}/original")
    assert original.content == b"b" * 2000
    assert file_usage(stack.database, owner.tenant.account_id) == (2, 5000)
    assert data_of(owner.session.get("/v1/storage"))["files"] == storage["files"]
    # Notes have their own limits: the file bytes take nothing from them.
    assert save(owner, "x" * 1000).status_code == 201

    # A deleted file's bytes stay counted until they are purged.
    assert owner.key.delete(f"{FILES}/{first['id']}").status_code == 200
    refused(upload(owner.key, b"c", name="c.txt"), "at most 5000 bytes of files")


def test_an_accounts_own_file_byte_limit_is_set_and_shown_by_the_cli(
    stack: McpStack, owner: OwnedAccount
) -> None:
    account = str(owner.tenant.account_id)
    shown = grove(stack.database, "--account", account, "--file-bytes", "6000")
    assert "file_bytes     used 0            limit 6000" in shown
    uploaded(owner.key, b"x" * 6000)
    refused(upload(owner.key, b"y"), "at most 6000 bytes of files")
    shown = grove(stack.database, "--account", account)
    assert "file_bytes     used 6000         limit 6000" in shown


@dataclass
class QuietFiles:
    """An account on a database no worker watches, limited to 5,000 bytes of files,
    whose replaced versions are kept 7 days."""

    store: Store
    owner: Principal
    url: str

    def upload(self, data: bytes, file_id: UUID | None = None) -> Any:
        body = files.Body.of([data], "text/plain")
        if file_id is None:
            return files.upload(
                self.store, PostgresBlobs(), self.owner, body, name="f.txt", notebook_id=None
            ).file
        return files.upload_version(self.store, PostgresBlobs(), self.owner, file_id, body)

    def counted(self) -> StorageCounter:
        """The storage view's files, checked against the quota's own count."""
        shown = files.storage(self.store, self.owner).files
        with psycopg.connect(self.url) as conn:
            row = conn.execute(
                "SELECT bytes FROM account_usage WHERE account_id = %s AND kind = 'files'",
                (self.owner.account_id,),
            ).fetchone()
        assert row is not None and row[0] == shown.bytes
        return shown

    def sweep(self, kind: str, days: float = 0) -> sweeps.SweepOutcome | None:
        """Run the ``kind`` jobs due ``days`` from now (the clock, injected); None if none."""
        later = datetime.now(UTC) + timedelta(days=days)
        jobs = queue.claim(self.store.pool, "test", None, 10, 60, [kind], now=later)
        return sweeps.run(self.store.pool, "test", jobs) if jobs else None


@pytest.fixture
def quiet_files(quiet: tuple[str, Any]) -> QuietFiles:
    url, pool = quiet
    migration = embedded.role_url(url, embedded.MIGRATION_ROLE)
    account = admin.create_account(migration, "files")
    admin.set_quotas(migration, account, {"file_bytes": 5000})
    store = Store(pool=pool, cursor_secret=b"x" * 32, file_version_retention_days=7)
    return QuietFiles(store, owner_of(account), url)


def test_a_replaced_version_is_purged_after_its_retention_and_frees_the_quota(
    quiet_files: QuietFiles,
) -> None:
    first = quiet_files.upload(b"a" * 3000)
    quiet_files.upload(b"b" * 2000, first.id)
    assert quiet_files.counted() == StorageCounter(items=1, bytes=5000)
    with pytest.raises(QuotaExceeded, match="at most 5000 bytes of files"):
        quiet_files.upload(b"c")

    assert quiet_files.sweep(queue.PURGE_FILE_VERSION, days=6.9) is None  # kept 7 days
    purged = quiet_files.sweep(queue.PURGE_FILE_VERSION, days=7.1)
    assert purged is not None and (purged.purged, purged.purged_bytes) == (1, 3000)
    assert quiet_files.counted() == StorageCounter(items=1, bytes=2000)
    original = files.original(quiet_files.store, PostgresBlobs(), quiet_files.owner, first.id)
    assert b"".join(original.chunks) == b"b" * 2000  # the current version is untouched
    assert quiet_files.upload(b"c" * 3000).sizeBytes == 3000  # room again


def test_a_deleted_files_bytes_are_purged_after_the_restoration_window(
    quiet_files: QuietFiles,
) -> None:
    kept = quiet_files.upload(b"k" * 1000)
    doomed = quiet_files.upload(b"a" * 2500)
    quiet_files.upload(b"b" * 1500, doomed.id)
    files.delete_file(quiet_files.store, quiet_files.owner, doomed.id)
    assert quiet_files.counted() == StorageCounter(items=2, bytes=5000)  # retained
    with pytest.raises(QuotaExceeded, match="at most 5000 bytes of files"):
        quiet_files.upload(b"c")
    assert quiet_files.sweep(queue.PURGE_FILE, days=59) is None  # 60 days to restore

    # Sixty-one days on: the test moves the deletion, and so its job, into the past.
    with psycopg.connect(quiet_files.url) as conn:
        conn.execute(
            "UPDATE files SET deleted_at = deleted_at - interval '61 days' WHERE id = %s",
            (doomed.id,),
        )
        conn.execute(
            "UPDATE jobs SET run_after = run_after - interval '61 days' WHERE kind = %s",
            (queue.PURGE_FILE,),
        )
    purged = quiet_files.sweep(queue.PURGE_FILE)
    assert purged is not None and (purged.purged, purged.purged_bytes) == (1, 4000)
    assert quiet_files.counted() == StorageCounter(items=2, bytes=1000)
    # The replaced version's own purge finds nothing left to do.
    late = quiet_files.sweep(queue.PURGE_FILE_VERSION, days=8)
    assert late is not None and (late.purged, late.skipped) == (0, 1)
    assert quiet_files.upload(b"c" * 4000).sizeBytes == 4000
    original = files.original(quiet_files.store, PostgresBlobs(), quiet_files.owner, kept.id)
    assert b"".join(original.chunks) == b"k" * 1000


def test_a_deleted_accounts_file_bytes_are_purged_after_the_restoration_window(
    quiet_files: QuietFiles,
) -> None:
    first = quiet_files.upload(b"a" * 3000)
    quiet_files.upload(b"b" * 1000, first.id)
    with transaction(quiet_files.store.pool, quiet_files.owner.account_id) as conn:
        accounts.mark_deleted(conn, quiet_files.owner.account_id)

    # The account's deletion ends its other jobs, not the purges: the replaced version's
    # bytes go after their retention, the rest when the restoration window ends.
    version = quiet_files.sweep(queue.PURGE_FILE_VERSION, days=7.1)
    assert version is not None and (version.purged, version.purged_bytes) == (1, 3000)
    assert quiet_files.sweep(queue.PURGE_FILE, days=59) is None
    with psycopg.connect(quiet_files.url) as conn:
        conn.execute(
            "UPDATE files SET deleted_at = deleted_at - interval '61 days' WHERE id = %s",
            (first.id,),
        )
    purged = quiet_files.sweep(queue.PURGE_FILE, days=61)
    assert purged is not None and (purged.purged, purged.purged_bytes) == (1, 1000)
    with psycopg.connect(quiet_files.url) as conn:
        left = conn.execute("SELECT count(*) FROM file_chunks WHERE file_id = %s", (first.id,))
        assert left.fetchone() == (0,)
