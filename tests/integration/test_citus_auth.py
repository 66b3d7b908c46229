"""Credentials, connections, share links and usage on a Citus cluster (``citus_database``).

An API key or a share link is presented before its account is known: it is found through
its lookup table, distributed by its hash (migration 0052), and every statement after
that names the account as a value. These tests run grove-api (with the development
identity provider, for owner sessions) and grove-share on the coordinator under the
cluster's fan-out guard (``tests/support/cluster.py``), so a statement of theirs that
reads or writes more than one shard fails its request. They prove: keys authenticate
through one lookup task and a revoked key is refused; the owner lists, creates, edits
and revokes keys and connections; an agent's OAuth connection is requested, approved and
used; links are made, opened through grove-share and revoked; usage and quotas are
counted on the account's node; and no key, session or link of one account reaches
another account's notes.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
import requests

from grove_auth import accounts, devissuer, keys, oauth, sessions
from grove_cli import admin
from grove_cli.dev import dev_identity
from grove_db import embedded
from grove_db.pool import open_pool, set_tenant, transaction
from tests.support.clients import Client, data_of, error_of
from tests.support.keys import SECRET
from tests.support.processes import free_port, start_api, start_console
from tests.support.tenants import Tenant, new_tenant

#: The share quota of this module's api: a boundary the test reaches.
SHARE_QUOTA = 2


@dataclass
class Owner:
    """An account with a full-access key and its owner's session on the cluster."""

    tenant: Tenant
    subject: str
    session: Client

    @property
    def key(self) -> Client:
        return self.tenant.client


@dataclass
class Cluster:
    """grove-api with owner sessions and grove-share, both on the coordinator."""

    database: embedded.EmbeddedDatabase
    api: str
    share: str
    issuer: str
    signing_key: Path
    #: The website's origin the api trusts: grove-console is started there by its test.
    console_port: int
    identity: dict[str, str]

    def owner(self) -> Owner:
        tenant = new_tenant(self.database, self.api)
        subject = f"owner-{uuid.uuid4().hex[:12]}"
        admin.add_owner(self.database.migration_url, tenant.account_id, self.issuer, subject)
        claims = devissuer.owner_claims(devissuer.OWNER_AUDIENCE)
        token = devissuer.token(self.signing_key, self.issuer, subject, claims)
        return Owner(tenant, subject, Client(self.api, token))


@pytest.fixture(scope="module")
def cluster(
    citus_database: embedded.EmbeddedDatabase,
    citus_share: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Cluster]:
    port, console_port = free_port(), free_port()
    url = f"http://127.0.0.1:{port}"
    signing_key = tmp_path_factory.mktemp("citus-auth") / "dev-issuer.pem"
    identity = {
        **dev_identity(url, "http://127.0.0.1:1/mcp", f"http://127.0.0.1:{console_port}"),
        "GROVE_DEV_ISSUER_KEY": str(signing_key),
    }
    api = start_api(
        {
            "GROVE_DATABASE_URL": citus_database.runtime_url,
            "GROVE_API_PORT": str(port),
            "GROVE_API_WORKERS": "1",
            "GROVE_EMBEDDING_PROFILE": "disabled",
            **identity,
            "GROVE_SHARE_PUBLIC_URL": citus_share,
            "GROVE_QUOTA_SHARES": str(SHARE_QUOTA),
        }
    )
    issuer = identity["GROVE_OIDC_ISSUER"]
    yield Cluster(citus_database, url, citus_share, issuer, signing_key, console_port, identity)
    api.stop()


