"""Owner sessions (OIDC JWTs checked against a JWKS served here with real keys) and the
owner-only connection and key routes."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
import psycopg
import pytest
import requests
from cryptography.hazmat.primitives import serialization

from grove_auth.errors import ProviderUnavailable, Unauthorized
from grove_auth.oauth import AgentConfig, agent_principal
from grove_auth.provider import Jwks
from grove_cli import admin
from grove_db import embedded
from grove_db.pool import open_pool
from tests.support import loopback
from tests.support.clients import Client, data_of, error_of
from tests.support.databases import superuser_sql
from tests.support.mcp import INITIALIZE, LIST_TOOLS, connect, mcp_post
from tests.support.mcp import error_of as tool_error
from tests.support.owners import (
    AUDIENCE,
    ISSUER,
    OWNER_AUDIENCE,
    WEBSITE,
    Provider,
    provider,
)
from tests.support.processes import Running, start_api, start_mcp, start_worker
from tests.support.scraping import scrape
from tests.support.tenants import Tenant, new_tenant
from tests.support.waiting import wait_until

__all__ = ["provider"]  # the fixture tests name


@dataclass
class Setup:
    provider: Provider
    api: Running
    tenant: Tenant
    subject: str

    def owner(self, **claims: Any) -> Client:
        return Client(self.api.url, self.provider.token(self.subject, **claims))


@pytest.fixture(scope="module")
def owner_api(database: embedded.EmbeddedDatabase, provider: Provider) -> Iterator[Running]:
    api = start_api(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_EMBEDDING_PROFILE": "disabled",
            "GROVE_API_WORKERS": "1",
            **provider.env(),
            "OPENAI_APPS_CHALLENGE": "challenge-token-123",
        }
    )
    yield api
    api.stop()


@pytest.fixture
def setup(database: embedded.EmbeddedDatabase, provider: Provider, owner_api: Running) -> Setup:
    provider.up = True
    tenant = new_tenant(database, owner_api.url)
    subject = f"user-{uuid.uuid4().hex[:8]}"
    admin.add_owner(database.migration_url, tenant.account_id, ISSUER, subject)
    return Setup(provider, owner_api, tenant, subject)


def test_owner_session_lists_the_accounts_connections(setup: Setup) -> None:
    never_used = setup.owner().get("/v1/connections").json()["data"]["items"][0]
    assert never_used["lastContactAt"] is None
    assert setup.tenant.client.get("/v1/memories").status_code == 200
    response = setup.owner().get("/v1/connections")
    assert response.status_code == 200, response.text
    items = response.json()["data"]["items"]
    assert [(c["id"], c["kind"], c["status"]) for c in items] == [
        (items[0]["id"], "api_key", "active")
    ]
    assert items[0]["keyPrefix"] == (setup.tenant.client.key or "")[:12]
    assert items[0]["lastContactAt"] is not None
    assert items[0]["state"] == never_used["state"]  # contact times are not state
    es256 = setup.owner(alg="ES256").get("/v1/connections")
    assert es256.status_code == 200


@pytest.mark.parametrize(
    "claims",
    [
        {"iss": "https://other-issuer.test"},
        {"aud": "https://another-api.test"},
        {"aud": None},
        {"exp": -120},  # seconds from now, resolved when the test runs
        {"exp": None},
        {"nbf": 3600},
        {"kid": "unknown-kid"},
    ],
    ids=[
        "issuer",
        "other-api",
        "no-audience",
        "expired",
        "no-exp",
        "not-yet-valid",
        "unknown-kid",
    ],
)
def test_invalid_owner_tokens_are_401(setup: Setup, claims: dict[str, Any]) -> None:
    # Times are relative: collection may happen minutes before the test runs.
    claims = {
        k: int(time.time()) + v if k in ("exp", "nbf") and v is not None else v
        for k, v in claims.items()
    }
    response = setup.owner(**claims).get("/v1/connections")
    assert response.status_code == 401, response.text
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


def test_the_api_takes_no_session_from_a_cookie_and_sets_none(setup: Setup) -> None:
    """The api's only credential is the Authorization header: a browser's cookie, even one
    holding a valid owner token, is no session (so no other site can ride on it)."""
    token = setup.provider.token(setup.subject)
    jar = {"grove_session": token, "access_token": token, "Authorization": f"Bearer {token}"}
    for path in ("/v1/connections", "/v1/memories"):
        response = requests.get(f"{setup.api.url}{path}", cookies=jar, timeout=30)
        assert response.status_code == 401, response.text
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
        assert "Set-Cookie" not in response.headers
    saved = requests.post(
        f"{setup.api.url}/v1/memories", json={"content": "From a cookie."}, cookies=jar, timeout=30
    )
    assert saved.status_code == 401, saved.text
    assert data_of(setup.tenant.client.get("/v1/memories"))["items"] == []
    # The control: the same token as a bearer works, and still no cookie is set.
    signed_in = setup.owner().get("/v1/connections")
    assert signed_in.status_code == 200 and "Set-Cookie" not in signed_in.headers
    for response in (
        setup.tenant.client.get("/v1/memories"),
        requests.get(setup.api.url + "/healthz", timeout=30),
    ):
        assert "Set-Cookie" not in response.headers


def test_a_keys_last_contact_is_written_at_most_once_a_minute(
    setup: Setup, database: embedded.EmbeddedDatabase
) -> None:
    def contact(age: str = "0 minutes") -> datetime:
        with psycopg.connect(database.grove_superuser_url) as conn:
            row = conn.execute(
                "UPDATE connections SET last_contact_at = last_contact_at - %s::interval"
                " WHERE account_id = %s RETURNING last_contact_at",
                (age, setup.tenant.account_id),
            ).fetchone()
        assert row is not None
        return row[0]  # type: ignore[no-any-return]

    assert setup.tenant.client.get("/v1/memories").status_code == 200
    first = contact()
    assert setup.tenant.client.get("/v1/memories").status_code == 200
    assert contact() == first  # within the minute: nothing written
    aged = contact("61 seconds")
    assert setup.tenant.client.get("/v1/memories").status_code == 200
    assert contact() > aged + timedelta(seconds=60)  # a minute on: written again


def test_an_agent_token_is_no_owner_session(setup: Setup) -> None:
    agent = setup.owner(aud=AUDIENCE, client_id="some-agent").get("/v1/connections")
    assert agent.status_code == 403
    assert error_of(agent)["code"] == "owner_session_required"


def test_standard_tokens_need_no_azp_or_sid(setup: Setup) -> None:
    # RFC 9068 access tokens name the client as client_id and carry no sid.
    assert setup.owner(azp=None, sid=None, client_id=None).get("/v1/connections").status_code == 200
    listed = setup.owner(aud=["https://another-api.test", OWNER_AUDIENCE]).get("/v1/connections")
    assert listed.status_code == 200


def test_per_provider_checks_apply_where_configured(
    database: embedded.EmbeddedDatabase, setup: Setup
) -> None:
    api = start_api(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_EMBEDDING_PROFILE": "disabled",
            "GROVE_API_WORKERS": "1",
            **setup.provider.env(),
            "GROVE_OIDC_AUTHORIZED_PARTY": "grove-console",
            "GROVE_OIDC_REQUIRE_SID": "true",
            "GROVE_OIDC_SUBJECT_CLAIM": "oid",  # as on Entra ID, whose sub is per app
        }
    )
    try:

        def status(**claims: Any) -> int:
            claims = {"sid": "s-1", "sub": "pairwise-for-this-app", "oid": setup.subject, **claims}
            token = setup.provider.token(setup.subject, **claims)
            return Client(api.url, token).get("/v1/connections").status_code

        assert status() == 200  # client_id names the website
        assert status(client_id=None, azp="grove-console") == 200
        assert status(client_id="someone-else") == 401
        assert status(client_id=None) == 401
        assert status(sid=None) == 401
        assert status(oid=None) == 401
        assert status(oid="pairwise-for-this-app") == 403  # owns nothing
    finally:
        api.stop()


def test_leeway_is_at_most_60_seconds(setup: Setup) -> None:
    recent = setup.owner(exp=int(time.time()) - 30).get("/v1/connections")
    assert recent.status_code == 200


def test_unsigned_and_hmac_tokens_are_refused(setup: Setup) -> None:
    now = int(time.time())
    claims = {"iss": ISSUER, "sub": setup.subject, "aud": OWNER_AUDIENCE, "exp": now + 300}
    unsigned = jwt.encode(claims, "", algorithm="none")  # "none" signs with no key
    public_pem = setup.provider.rsa.public_key().public_bytes(
        encoding=serialization.Encoding.PEM,
        format=serialization.PublicFormat.SubjectPublicKeyInfo,
    )
    hmac_with_public_key = _hs256(claims, public_pem)
    for token in (unsigned, hmac_with_public_key):
        response = Client(setup.api.url, token).get("/v1/connections")
        assert response.status_code == 401


def _hs256(claims: dict[str, Any], secret: bytes) -> str:
    """An HS256 token keyed with ``secret``, built by hand (PyJWT refuses PEM keys)."""

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    header = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}).encode())
    payload = b64(json.dumps(claims).encode())
    signature = hmac.new(secret, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{b64(signature)}"


def test_an_identity_without_an_account_is_told_what_to_do(setup: Setup) -> None:
    # A 403 that names the subject and the fix: a 401 would send clients into a login loop.
    stranger = Client(setup.api.url, setup.provider.token("nobody-owns-anything"))
    response = stranger.get("/v1/connections")
    assert response.status_code == 403, response.text
    error = error_of(response)
    assert error["code"] == "identity_not_provisioned"
    assert "nobody-owns-anything" in error["message"]
    assert "grove accounts owner" in error["message"]
    assert "WWW-Authenticate" not in response.headers


def test_provider_outage_is_503_not_401(database: embedded.EmbeddedDatabase, setup: Setup) -> None:
    # A fresh process has no keys cached: its first verification must reach the provider.
    setup.provider.up = False
    api = start_api(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_EMBEDDING_PROFILE": "disabled",
            "GROVE_API_WORKERS": "1",
            **setup.provider.env(),
        }
    )
    try:
        token = setup.provider.token(setup.subject)
        response = Client(api.url, token).get("/v1/connections")
        assert response.status_code == 503
        assert error_of(response)["code"] == "auth_provider_unavailable"
        assert "WWW-Authenticate" not in response.headers
        setup.provider.up = True
        # Refetching is limited to once a minute: still unavailable, never a 401.
        assert Client(api.url, token).get("/v1/connections").status_code == 503
    finally:
        setup.provider.up = True
        api.stop()


def test_keys_and_agents_cannot_reach_owner_routes(setup: Setup) -> None:
    key = setup.tenant.client
    connection = setup.owner().get("/v1/connections").json()["data"]["items"][0]["id"]
    for method, path, body in (
        ("get", "/v1/connections", None),
        ("patch", f"/v1/connections/{connection}", {"grants": {}}),
        ("delete", f"/v1/connections/{connection}", None),
        ("get", "/v1/keys", None),
        ("post", "/v1/keys", {"name": "escalate"}),
        ("delete", f"/v1/keys/{uuid.uuid4()}", None),
    ):
        response = key.session.request(
            method.upper(), key.base + path, json=body, headers=key.headers(), timeout=10
        )
        assert response.status_code == 403, (method, path)
        assert error_of(response)["code"] == "owner_session_required"


def test_grant_edit_is_a_compare_and_set_on_the_state(setup: Setup) -> None:
    owner = setup.owner()
    connection = owner.get("/v1/connections").json()["data"]["items"][0]
    read_only = {"personal": True, "allProjects": False, "capabilities": ["memory:read"]}
    stale = owner.patch(
        f"/v1/connections/{connection['id']}", {"grants": read_only, "expectedState": "stale"}
    )
    assert stale.status_code == 409
    assert error_of(stale)["code"] == "connection_conflict"
    assert (
        setup.tenant.client.post("/v1/memories", {"content": "c", "kind": "fact"}).status_code
        == 201
    )
    updated = owner.patch(
        f"/v1/connections/{connection['id']}",
        {"grants": read_only, "expectedState": connection["state"]},
    )
    assert updated.status_code == 200, updated.text
    assert updated.json()["data"]["state"] != connection["state"]
    # Takes effect on the very next request.
    denied = setup.tenant.client.post("/v1/memories", {"content": "c", "kind": "fact"})
    assert denied.status_code == 403
    without_state = owner.patch(f"/v1/connections/{connection['id']}", {"grants": {}})
    assert without_state.status_code == 200


def test_two_edits_from_the_same_state_cannot_both_win(
    setup: Setup, database: embedded.EmbeddedDatabase
) -> None:
    owner = setup.owner()
    connection = owner.get("/v1/connections").json()["data"]["items"][0]
    path = f"{owner.base}/v1/connections/{connection['id']}"
    edits = [
        {"personal": True, "allProjects": False, "capabilities": ["memory:read"]},
        {"personal": True, "allProjects": True, "capabilities": ["memory:read", "memory:write"]},
    ]
    results: list[requests.Response] = []
    with psycopg.connect(database.runtime_url) as held:
        # Hold the row so both edits read the same state and then queue on its lock.
        held.execute(
            "SELECT set_config('grove.account_id', %s, true)", (str(setup.tenant.account_id),)
        )
        held.execute("SELECT 1 FROM connections WHERE id = %s FOR UPDATE", (connection["id"],))
        threads = [
            threading.Thread(
                target=lambda g=grants: results.append(
                    requests.patch(
                        path,
                        json={"grants": g, "expectedState": connection["state"]},
                        headers=owner.headers(),
                        timeout=30,
                    )
                )
            )
            for grants in edits
        ]
        for thread in threads:
            thread.start()
        with psycopg.connect(database.superuser_url, autocommit=True) as watcher:
            wait_until(
                lambda: (
                    watcher.execute(
                        "SELECT count(*) AS n FROM pg_stat_activity"
                        " WHERE wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE%'"
                    ).fetchall()
                    == [(2,)]
                )
            )
        held.rollback()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(r.status_code for r in results) == [200, 409], [r.text for r in results]


def test_an_account_holds_at_most_its_live_connections(
    database: embedded.EmbeddedDatabase, provider: Provider, oauth_mcp: str
) -> None:
    api = start_api(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_EMBEDDING_PROFILE": "disabled",
            "GROVE_MAX_CONNECTIONS_PER_ACCOUNT": "2",
            **provider.env(),
        }
    )
    try:
        tenant = new_tenant(database, api.url)  # its first key: one live connection
        subject = f"user-{uuid.uuid4().hex[:8]}"
        admin.add_owner(database.migration_url, tenant.account_id, ISSUER, subject)
        owner = Client(api.url, provider.token(subject))
        key = {"name": "second", "grants": {"personal": True, "capabilities": ["memory:read"]}}
        second = owner.post("/v1/keys", key)
        assert second.status_code == 201, second.text
        third = owner.post("/v1/keys", {**key, "name": "third"})
        assert third.status_code == 403
        assert error_of(third)["code"] == "quota_exceeded" and "(2)" in error_of(third)["message"]
        # An agent may ask (pending asks hold nothing), but approving it needs room too.
        token = provider.token(subject, aud=AUDIENCE, client_id="capped-agent")
        asked = tool_error(mcp_call(oauth_mcp, token, "recall", {}))
        request_id = asked["approvalUrl"].split("request=")[1]
        approve = f"/v1/connections/requests/{request_id}/approve"
        refused = owner.post(approve, {"grants": {"personal": True}})
        assert error_of(refused)["code"] == "quota_exceeded"
        owner.delete(f"/v1/keys/{second.json()['data']['id']}")
        assert owner.post(approve, {"grants": {"personal": True}}).status_code == 200
        assert owner.post("/v1/keys", {**key, "name": "fourth"}).status_code == 403
    finally:
        api.stop()


def test_revocation_is_immediate_and_permanent(setup: Setup) -> None:
    owner = setup.owner()
    connection = owner.get("/v1/connections").json()["data"]["items"][0]
    assert (
        owner.session.delete(
            f"{owner.base}/v1/connections/{connection['id']}", headers=owner.headers(), timeout=10
        ).status_code
        == 200
    )
    assert setup.tenant.client.get("/v1/memories").status_code == 401
    again = owner.patch(f"/v1/connections/{connection['id']}", {"grants": {}})
    assert again.status_code == 409


def test_owner_creates_lists_and_revokes_keys(setup: Setup) -> None:
    owner = setup.owner()
    created = owner.post(
        "/v1/keys",
        {"name": "laptop", "grants": {"personal": True, "capabilities": ["memory:read"]}},
    )
    assert created.status_code == 201, created.text
    data = created.json()["data"]
    key = Client(setup.api.url, data["key"])
    assert key.get("/v1/memories").status_code == 200
    assert key.post("/v1/memories", {"content": "c", "kind": "fact"}).status_code == 403
    listed = owner.get("/v1/keys").json()["data"]["items"]
    assert data["id"] in [k["id"] for k in listed]
    assert data["key"] not in json.dumps(listed)
    assert (
        owner.session.delete(
            f"{owner.base}/v1/keys/{data['id']}", headers=owner.headers(), timeout=10
        ).status_code
        == 200
    )
    assert key.get("/v1/memories").status_code == 401


def test_grants_naming_a_foreign_notebook_are_refused(setup: Setup, make_tenant: Any) -> None:
    victim = make_tenant()
    foreign_notebook = victim.notebook("theirs")
    victim.client.save("in their notebook", projectId=foreign_notebook)
    owner = setup.owner()

    def state() -> tuple[Any, Any, Any]:
        """The victim's notebooks and notes, and the owner's connections."""
        return (
            data_of(victim.client.get("/v1/notebooks"))["items"],
            data_of(victim.client.get(f"/v1/memories?projectId={foreign_notebook}"))["items"],
            data_of(owner.get("/v1/connections"))["items"],
        )

    before = state()
    created = owner.post("/v1/keys", {"name": "x", "grants": {"projectIds": [foreign_notebook]}})
    assert created.status_code == 400
    # No key was made (with or without the grant), and nothing of theirs changed.
    assert state() == before
    assert [n["id"] for n in before[0]] == [foreign_notebook] and len(before[1]) == 1


def test_openai_apps_challenge_is_served_verbatim(owner_api: Running) -> None:
    response = requests.get(f"{owner_api.url}/.well-known/openai-apps-challenge", timeout=10)
    assert response.status_code == 200
    assert response.text == "challenge-token-123"
    assert response.headers["Content-Type"].startswith("text/plain")
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    head = requests.head(f"{owner_api.url}/.well-known/openai-apps-challenge", timeout=10)
    assert head.status_code == 200 and head.text == ""


def test_openai_apps_challenge_is_404_when_unset(api_url: str) -> None:
    response = requests.get(f"{api_url}/.well-known/openai-apps-challenge", timeout=10)
    assert response.status_code == 404


def test_api_serves_the_mcp_resource_metadata(owner_api: Running) -> None:
    document = requests.get(
        f"{owner_api.url}/.well-known/oauth-protected-resource/mcp", timeout=10
    ).json()
    assert document["authorization_servers"] == [ISSUER]
    assert document["bearer_methods_supported"] == ["header"]


def test_jwks_refetches_for_an_unknown_kid_at_most_once_a_minute(provider: Provider) -> None:
    now = [1000.0]
    jwks = Jwks(lambda: provider.url, clock=lambda: now[0])
    before = provider.fetches
    assert jwks.key("rsa-1") is not None
    for _ in range(3):
        with pytest.raises(Unauthorized):
            jwks.key("rotated-kid")
    assert provider.fetches - before == 1
    now[0] += 61
    with pytest.raises(Unauthorized):
        jwks.key("rotated-kid")
    assert provider.fetches - before == 2


@pytest.fixture
def jwks_provider() -> Iterator[Provider]:
    """A provider of its own: these tests change what its JWKS answers."""
    fake = Provider()
    yield fake
    fake.close()


def test_jwks_keys_expire_so_a_removed_key_stops_being_trusted(jwks_provider: Provider) -> None:
    now = [1000.0]
    jwks = Jwks(lambda: jwks_provider.url, clock=lambda: now[0])
    assert jwks.key("rsa-1") is not None
    jwks_provider.retired = {"rsa-1"}
    now[0] += 3599
    assert jwks.key("rsa-1") is not None  # kept for an hour without a Cache-Control
    assert jwks_provider.fetches == 1
    now[0] += 2
    with pytest.raises(Unauthorized):
        jwks.key("rsa-1")
    assert jwks_provider.fetches == 2


def test_jwks_honour_cache_control_within_bounds(jwks_provider: Provider) -> None:
    now = [1000.0]
    jwks = Jwks(lambda: jwks_provider.url, clock=lambda: now[0])
    jwks_provider.cache_control = "public, max-age=120"
    jwks.key("rsa-1")
    now[0] += 119
    jwks.key("rsa-1")
    assert jwks_provider.fetches == 1
    now[0] += 2
    jwks.key("rsa-1")
    assert jwks_provider.fetches == 2
    jwks_provider.cache_control = "no-store"  # kept a minute all the same
    now[0] += 121
    jwks.key("rsa-1")
    now[0] += 59
    jwks.key("rsa-1")
    assert jwks_provider.fetches == 3


def test_jwks_fetch_once_for_many_callers_and_old_keys_serve_meanwhile(
    jwks_provider: Provider,
) -> None:
    now = [1000.0]
    jwks = Jwks(lambda: jwks_provider.url, clock=lambda: now[0])
    jwks_provider.delay = 0.5

    def many(count: int) -> list[float]:
        took: list[float] = []

        def one() -> None:
            started = time.monotonic()
            assert jwks.key("ec-1") is not None
            took.append(time.monotonic() - started)

        threads = [threading.Thread(target=one) for _ in range(count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=10)
        assert len(took) == count
        return sorted(took)

    many(6)  # no keys yet: every caller waits for the one fetch
    assert jwks_provider.fetches == 1
    now[0] += 3601
    took = many(6)  # expired keys: one caller refetches, the others go on with the old
    assert jwks_provider.fetches == 2
    assert took[-1] >= 0.5 and took[-2] < 0.3


def test_jwks_keep_expired_keys_while_the_provider_is_down(jwks_provider: Provider) -> None:
    now = [1000.0]
    jwks = Jwks(lambda: jwks_provider.url, clock=lambda: now[0])
    jwks.key("rsa-1")
    jwks_provider.up = False
    now[0] += 3601
    assert jwks.key("rsa-1") is not None  # the refetch failed: the old keys stay in use
    assert jwks.key("rsa-1") is not None
    assert jwks_provider.fetches == 2  # and the next attempt waits a minute
    with pytest.raises(ProviderUnavailable):
        jwks.key("never-seen")


# --- agent OAuth tokens and the approval of new clients ------------------------------


@pytest.fixture(scope="module")
def oauth_mcp(database: embedded.EmbeddedDatabase, provider: Provider) -> Iterator[str]:
    running = start_mcp(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_EMBEDDING_PROFILE": "disabled",
            **provider.env(),
        },
        workers=1,
    )
    yield running.url
    running.stop()


def agent_token(setup: Setup, client_id: str | None = "claude-desktop", **claims: Any) -> str:
    claims = {"aud": AUDIENCE, "client_id": client_id, **claims}
    return setup.provider.token(setup.subject, **claims)


def mcp_call(url: str, token: str, name: str, arguments: dict[str, Any]) -> Any:
    async def run() -> Any:
        async with connect(url, token) as client:
            return await client.call_tool(name, arguments)

    return asyncio.run(run())


def test_an_unapproved_client_is_told_where_to_get_approved(setup: Setup, oauth_mcp: str) -> None:
    token = agent_token(setup)

    async def listed() -> int:
        async with connect(oauth_mcp, token) as client:
            return len((await client.list_tools()).tools)

    assert asyncio.run(listed()) > 0  # authenticated: listing works before approval
    first = tool_error(mcp_call(oauth_mcp, token, "remember", {"content": "c", "kind": "fact"}))
    assert first["code"] == "connection_required"
    assert first["clientId"] == "claude-desktop"
    assert first["approvalUrl"].startswith(f"{WEBSITE}/connections/approve?request=")
    again = tool_error(mcp_call(oauth_mcp, token, "recall", {}))
    assert again["approvalUrl"] == first["approvalUrl"]  # one request, reused
    request_id = first["approvalUrl"].split("request=")[1]

    pending = [
        c
        for c in setup.owner().get("/v1/connections").json()["data"]["items"]
        if c["clientId"] == "claude-desktop"
    ]
    assert [(c["status"], c["pendingRequest"]["id"]) for c in pending] == [("pending", request_id)]
    by_key = setup.tenant.client.post(
        f"/v1/connections/requests/{request_id}/approve", {"grants": {}}
    )
    assert error_of(by_key)["code"] == "owner_session_required"

    grants = {"personal": True, "capabilities": ["memory:read", "memory:write"]}
    approved = setup.owner().post(
        f"/v1/connections/requests/{request_id}/approve", {"grants": grants}
    )
    assert approved.status_code == 200, approved.text
    assert approved.json()["data"]["status"] == "active"
    twice = setup.owner().post(
        f"/v1/connections/requests/{request_id}/approve",
        {"grants": {"personal": False, "allProjects": True}},
    )
    assert twice.json()["data"]["grants"] == approved.json()["data"]["grants"]

    saved = mcp_call(oauth_mcp, token, "remember", {"content": "via oauth", "kind": "fact"})
    assert not saved.is_error, saved
    denied = tool_error(mcp_call(oauth_mcp, token, "forget", {"ids": [str(uuid.uuid4())]}))
    assert denied["code"] == "forbidden"
    agent = next(
        c
        for c in setup.owner().get("/v1/connections").json()["data"]["items"]
        if c["clientId"] == "claude-desktop"
    )
    assert agent["lastContactAt"] is not None  # agents' contact is shown like keys'


def test_agent_tokens_must_carry_the_configured_scopes(
    database: embedded.EmbeddedDatabase, provider: Provider, setup: Setup
) -> None:
    mcp = start_mcp(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_EMBEDDING_PROFILE": "disabled",
            **provider.env(),
            "GROVE_OIDC_AGENT_SCOPES": "grove:memory",
        },
        workers=1,
    )
    try:

        def status(**claims: Any) -> int:
            return mcp_post(mcp.url, agent_token(setup, **claims), INITIALIZE).status_code

        assert status() == 401
        assert status(scope="openid profile") == 401
        assert status(scope="openid grove:memory") == 200
        assert status(scp=["grove:memory"]) == 200  # Entra ID and Okta's list
    finally:
        mcp.stop()


def test_agent_tokens_for_another_audience_are_refused(setup: Setup, oauth_mcp: str) -> None:
    for claims in ({"aud": "https://grove.test/api"}, {"aud": None}, {"client_id": None}):
        token = agent_token(setup, **claims)
        response = requests.post(
            oauth_mcp, json={}, headers={"Authorization": f"Bearer {token}"}, timeout=10
        )
        assert response.status_code == 401, claims


def test_an_unapproved_clients_oversized_body_is_still_refused(
    setup: Setup, oauth_mcp: str
) -> None:
    # Its body is read to find its clientInfo, at most the body limit, and passed on.
    token = agent_token(setup, client_id=f"big-{uuid.uuid4().hex[:6]}")
    big = {**INITIALIZE, "params": {"clientInfo": {"name": "x" * (70 * 1024), "version": "1"}}}
    assert mcp_post(oauth_mcp, token, big).status_code == 413


@pytest.mark.parametrize("claim", ["azp", "cid", "appid"])
def test_the_client_is_found_under_each_providers_claim(
    setup: Setup, oauth_mcp: str, claim: str
) -> None:
    # OpenID Connect azp, Okta's cid, Entra ID v1's appid; RFC 9068 client_id elsewhere.
    client = f"{claim}-agent-{uuid.uuid4().hex[:6]}"
    token = agent_token(setup, client_id=None, **{claim: client})
    required = tool_error(mcp_call(oauth_mcp, token, "recall", {}))
    assert required["code"] == "connection_required"
    assert required["clientId"] == client


def test_revocation_applies_at_once_and_reapproval_needs_a_new_token(
    setup: Setup, oauth_mcp: str
) -> None:
    token = agent_token(setup, client_id="cursor")
    request_id = tool_error(mcp_call(oauth_mcp, token, "recall", {}))["approvalUrl"].split("=")[1]
    approved = (
        setup.owner()
        .post(f"/v1/connections/requests/{request_id}/approve", {"grants": {"personal": True}})
        .json()["data"]
    )
    assert not mcp_call(oauth_mcp, token, "recall", {}).is_error
    # A token's iat is in whole seconds, and so is the re-approval's cutoff: revoke and
    # re-approve in a later second than the token's.
    issued = jwt.decode(token, options={"verify_signature": False})["iat"]
    wait_until(lambda: time.time() >= issued + 1)
    owner = setup.owner()
    owner.session.delete(
        f"{owner.base}/v1/connections/{approved['id']}", headers=owner.headers(), timeout=10
    )
    after = tool_error(mcp_call(oauth_mcp, token, "recall", {}))
    assert after["code"] == "connection_required"
    new_request = after["approvalUrl"].split("=")[1]
    assert new_request != request_id
    setup.owner().post(
        f"/v1/connections/requests/{new_request}/approve", {"grants": {"personal": True}}
    )
    stale = requests.post(
        oauth_mcp, json={}, headers={"Authorization": f"Bearer {token}"}, timeout=10
    )
    assert stale.status_code == 401  # issued before the new authorization
    fresh = agent_token(setup, client_id="cursor", iat=int(time.time()) + 2)
    assert not mcp_call(oauth_mcp, fresh, "recall", {}).is_error


def test_a_connection_request_lapses_after_ten_minutes(
    database: embedded.EmbeddedDatabase, setup: Setup
) -> None:
    config = AgentConfig(ISSUER, AUDIENCE, WEBSITE)
    claims = {"sub": setup.subject, "client_id": "slow-client", "scope": "openid"}
    long_ago = datetime.now(UTC) - timedelta(minutes=11)
    pool = open_pool(database.runtime_url)
    try:
        old = agent_principal(pool, config, claims, now=lambda: long_ago)
        current = agent_principal(pool, config, claims)
        reused = agent_principal(pool, config, claims)
    finally:
        pool.close()
    assert old.approval_url != current.approval_url == reused.approval_url
    expired = (old.approval_url or "").split("=")[1]
    response = setup.owner().post(f"/v1/connections/requests/{expired}/approve", {"grants": {}})
    assert response.status_code == 404  # superseded by the newer request


def test_a_grant_edit_invalidates_the_pending_request(setup: Setup, oauth_mcp: str) -> None:
    token = agent_token(setup, client_id="windsurf")
    url = tool_error(mcp_call(oauth_mcp, token, "recall", {}))["approvalUrl"]
    connection = next(
        c
        for c in setup.owner().get("/v1/connections").json()["data"]["items"]
        if c["clientId"] == "windsurf"
    )
    setup.owner().patch(f"/v1/connections/{connection['id']}", {"grants": {"personal": False}})
    stale = setup.owner().post(
        f"/v1/connections/requests/{url.split('=')[1]}/approve", {"grants": {"personal": True}}
    )
    assert stale.status_code == 409
    assert "withdrawn" in error_of(stale)["message"]


def test_agent_tokens_work_over_rest_tools_with_the_same_approval(setup: Setup) -> None:
    token = agent_token(setup, client_id="rest-agent")
    agent = Client(setup.api.url, token)
    pending = agent.post("/v1/tools/recall", {})
    assert pending.status_code == 403
    assert error_of(pending)["code"] == "connection_required"
    request_id = next(
        c["pendingRequest"]["id"]
        for c in setup.owner().get("/v1/connections").json()["data"]["items"]
        if c["clientId"] == "rest-agent"
    )
    setup.owner().post(
        f"/v1/connections/requests/{request_id}/approve", {"grants": {"personal": True}}
    )
    assert agent.post("/v1/tools/recall", {}).status_code == 200
    assert agent.get("/v1/connections").status_code == 403  # never an owner


def test_approved_agent_tokens_cannot_manage_shares_or_conversations(setup: Setup) -> None:
    token = agent_token(setup, client_id="share-agent")
    agent = Client(setup.api.url, token)
    assert agent.post("/v1/tools/recall", {}).status_code == 403  # files the request
    request_id = next(
        c["pendingRequest"]["id"]
        for c in setup.owner().get("/v1/connections").json()["data"]["items"]
        if c["clientId"] == "share-agent"
    )
    setup.owner().post(
        f"/v1/connections/requests/{request_id}/approve",
        {"grants": {"personal": True, "allProjects": True}},
    )
    note = agent.save("shared by nobody")
    share = {"target": {"type": "note", "id": note["id"]}}
    conversation = {"id": str(uuid.uuid4())}
    for method, path, body in (
        ("POST", "/v1/shares", share),
        ("GET", "/v1/shares", None),
        ("DELETE", f"/v1/shares/{uuid.uuid4()}", None),
        ("POST", "/v1/conversations", conversation),
        ("GET", "/v1/conversations", None),
        ("POST", "/v1/conversations/search", {}),
    ):
        response = agent.session.request(
            method, agent.base + path, json=body, headers=agent.headers(), timeout=10
        )
        assert response.status_code == 403, (method, path, response.text)
        assert error_of(response)["code"] == "owner_session_required"


class Introspector:
    """A stand-in RFC 7662 endpoint: answers for the opaque tokens the test registers."""

    def __init__(self) -> None:
        self.tokens: dict[str, dict[str, Any]] = {}
        self.up = True
        self.authorizations: list[str] = []
        introspector = self

        class Handler(loopback.Handler):
            def do_POST(self) -> None:  # http.server's method name
                form = dict(part.split("=", 1) for part in self.body().decode().split("&"))
                introspector.authorizations.append(self.headers.get("Authorization", ""))
                if not introspector.up:
                    self.send_response(502)
                    self.end_headers()
                    return
                self.answer(introspector.tokens.get(form["token"], {"active": False}))

        self.server = loopback.Server(Handler)
        self.url = f"{self.server.url}/introspect"

    def close(self) -> None:
        self.server.close()


def introspecting_mcp(
    database: embedded.EmbeddedDatabase, provider: Provider, introspector: Introspector, **env: str
) -> Running:
    """One grove-mcp process that introspects tokens at ``introspector`` (one process:
    inactive tokens are remembered per process)."""
    return start_mcp(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_EMBEDDING_PROFILE": "disabled",
            **provider.env(),
            "GROVE_OIDC_INTROSPECTION_URL": introspector.url,
            "GROVE_OIDC_INTROSPECTION_CLIENT_ID": "grove",
            "GROVE_OIDC_INTROSPECTION_CLIENT_SECRET": "grove-secret",
            "GROVE_MCP_WORKERS": "1",
            **env,
        },
        workers=1,
    )


def test_opaque_agent_tokens_are_checked_by_introspection(
    database: embedded.EmbeddedDatabase, provider: Provider, setup: Setup
) -> None:
    introspector = Introspector()
    mcp = introspecting_mcp(database, provider, introspector)
    try:
        opaque = f"opaque-{uuid.uuid4().hex}"
        introspector.tokens[opaque] = {
            "active": True,
            "sub": setup.subject,
            "client_id": "opaque-agent",
            "aud": [AUDIENCE],
            "iss": ISSUER,
            "exp": int(time.time()) + 300,
        }
        first = tool_error(mcp_call(mcp.url, opaque, "recall", {}))
        assert first["code"] == "connection_required"
        assert introspector.authorizations[-1].startswith("Basic ")
        request_id = first["approvalUrl"].split("=")[1]
        setup.owner().post(
            f"/v1/connections/requests/{request_id}/approve", {"grants": {"personal": True}}
        )
        assert not mcp_call(mcp.url, opaque, "recall", {}).is_error

        introspector.tokens[opaque]["active"] = False  # revoked at the provider
        inactive = requests.post(
            mcp.url, json={}, headers={"Authorization": f"Bearer {opaque}"}, timeout=10
        )
        assert inactive.status_code == 401
        other_audience = f"opaque-{uuid.uuid4().hex}"
        introspector.tokens[other_audience] = {
            **introspector.tokens[opaque],
            "active": True,
            "aud": "https://elsewhere.test",
        }
        refused = requests.post(
            mcp.url, json={}, headers={"Authorization": f"Bearer {other_audience}"}, timeout=10
        )
        assert refused.status_code == 401

        # A token the provider called inactive stays refused (it is remembered a minute;
        # tokens never come back to life); a fresh one for the same client is asked about.
        renewed = f"opaque-{uuid.uuid4().hex}"
        introspector.tokens[renewed] = {**introspector.tokens[opaque], "active": True}
        introspector.tokens[opaque]["active"] = True
        asked = len(introspector.authorizations)
        again = requests.post(
            mcp.url, json={}, headers={"Authorization": f"Bearer {opaque}"}, timeout=10
        )
        assert again.status_code == 401 and len(introspector.authorizations) == asked
        introspector.up = False
        down = tool_error(mcp_call(mcp.url, renewed, "recall", {}))
        assert down["code"] == "auth_provider_unavailable"
    finally:
        mcp.stop()
        introspector.close()


def test_agent_jwts_can_be_checked_for_liveness_by_introspection(
    database: embedded.EmbeddedDatabase, provider: Provider, setup: Setup
) -> None:
    introspector = Introspector()
    mcp = introspecting_mcp(
        database, provider, introspector, GROVE_OIDC_INTROSPECT_AGENT_JWTS="true"
    )
    try:

        def status(token: str) -> int:
            return mcp_post(mcp.url, token, LIST_TOOLS).status_code

        live = agent_token(setup, client_id="jwt-agent", jti=uuid.uuid4().hex)
        introspector.tokens[live] = {"active": True}
        assert status(live) == 200
        revoked = agent_token(setup, client_id="jwt-agent", jti=uuid.uuid4().hex)
        assert status(revoked) == 401  # signed and unexpired, but not active any more
        # While the provider cannot say, tools answer that (never a login loop).
        introspector.up = False
        unknown = agent_token(setup, client_id="jwt-agent")
        down = tool_error(mcp_call(mcp.url, unknown, "recall", {}))
        assert down["code"] == "auth_provider_unavailable"
    finally:
        mcp.stop()
        introspector.close()


def test_an_owner_cannot_touch_another_accounts_connections(
    setup: Setup, database: embedded.EmbeddedDatabase, owner_api: Running
) -> None:
    other = new_tenant(database, owner_api.url)
    other_subject = f"user-{uuid.uuid4().hex[:8]}"
    admin.add_owner(database.migration_url, other.account_id, ISSUER, other_subject)
    theirs = Client(owner_api.url, setup.provider.token(other_subject))
    before = theirs.get("/v1/connections").json()["data"]["items"]
    their_connection = before[0]["id"]
    mine = setup.owner()
    assert mine.patch(f"/v1/connections/{their_connection}", {"grants": {}}).status_code == 404
    deleted = mine.session.delete(
        f"{mine.base}/v1/connections/{their_connection}", headers=mine.headers(), timeout=10
    )
    assert deleted.status_code == 404
    # Their connections, grants and state fingerprints included, are exactly as they were.
    assert theirs.get("/v1/connections").json()["data"]["items"] == before
    assert before[0]["status"] == "active" and before[0]["grants"] is not None
    assert other.client.get("/v1/memories").status_code == 200  # untouched


def test_a_notebook_grant_does_not_cover_its_children(setup: Setup) -> None:
    parent = setup.tenant.notebook("parent")
    child = setup.tenant.notebook("child", parent=parent)
    setup.tenant.client.save("in the child", projectId=child)
    created = setup.owner().post(
        "/v1/keys", {"name": "parent only", "grants": {"personal": False, "projectIds": [parent]}}
    )
    key = Client(setup.api.url, created.json()["data"]["key"])
    assert key.get("/v1/memories").json()["data"]["items"] == []
    assert (
        key.post("/v1/memories", {"content": "c", "kind": "fact", "projectId": child}).status_code
        == 404
    )
    assert (
        key.post("/v1/memories", {"content": "c", "kind": "fact", "projectId": parent}).status_code
        == 201
    )


# --- expiry sweeps and the restoration window ----------------------------------------


def make_due(database: embedded.EmbeddedDatabase, note_id: str) -> None:
    """Move a note's expiry, and its sweep job, into the past (the clock, injected)."""
    superuser_sql(
        database,
        "UPDATE memories SET expires_at = now() - interval '1 second' WHERE id = %s",
        note_id,
    )
    superuser_sql(
        database,
        "UPDATE jobs SET run_after = now() WHERE memory_id = %s"
        " AND kind = 'expire_note' AND status = 'queued'",
        note_id,
    )


