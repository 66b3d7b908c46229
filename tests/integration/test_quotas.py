"""Per-account quotas (issue 18 #3): PostgreSQL counts notes, their bytes, notebooks,
shares and conversations and refuses growth past a limit on every path (REST, MCP, in
the same statement as the write); defaults come from the services' settings, an
account's own limits from ``grove accounts quota``. Project pools have a record limit."""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
import requests

from grove_contracts.project_memory import WriteRecordRequest
from grove_db import embedded
from grove_db.errors import QuotaExceeded
from grove_db.pool import open_pool
from grove_memory import project_memory as pm
from grove_memory.store import Store
from tests.integration.test_mcp import call
from tests.integration.test_mcp import error_of as tool_error
from tests.integration.test_owner import OwnedAccount, Provider, owned_tenant
from tests.integration.test_project_memory_sql import project_with
from tests.support.clients import data_of, error_of, race
from tests.support.processes import Running, run_script, start_api, start_mcp

DEFAULTS = {
    "GROVE_QUOTA_NOTES": "4",
    "GROVE_QUOTA_NOTE_BYTES": "1000",
    "GROVE_QUOTA_NOTEBOOKS": "2",
    "GROVE_QUOTA_SHARES": "1",
    "GROVE_QUOTA_CONVERSATIONS": "1",
}


@dataclass
class Stack:
    provider: Provider
    api: Running
    mcp: Running
    database: embedded.EmbeddedDatabase


@pytest.fixture(scope="module")
def stack(database: embedded.EmbeddedDatabase) -> Iterator[Stack]:
    provider = Provider()
    env = {
        "GROVE_DATABASE_URL": database.runtime_url,
        "GROVE_EMBEDDING_PROFILE": "disabled",
        "GROVE_API_WORKERS": "2",
        **DEFAULTS,
        **provider.env(),
    }
    api = start_api(env)
    mcp = start_mcp(env)
    yield Stack(provider, api, mcp, database)
    mcp.stop()
    api.stop()
    provider.close()


@pytest.fixture
def owner(stack: Stack) -> OwnedAccount:
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
    stack: Stack, owner: OwnedAccount
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


def test_mcp_saves_obey_the_same_limit(stack: Stack, owner: OwnedAccount) -> None:
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
    stack: Stack, owner: OwnedAccount
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