def ok(response: requests.Response, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return data_of(response)


def plan(database: embedded.EmbeddedDatabase, statement: str, values: Any) -> str:
    """Citus's plan of one statement, as the superuser."""
    with psycopg.connect(database.grove_superuser_url) as conn:
        rows = conn.execute(f"EXPLAIN {statement}", values).fetchall()
    return "\n".join(row[0] for row in rows)


def test_keys_are_found_by_one_lookup_task_and_managed_by_their_owner_on_the_cluster(
    cluster: Cluster,
) -> None:
    a, b = cluster.owner(), cluster.owner()
    note = a.key.save("kumquat orchard notes")["id"]
    assert [n["id"] for n in ok(a.key.get("/v1/memories"))["items"]] == [note]
    # The key's hash names its account in the lookup table, on one node; the key itself
    # is then read naming that account: each one task.
    digest = keys.hash_key(keys.derive_secret(SECRET, "api-key"), a.key.key or "")
    with psycopg.connect(cluster.database.grove_superuser_url) as conn:
        found = conn.execute(keys.FIND_ACCOUNT, (digest,)).fetchone()
    assert found == (a.tenant.account_id,)
    assert "Task Count: 1" in plan(cluster.database, keys.FIND_ACCOUNT, (digest,))
    assert "Task Count: 1" in plan(cluster.database, keys.FIND_KEY, (a.tenant.account_id, digest))

    # The owner lists, creates, narrows and revokes keys and connections.
    listed = ok(a.session.get("/v1/connections"))["items"]
    assert [c["keyPrefix"] for c in listed] == [(a.key.key or "")[:12]]
    created = ok(a.session.post("/v1/keys", {"name": "reader"}), 201)
    extra = a.key.with_key(created["key"])
    assert ok(extra.get(f"/v1/memories/{note}"))["id"] == note
    connection = created["connection"]
    narrowed = a.session.patch(
        f"/v1/connections/{connection['id']}",
        {
            "grants": {"personal": True, "capabilities": ["memory:read"]},
            "expectedState": connection["state"],
        },
    )
    assert ok(narrowed)["grants"]["capabilities"] == ["memory:read"]
    assert extra.post("/v1/memories", {"content": "x", "kind": "fact"}).status_code == 403
    assert {k["id"] for k in ok(a.session.get("/v1/keys"))["items"]} == {
        str(a.tenant.key_id),
        created["id"],
    }
    assert ok(a.session.delete(f"/v1/keys/{created['id']}"))["status"] == "revoked"
    assert error_of(extra.get("/v1/memories"))["code"] == "unauthorized"
    assert a.key.get("/v1/memories").status_code == 200

    # Another account's owner and keys reach none of it.
    assert b.session.delete(f"/v1/keys/{a.tenant.key_id}").status_code == 404
    assert b.session.delete(f"/v1/connections/{connection['id']}").status_code == 404
    assert b.key.get(f"/v1/memories/{note}").status_code == 404
    assert ok(b.key.get("/v1/memories"))["items"] == []
    assert a.key.get("/v1/memories").status_code == 200


def test_a_first_sign_in_and_an_agents_oauth_connection_work_on_the_cluster(
    cluster: Cluster,
) -> None:
    # A new identity gets its account (GROVE_OIDC_PROVISIONING=personal), once.
    subject = f"first-{uuid.uuid4().hex[:12]}"
    pool = open_pool(cluster.database.runtime_url)
    try:
        provisioned = []
        for _ in range(2):
            with transaction(pool) as conn:
                provisioned.append(sessions.find_account(conn, cluster.issuer, subject, "personal"))
    finally:
        pool.close()
    assert provisioned[0] == provisioned[1]
    assert (
        admin.account_of_owner(cluster.database.migration_url, cluster.issuer, subject)
        == (provisioned[0])
    )

    a = cluster.owner()
    config = oauth.AgentConfig(
        issuer=cluster.issuer, audience="http://127.0.0.1:1/mcp", website_origin="http://w"
    )
    claims = {"sub": a.subject, "client_id": f"agent-{uuid.uuid4().hex[:8]}", "iat": 0}
    pool = open_pool(cluster.database.runtime_url)
    try:
        pending = oauth.agent_principal(pool, config, claims)
        assert not pending.can_read and pending.approval_url
        oauth.describe_client(pool, pending, "Kumquat Agent", "1.0")
        oauth.record_attempt(pool, pending, "remember", "write", None)
        request_id = pending.approval_url.rsplit("=", 1)[1]
        asked = ok(a.session.get(f"/v1/connections/requests/{request_id}"))
        assert (asked["clientName"], asked["attempts"][0]["tool"]) == ("Kumquat Agent", "remember")
        approve = {"grants": {"personal": True, "capabilities": ["memory:read"]}}
        path = f"/v1/connections/requests/{request_id}/approve"
        approved = ok(a.session.post(path, approve))
        assert approved["status"] == "active"
        granted = oauth.agent_principal(pool, config, claims)
        assert granted.can_read and granted.connection_id == pending.connection_id
        ok(a.session.delete(f"/v1/connections/{approved['id']}"))
        assert oauth.agent_principal(pool, config, claims).revoked
    finally:
        pool.close()


def test_links_open_through_grove_share_on_the_cluster_and_only_their_own_notes(
    cluster: Cluster,
) -> None:
    a, b = cluster.owner(), cluster.owner()
    note = a.key.save("persimmon harvest plan")["id"]
    notebook = a.tenant.notebook("orchard")
    a.key.save("quince rootstock", projectId=notebook)
    a.key.save("quince interstock", projectId=notebook)
    b.key.save("foreign medlar note")
    by_note = ok(a.session.post("/v1/shares", {"target": {"type": "note", "id": note}}), 201)
    by_notebook = ok(
        a.session.post("/v1/shares", {"target": {"type": "notebook", "id": notebook}}), 201
    )
    # The share quota is counted on the account's node, at its boundary.
    over = a.session.post("/v1/shares", {"target": {"type": "note", "id": note}})
    assert error_of(over)["code"] == "quota_exceeded", over.text
    # b cannot share a's note, nor see or revoke a's links.
    assert b.session.post("/v1/shares", {"target": {"type": "note", "id": note}}).status_code == 404
    assert ok(b.session.get("/v1/shares"))["items"] == []
    assert b.session.delete(f"/v1/shares/{by_note['id']}").status_code == 404

    def opened(share: dict[str, Any], rest: str = "") -> requests.Response:
        return requests.get(
            f"{cluster.share}/public/shares/{share['token']}{rest}",
            headers={"Accept": "application/json"},
            timeout=30,
        )

    page = ok(opened(by_note))
    assert [n["content"] for n in page["notes"]] == ["persimmon harvest plan"]
    page = ok(opened(by_notebook))
    assert [n["content"] for n in page["notes"]] == ["quince interstock", "quince rootstock"]
    # A page at a time: the signed cursor's next page reads the account's notes after it.
    first = ok(opened(by_notebook, "?limit=1"))
    assert [n["content"] for n in first["notes"]] == ["quince interstock"]
    rest = ok(opened(by_notebook, f"/notes?limit=1&cursor={first['nextCursor']}"))
    assert [n["content"] for n in rest["notes"]] == ["quince rootstock"]
    assert opened({"token": "x" * 43}).status_code == 404
    listed = ok(a.session.get("/v1/shares"))["items"]
    assert {s["targetName"] for s in listed} == {"persimmon harvest plan", "orchard"}
    assert ok(a.session.delete(f"/v1/shares/{by_note['id']}"))["status"] == "revoked"
    assert opened(by_note).status_code == 404
    assert ok(opened(by_notebook))["notes"]
    # Revoking made room under the quota again.
    ok(a.session.post("/v1/shares", {"target": {"type": "note", "id": note}}), 201)
    with psycopg.connect(cluster.database.runtime_url) as conn, conn.transaction():
        set_tenant(conn, a.tenant.account_id)
        usage = conn.execute(
            "SELECT kind, items FROM account_usage WHERE account_id = %s AND kind <> 'notebooks'"
            " ORDER BY kind",
            (a.tenant.account_id,),
        ).fetchall()
    assert usage == [("notes", 3), ("shares", 2)]


def test_an_owner_deletes_the_account_on_the_cluster_and_nothing_of_another(
    cluster: Cluster,
) -> None:
    a, b = cluster.owner(), cluster.owner()
    note = a.key.save("loquat grafting notes")["id"]
    link = ok(a.session.post("/v1/shares", {"target": {"type": "note", "id": note}}), 201)
    kept = b.key.save("fig pruning notes")["id"]
    kept_link = ok(b.session.post("/v1/shares", {"target": {"type": "note", "id": kept}}), 201)
    gone = a.session.delete("/v1/account", json={"confirmation": accounts.CONFIRMATION})
    assert ok(gone)["deleted"] is True
    assert error_of(a.key.get("/v1/memories"))["code"] == "unauthorized"
    page = f"{cluster.share}/public/shares/{link['token']}"
    assert requests.get(page, timeout=30).status_code == 404
    # The other account's key, note and link are untouched.
    assert ok(b.key.get(f"/v1/memories/{kept}"))["id"] == kept
    page = f"{cluster.share}/public/shares/{kept_link['token']}"
    assert requests.get(page, timeout=30).status_code == 200


def test_the_website_shows_one_owners_pages_on_the_cluster(cluster: Cluster) -> None:
    a, b = cluster.owner(), cluster.owner()
    note = a.key.save("apricot thinning notes")["id"]
    ok(a.session.post("/v1/shares", {"target": {"type": "note", "id": note}}), 201)
    theirs = b.tenant.notebook("damson shelf")
    foreign = b.key.save("foreign damson notes", projectId=theirs)["id"]
    conversation = str(uuid.uuid4())
    ok(b.session.post("/v1/conversations", {"id": conversation}), 201)
    console = start_console(
        cluster.database,
        cluster.console_port,
        {**cluster.identity, "GROVE_CONSOLE_API_URL": cluster.api},
    )
    try:
        browser = requests.Session()
        home = browser.get(f"{console.url}/", timeout=30)
        csrf = re.search(r'name="csrf" value="([^"]+)"', home.text)
        assert csrf is not None, home.text
        signed_in = browser.post(
            f"{console.url}/dev/login",
            data={"subject": a.subject, "csrf": csrf.group(1), "next": "/connections"},
            timeout=30,
        )
        assert signed_in.status_code == 200, signed_in.text
        assert (a.key.key or "")[:12] in signed_in.text
        expected = {
            "/notes": "apricot thinning notes",
            f"/notes/{note}": "apricot thinning notes",
            "/shares": "apricot thinning notes",
            "/account": "Delete my account",
            "/start": "Get started",
        }
        for path, text in expected.items():
            page = browser.get(f"{console.url}{path}", timeout=30)
            assert page.status_code == 200, (path, page.text)
            assert text in page.text, path
            assert "damson" not in page.text, path
        # The other account's pages and forms: not found, and its note is unchanged.
        for path in (f"/notes/{foreign}", f"/notebooks/{theirs}", f"/ask/{conversation}"):
            page = browser.get(f"{console.url}{path}", timeout=30)
            assert page.status_code == 404, (path, page.text)
            assert "damson" not in page.text, path
        searched = browser.get(f"{console.url}/notes?q=damson", timeout=30)
        assert searched.status_code == 200 and "foreign damson" not in searched.text
        signed_csrf = re.search(r'name="csrf" value="([^"]+)"', searched.text)
        assert signed_csrf is not None, searched.text
        forget = browser.post(
            f"{console.url}/notes/{foreign}/forget",
            data={"csrf": signed_csrf.group(1), "confirmed": "1"},
            timeout=30,
        )
        assert forget.status_code == 404, forget.text
        assert ok(b.key.get(f"/v1/memories/{foreign}"))["version"] == 1
    finally:
        console.stop()