@pytest.fixture
def sweepers(database: embedded.EmbeddedDatabase) -> Iterator[list[Running]]:
    # Polling every 50 ms, these two claim due sweep jobs before any other test's worker
    # (polling every second) can take them all, so their counters have sweeps to count.
    workers = [
        start_worker(
            database,
            "127.0.0.1:1",
            GROVE_EMBEDDING_PROFILE="disabled",
            GROVE_WORKER_POLL_SECONDS="0.05",
        )
        for _ in range(2)
    ]
    yield workers
    for worker in workers:
        worker.stop()


def test_expired_notes_enter_the_window_and_the_owner_can_restore_them(
    setup: Setup, database: embedded.EmbeddedDatabase, sweepers: list[Running]
) -> None:
    notes = [setup.tenant.client.save(f"short-lived {i}", retentionDays=2) for i in range(20)]
    for note in notes:
        make_due(database, note["id"])

    def swept() -> bool:
        rows = superuser_sql(
            database,
            "SELECT count(*) FROM memories WHERE account_id = %s AND swept_at IS NOT NULL",
            setup.tenant.account_id,
        )
        return bool(rows[0][0] == len(notes))

    wait_until(swept, timeout=30)
    purges = superuser_sql(
        database,
        "SELECT memory_id, run_after - (SELECT swept_at FROM memories m"
        " WHERE m.id = j.memory_id) FROM jobs j WHERE account_id = %s AND kind = 'purge_note'",
        setup.tenant.account_id,
    )
    assert len(purges) == len(notes)  # two sweepers, each note swept once
    assert {delta for _, delta in purges} == {timedelta(days=60)}
    # The counters agree with what these sweepers logged (another test's worker, also a
    # sweeper, may have taken some of the jobs).
    wait_until(lambda: counted_as_logged(sweepers, "grove_sweep_notes_expired_total", "expired"))
    assert logged_sweeps(sweepers, "expired") > 0
    assert setup.tenant.client.get(f"/v1/memories/{notes[0]['id']}").status_code == 404

    refused = setup.tenant.client.post(f"/v1/memories/{notes[0]['id']}/restore", {})
    assert error_of(refused)["code"] == "owner_session_required"
    restored = setup.owner().post(f"/v1/memories/{notes[0]['id']}/restore", {})
    assert restored.status_code == 200, restored.text
    assert restored.json()["data"]["retentionDays"] == 2
    assert setup.tenant.client.get(f"/v1/memories/{notes[0]['id']}").status_code == 200


def test_a_superseded_handoff_comes_back_as_a_fact_and_never_beside_its_tasks_live_handoff(
    setup: Setup, database: embedded.EmbeddedDatabase
) -> None:
    key = setup.tenant.client
    old = key.save("where I stopped on Monday", "handoff", taskId="weekly-report")
    superuser_sql(
        database,
        "UPDATE memories SET expires_at = now() - interval '1 second' WHERE id = %s",
        old["id"],
    )
    fresh = key.save("where I stopped on Friday", "handoff", taskId="weekly-report")
    assert fresh["id"] != old["id"]
    # A task has one live handoff: bringing the old one back as a handoff (as it is, or
    # an earlier version of it) is refused, naming the task's handoff, and changes nothing.
    for body in ({}, {"version": 1}):
        refused = setup.owner().post(f"/v1/memories/{old['id']}/restore", body)
        assert refused.status_code == 409, refused.text
        assert error_of(refused)["code"] == "conflict"
        assert fresh["id"] in error_of(refused)["message"]
        assert "durable" in error_of(refused)["message"]
    assert key.get(f"/v1/memories/{old['id']}").status_code == 404  # still expired
    # Made durable it comes back as a permanent fact, the task's handoff untouched.
    restored = setup.owner().post(f"/v1/memories/{old['id']}/restore", {"durable": True})
    assert restored.status_code == 200, restored.text
    back = data_of(restored)
    assert (back["content"], back["kind"], back["retentionDays"]) == (
        "where I stopped on Monday",
        "fact",
        None,
    )
    again = key.post(
        "/v1/memories",
        {"content": "where I stopped on Saturday", "kind": "handoff", "taskId": "weekly-report"},
    )
    assert again.status_code == 200, again.text
    assert (data_of(again)["id"], data_of(again)["version"]) == (fresh["id"], 2)
    handoffs = [
        n for n in export_lines(setup.owner()) if n.get("memory", {}).get("kind") == "handoff"
    ]
    assert [n["memory"]["id"] for n in handoffs] == [fresh["id"]]
    # So the account's export restores into another account whole.
    other = new_tenant(database, setup.api.url)
    subject = f"user-{uuid.uuid4().hex[:8]}"
    admin.add_owner(database.migration_url, other.account_id, ISSUER, subject)
    target = Client(setup.api.url, setup.provider.token(subject))
    imported = target.session.post(
        target.base + "/v1/import",
        params={"id": str(uuid.uuid4())},
        data=setup.owner().get("/v1/export").content,
        headers=target.headers({"Content-Type": "application/x-ndjson"}),
        timeout=60,
    )
    assert imported.status_code == 200, imported.text
    assert (data_of(imported)["state"], data_of(imported)["counts"]["notes"]) == ("done", 2)


def test_a_superseded_handoff_takes_its_task_back_when_the_task_has_no_live_handoff(
    setup: Setup, database: embedded.EmbeddedDatabase
) -> None:
    key = setup.tenant.client
    old = key.save("first attempt", "handoff", taskId="migration")
    expire_now = "UPDATE memories SET expires_at = now() - interval '1 second' WHERE id = %s"
    superuser_sql(database, expire_now, old["id"])
    newer = key.save("second attempt", "handoff", taskId="migration")
    superuser_sql(database, expire_now, newer["id"])  # the task's handoff expired too
    restored = setup.owner().post(f"/v1/memories/{old['id']}/restore", {})
    assert restored.status_code == 200, restored.text
    assert data_of(restored)["kind"] == "handoff"
    # The old note is the task's handoff again (the expired newer one superseded, still
    # restorable as a fact); the next save for the task corrects it.
    again = key.post(
        "/v1/memories", {"content": "third attempt", "kind": "handoff", "taskId": "migration"}
    )
    assert again.status_code == 200, again.text
    assert (data_of(again)["id"], data_of(again)["version"]) == (old["id"], 2)
    durable = setup.owner().post(f"/v1/memories/{newer['id']}/restore", {"durable": True})
    assert data_of(durable)["kind"] == "fact"


def export_lines(client: Client) -> list[dict[str, Any]]:
    """The lines of the account's export, as its caller sees it."""
    response = client.get("/v1/export")
    assert response.status_code == 200, response.text
    return [json.loads(line) for line in response.text.splitlines() if line]


def test_the_window_ends_in_soft_deletion_unless_restored(
    setup: Setup, database: embedded.EmbeddedDatabase, sweepers: list[Running]
) -> None:
    kept, lost = (setup.tenant.client.save(t, retentionDays=1) for t in ("kept", "lost"))
    for note in (kept, lost):
        make_due(database, note["id"])
    wait_until(
        lambda: (
            superuser_sql(
                database,
                "SELECT count(*) FROM jobs WHERE memory_id = ANY(%s) AND kind = 'purge_note'",
                [uuid.UUID(kept["id"]), uuid.UUID(lost["id"])],
            )[0][0]
            == 2
        ),
        timeout=30,
    )
    setup.owner().post(f"/v1/memories/{kept['id']}/restore", {})
    # Past the 60-day window: rewind the sweep and make the purge jobs due.
    superuser_sql(
        database,
        "UPDATE memories SET swept_at = now() - interval '61 days' WHERE id = %s",
        lost["id"],
    )
    superuser_sql(
        database,
        "UPDATE jobs SET run_after = now() WHERE kind = 'purge_note' AND memory_id = ANY(%s)",
        [uuid.UUID(kept["id"]), uuid.UUID(lost["id"])],
    )
    wait_until(
        lambda: superuser_sql(
            database, "SELECT deleted_at IS NOT NULL FROM memories WHERE id = %s", lost["id"]
        )[0][0],
        timeout=30,
    )
    assert (
        superuser_sql(database, "SELECT deleted_at FROM memories WHERE id = %s", kept["id"])[0][0]
        is None
    )
    assert setup.owner().post(f"/v1/memories/{lost['id']}/restore", {}).status_code == 404
    wait_until(
        lambda: counted_as_logged(sweepers, "grove_sweep_notes_soft_deleted_total", "deleted")
    )
    assert logged_sweeps(sweepers, "deleted") > 0


def logged_sweeps(sweepers: list[Running], field: str) -> int:
    """The sum of ``field`` over the sweepers' logged sweeps."""
    return sum(
        int(event.get(field, 0))
        for worker in sweepers
        for line in list(worker.lines)
        if '"event": "sweep"' in line and (event := json.loads(line))
    )


def counted_as_logged(sweepers: list[Running], metric: str, field: str) -> bool:
    """The sweepers' counter, summed over their metrics ports, equals their logged sum."""
    logged = logged_sweeps(sweepers, field)
    counted = sum(value for worker in sweepers for _, value in scrape(worker).get(metric, []))
    return bool(counted == logged)


def test_the_owner_export_includes_connections_without_secrets(setup: Setup) -> None:
    setup.tenant.client.save("exported by the owner")
    response = setup.owner().get("/v1/export")
    lines = [json.loads(line) for line in response.text.splitlines() if line]
    connections = [line["connection"] for line in lines if line["type"] == "connection"]
    assert [c["keyPrefix"] for c in connections] == [(setup.tenant.client.key or "")[:12]]
    assert (setup.tenant.client.key or "") not in response.text
    assert [line["memory"]["content"] for line in lines if line["type"] == "memory"] == [
        "exported by the owner"
    ]


# --- whole-notebook lifecycle ---------------------------------------------------------


def test_subtree_archive_restore_and_delete_with_previews(setup: Setup) -> None:
    owner, key = setup.owner(), setup.tenant.client
    top = setup.tenant.notebook("top")
    child = setup.tenant.notebook("child", parent=top)
    leaf = setup.tenant.notebook("leaf", parent=child)
    outside = setup.tenant.notebook("outside")
    notes = [key.save(f"note {i}", projectId=nb) for i, nb in enumerate((top, child, leaf))]
    set_aside = key.save("archived on its own", projectId=leaf)
    key.post("/v1/tools/archive_memories", {"ids": [set_aside["id"]]})
    key.save("elsewhere", projectId=outside)

    for path in (f"/v1/notebooks/{top}/subtree", "/v1/notebooks/archived"):
        assert error_of(key.get(path))["code"] == "owner_session_required"
    preview = owner.get(f"/v1/notebooks/{top}/subtree").json()["data"]
    assert (preview["notebooks"], preview["notes"]) == (3, 4)
    by_key = key.post(f"/v1/notebooks/{top}/archive", {"fingerprint": preview["fingerprint"]})
    assert error_of(by_key)["code"] == "owner_session_required"

    key.save("arrived after the preview", projectId=child)
    stale = owner.post(f"/v1/notebooks/{top}/archive", {"fingerprint": preview["fingerprint"]})
    assert stale.status_code == 409
    assert error_of(stale)["code"] == "subtree_changed"

    fresh = owner.get(f"/v1/notebooks/{top}/subtree").json()["data"]
    archived = owner.post(f"/v1/notebooks/{top}/archive", {"fingerprint": fresh["fingerprint"]})
    assert archived.json()["data"] == {"action": "archive", "notebooks": 3, "notes": 5}
    assert [n["content"] for n in key.get("/v1/memories").json()["data"]["items"]] == ["elsewhere"]
    assert [b["id"] for b in key.get("/v1/notebooks").json()["data"]["items"]] == [outside]
    listed = owner.get("/v1/notebooks/archived").json()["data"]["items"]
    assert {b["id"] for b in listed} == {top, child, leaf}

    again = owner.get(f"/v1/notebooks/{top}/subtree").json()["data"]
    owner.post(f"/v1/notebooks/{top}/restore", {"fingerprint": again["fingerprint"]})
    live = {n["content"] for n in key.get("/v1/memories").json()["data"]["items"]}
    assert live == {"note 0", "note 1", "note 2", "arrived after the preview", "elsewhere"}
    still = key.get("/v1/memories?archived=true").json()["data"]["items"]
    assert [n["id"] for n in still] == [set_aside["id"]]  # archived on its own stays so

    last = owner.get(f"/v1/notebooks/{top}/subtree").json()["data"]
    owner.post(f"/v1/notebooks/{top}/delete", {"fingerprint": last["fingerprint"]})
    assert key.get(f"/v1/memories/{notes[0]['id']}").status_code == 404
    assert owner.get(f"/v1/notebooks/{top}/subtree").status_code == 404
    assert [b["id"] for b in key.get("/v1/notebooks").json()["data"]["items"]] == [outside]
    unknown = owner.post(f"/v1/notebooks/{top}/explode", {"fingerprint": "x"})
    assert unknown.status_code == 404


def approved_agent(setup: Setup, client_id: str) -> Client:
    """An agent token whose connection the owner approved with every grant."""
    agent = Client(setup.api.url, agent_token(setup, client_id=client_id))
    assert agent.post("/v1/tools/recall", {}).status_code == 403  # files the request
    request_id = next(
        c["pendingRequest"]["id"]
        for c in setup.owner().get("/v1/connections").json()["data"]["items"]
        if c["clientId"] == client_id
    )
    setup.owner().post(
        f"/v1/connections/requests/{request_id}/approve",
        {"grants": {"personal": True, "allProjects": True}},
    )
    return agent


def test_owner_session_operations_run_through_rest_tools_and_only_for_the_owner(
    setup: Setup,
) -> None:
    owner, key = setup.owner(), setup.tenant.client
    agent = approved_agent(setup, "subtree-agent")
    top = setup.tenant.notebook("top")
    setup.tenant.notebook("child", parent=top)
    key.save("inside", projectId=top)

    def run(client: Client, name: str, arguments: dict[str, Any]) -> Any:
        response = client.post(f"/v1/tools/{name}", arguments)
        assert response.status_code == 200, (name, response.text)
        return data_of(response)

    # Keys and agents are refused each operation, with good or bad arguments alike.
    preview = run(owner, "preview_notebook", {"id": top})
    assert (preview["notebooks"], preview["notes"]) == (2, 1)
    subtree = {"id": top, "fingerprint": preview["fingerprint"]}
    for name, arguments in (
        ("preview_notebook", {"id": top}),
        ("archive_notebook", subtree),
        ("restore_notebook", subtree),
        ("delete_notebook", subtree),
        ("list_archived_notebooks", {}),
        ("delete_notebook", {"id": "x"}),
    ):
        for caller in (key, agent):
            refused = caller.post(f"/v1/tools/{name}", arguments)
            assert refused.status_code == 403, (name, refused.text)
            assert error_of(refused)["code"] == "owner_session_required"
    assert run(owner, "preview_notebook", {"id": top}) == preview  # nothing changed

    # The owner's session runs them, answering what their routes answer.
    archived = run(owner, "archive_notebook", subtree)
    assert archived == {"action": "archive", "notebooks": 2, "notes": 1}
    listed = run(owner, "list_archived_notebooks", {})
    assert listed == data_of(owner.get("/v1/notebooks/archived"))
    assert len(listed["items"]) == 2
    stale = owner.post("/v1/tools/restore_notebook", subtree)
    assert (stale.status_code, error_of(stale)["code"]) == (409, "subtree_changed")
    again = run(owner, "preview_notebook", {"id": top})
    restored = run(owner, "restore_notebook", {"id": top, "fingerprint": again["fingerprint"]})
    assert restored["action"] == "restore"
    assert [n["content"] for n in data_of(key.get("/v1/memories"))["items"]] == ["inside"]
    last = run(owner, "preview_notebook", {"id": top})
    run(owner, "delete_notebook", {"id": top, "fingerprint": last["fingerprint"]})
    assert data_of(key.get("/v1/memories"))["items"] == []
    bad = owner.post("/v1/tools/archive_notebook", {"id": top})
    assert (bad.status_code, error_of(bad)["code"]) == (400, "validation_error")
    gone = owner.post("/v1/tools/preview_notebook", {"id": top})
    assert (gone.status_code, error_of(gone)["code"]) == (404, "not_found")
    # The agents' listing is unchanged: these are not agent tools.
    names = {t["name"] for t in data_of(owner.get("/v1/tools"))["tools"]}
    assert "archive_notebook" not in names


def test_deleting_the_account_revokes_everything_and_tombstones_the_owner(
    setup: Setup, database: embedded.EmbeddedDatabase, oauth_mcp: str
) -> None:
    owner, key = setup.owner(), setup.tenant.client
    key.save("kept in the export taken before deletion")
    before = owner.get("/v1/export").text
    assert "kept in the export taken before deletion" in before

    def delete(client: Client, phrase: str) -> requests.Response:
        return client.session.delete(
            f"{client.base}/v1/account",
            json={"confirmation": phrase},
            headers=client.headers(),
            timeout=10,
        )

    assert error_of(delete(key, "delete my Grove account"))["code"] == "owner_session_required"
    assert delete(owner, "yes please").status_code == 400
    done = delete(owner, "delete my Grove account")
    assert done.status_code == 200, done.text
    assert key.get("/v1/memories").status_code == 401  # the very next request
    gone = setup.owner().get("/v1/connections")
    assert gone.status_code == 403
    assert "was deleted" in error_of(gone)["message"]
    agent = agent_token(setup, client_id="after-deletion")
    refused = tool_error(mcp_call(oauth_mcp, agent, "recall", {}))
    assert refused["code"] == "identity_not_provisioned"
    assert "was deleted" in refused["message"]
    rows = superuser_sql(
        database,
        "SELECT count(*) FILTER (WHERE deleted_at IS NULL) FROM memories WHERE account_id = %s",
        setup.tenant.account_id,
    )
    assert rows[0][0] == 0  # hidden, retained
    fresh_account = admin.create_account(database.migration_url, "again")
    with pytest.raises(LookupError):
        admin.add_owner(database.migration_url, fresh_account, ISSUER, setup.subject)


def test_saves_racing_an_account_deletion_never_survive_it(setup: Setup) -> None:
    key = setup.tenant.client
    stop = threading.Event()
    outcomes: list[int] = []

    def save_until_stopped() -> None:
        with requests.Session() as session:
            while not stop.is_set():
                response = session.post(
                    f"{key.base}/v1/memories",
                    json={"content": "racing", "kind": "fact"},
                    headers=key.headers(),
                    timeout=10,
                )
                outcomes.append(response.status_code)

    savers = [threading.Thread(target=save_until_stopped) for _ in range(4)]
    for saver in savers:
        saver.start()
    # The deletion starts while saves are succeeding, and the savers go on until they
    # are refused: the race is run, not hoped for.
    try:
        wait_until(lambda: outcomes.count(201) >= 4)
        owner = setup.owner()
        deleted = owner.session.delete(
            f"{owner.base}/v1/account",
            json={"confirmation": "delete my Grove account"},
            headers=owner.headers(),
            timeout=30,
        )
        wait_until(lambda: 401 in outcomes)
    finally:
        stop.set()
        for saver in savers:
            saver.join(timeout=30)
    assert deleted.status_code == 200
    assert 201 in outcomes and 401 in outcomes  # saves both before and after
    live = superuser_sql(
        setup.tenant.database,
        "SELECT count(*) FROM memories WHERE account_id = %s AND deleted_at IS NULL",
        setup.tenant.account_id,
    )
    assert live[0][0] == 0


def test_a_deletion_webhook_without_a_signing_secret_stops_the_worker(
    database: embedded.EmbeddedDatabase,
) -> None:
    with pytest.raises(RuntimeError, match="GROVE_ACCOUNT_DELETION_WEBHOOK_SECRET"):
        start_worker(
            database,
            "127.0.0.1:1",
            GROVE_EMBEDDING_PROFILE="disabled",
            GROVE_ACCOUNT_DELETION_WEBHOOK="http://127.0.0.1:9/hook",
        )


def test_provider_side_deletion_is_requested_with_retries(
    setup: Setup, database: embedded.EmbeddedDatabase
) -> None:
    received: list[dict[str, Any]] = []
    secret = "webhook-secret-for-tests-0123456789abcdef"

    class Hook(loopback.Handler):
        def do_POST(self) -> None:  # http.server's method name
            raw = self.body()
            # The documented check: HMAC-SHA256 of "<timestamp>.<body>", a fresh timestamp.
            stamp = self.headers["Grove-Timestamp"]
            expected = hmac.new(secret.encode(), f"{stamp}.".encode() + raw, hashlib.sha256)
            signed = hmac.compare_digest(
                self.headers["Grove-Signature"], f"v1={expected.hexdigest()}"
            )
            if not signed or abs(time.time() - int(stamp)) > 300:
                self.send_response(401)
                self.end_headers()
                return
            body = json.loads(raw)
            received.append(body)
            # The first request for each identity fails (other tests' jobs come here too).
            self.send_response(500 if received.count(body) == 1 else 204)
            self.end_headers()

    server = loopback.Server(Hook)
    worker = start_worker(
        database,
        "127.0.0.1:1",
        GROVE_EMBEDDING_PROFILE="disabled",
        GROVE_ACCOUNT_DELETION_WEBHOOK=f"{server.url}/hook",
        GROVE_ACCOUNT_DELETION_WEBHOOK_SECRET=secret,
        GROVE_WORKER_BACKOFF_SECONDS="0.1",
    )
    try:
        owner = setup.owner()
        owner.session.delete(
            f"{owner.base}/v1/account",
            json={"confirmation": "delete my Grove account"},
            headers=owner.headers(),
            timeout=30,
        )

        def finished() -> Any:
            rows = superuser_sql(
                database,
                "SELECT status, attempts FROM jobs WHERE account_id"
                " = %s AND kind = 'delete_identity'",
                setup.tenant.account_id,
            )
            return rows if rows and rows[0][0] == "done" else None

        assert wait_until(finished, timeout=30) == [("done", 2)]
        mine = {"issuer": ISSUER, "subject": setup.subject}
        assert received.count(mine) == 2
    finally:
        worker.stop()
        server.close()
