"""Grove against a real OpenID Connect provider (oidc-provider, stock claim set).

People sign in through the provider's own login and consent pages (driven over HTTP
here; in a browser in the console's tests). Owners get standard access tokens for the
API audience; agents register dynamically and get tokens for the MCP resource (RFC 8707),
then wait for the owner's approval. Nothing here is shaped for Grove: no ``azp``, no
``sid``, a generated client id, and the JWKS where discovery says it is.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import jwt
import psycopg
import pytest
import requests

from grove_db import embedded
from tests.support.clients import Client, error_of
from tests.support.keys import SECRET
from tests.support.mcp import agent_session, text_json
from tests.support.mcp import error_of as tool_error
from tests.support.oidc_provider import OidcProvider
from tests.support.processes import Running, free_port, run_script, start_api, start_mcp
from tests.support.waiting import wait_until

WEBSITE = "http://127.0.0.1:9/console"
#: The owner tokens' audience: the Grove API as the provider knows it (a resource).
API_RESOURCE = "https://grove.test/api"
OTHER_RESOURCE = "https://another-api.test"
CONSOLE = "grove-console"
CONSOLE_SECRET = "console-secret-for-tests"
CONSOLE_CALLBACK = "http://127.0.0.1:9/console/callback"
AGENT_CALLBACK = "http://127.0.0.1:9/agent/callback"
RESOURCE_SERVER = "grove-resource-server"
RESOURCE_SERVER_SECRET = "resource-server-secret-for-tests"


def clients() -> list[dict[str, Any]]:
    """The static clients: the website (confidential) and Grove as a resource server."""
    return [
        {
            "client_id": CONSOLE,
            "client_secret": CONSOLE_SECRET,
            "redirect_uris": [CONSOLE_CALLBACK],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "client_secret_basic",
        },
        {
            "client_id": RESOURCE_SERVER,
            "client_secret": RESOURCE_SERVER_SECRET,
            "redirect_uris": [],
            "grant_types": [],
            "response_types": [],
            "token_endpoint_auth_method": "client_secret_basic",
        },
    ]


@dataclass
class Stack:
    provider: OidcProvider
    api: Running
    mcp: Running

    def owner(self, login: str) -> Client:
        """The owner's API client after signing in to the website's client."""
        tokens = self.provider.sign_in(
            login, CONSOLE, CONSOLE_CALLBACK, API_RESOURCE, CONSOLE_SECRET
        )
        return Client(self.api.url, tokens.access_token)

    def agent(self, login: str, client_id: str) -> str:
        """An agent's access token for the MCP resource, as ``login`` approved it."""
        return self.provider.sign_in(login, client_id, AGENT_CALLBACK, self.mcp.url).access_token


def identity_env(provider: OidcProvider, mcp_url: str) -> dict[str, str]:
    return {
        "GROVE_OIDC_ISSUER": provider.issuer,
        "GROVE_OIDC_AUDIENCE": API_RESOURCE,
        "GROVE_OIDC_AUTHORIZED_PARTY": CONSOLE,
        "GROVE_OIDC_PROVISIONING": "personal",
        "GROVE_WEBSITE_ORIGIN": WEBSITE,
        "GROVE_MCP_PUBLIC_URL": mcp_url,
    }


@pytest.fixture(scope="module")
def stack(database: embedded.EmbeddedDatabase) -> Iterator[Stack]:
    mcp_port = free_port()
    mcp_url = f"http://127.0.0.1:{mcp_port}/mcp"
    provider = OidcProvider.start(
        {API_RESOURCE: {}, mcp_url: {}, OTHER_RESOURCE: {}},
        clients(),
    )
    base = {"GROVE_DATABASE_URL": database.runtime_url, "GROVE_EMBEDDING_PROFILE": "disabled"}
    env = {**base, **identity_env(provider, mcp_url)}
    api = start_api({**env, "GROVE_API_WORKERS": "1"})
    mcp = start_mcp(env, workers=1, port=mcp_port)
    yield Stack(provider, api, mcp)
    mcp.stop()
    api.stop()
    provider.stop()


def login() -> str:
    return f"person-{uuid.uuid4().hex[:8]}"


def test_the_provider_is_stock(stack: Stack) -> None:
    # What Grove must cope with: the JWKS is not at /.well-known/jwks.json, and access
    # tokens carry neither azp nor sid.
    document = stack.provider.discovery()
    assert document["jwks_uri"] == f"{stack.provider.issuer}/jwks"
    tokens = stack.provider.sign_in(
        login(), CONSOLE, CONSOLE_CALLBACK, API_RESOURCE, CONSOLE_SECRET
    )
    claims = jwt.decode(tokens.access_token, options={"verify_signature": False})
    assert claims["aud"] == API_RESOURCE
    assert claims["client_id"] == CONSOLE
    assert "azp" not in claims and "sid" not in claims


def test_an_owner_signs_in_and_gets_a_personal_account(stack: Stack) -> None:
    person = login()
    owner = stack.owner(person)
    listed = owner.get("/v1/connections")
    assert listed.status_code == 200, listed.text
    assert listed.json()["data"]["items"] == []
    saved = owner.post("/v1/memories", {"content": "signed in for real", "kind": "fact"})
    assert saved.status_code == 201, saved.text
    # Signing in again finds the same account, not a new one.
    again = stack.owner(person).get("/v1/memories").json()["data"]["items"]
    assert [n["content"] for n in again] == ["signed in for real"]
    # Someone else signing in sees nothing of it.
    assert stack.owner(login()).get("/v1/memories").json()["data"]["items"] == []


def test_tokens_not_for_the_api_are_not_owner_sessions(stack: Stack) -> None:
    person = login()
    provider = stack.provider
    tokens = provider.sign_in(person, CONSOLE, CONSOLE_CALLBACK, OTHER_RESOURCE, CONSOLE_SECRET)
    other_api = Client(stack.api.url, tokens.access_token).get("/v1/connections")
    assert other_api.status_code == 401, other_api.text
    assert tokens.id_token is not None  # for the website, not for the API
    id_token = Client(stack.api.url, tokens.id_token).get("/v1/connections")
    assert id_token.status_code == 401


def test_a_token_another_client_got_for_the_api_is_no_owner_session(stack: Stack) -> None:
    # An MCP client registers itself and asks the provider for the API audience instead
    # of the MCP resource: the provider issues it, naming that client.
    person = login()
    assert stack.owner(person).get("/v1/keys").status_code == 200  # the website's token
    client_id = stack.provider.register("Not the website", AGENT_CALLBACK)
    token = stack.provider.sign_in(person, client_id, AGENT_CALLBACK, API_RESOURCE).access_token
    assert jwt.decode(token, options={"verify_signature": False})["aud"] == API_RESOURCE
    other = Client(stack.api.url, token)
    for answer in (
        other.get("/v1/keys"),
        other.post("/v1/keys", {"name": "minted", "grants": {"personal": True}}),
        other.get("/v1/connections"),
    ):
        assert answer.status_code == 401, answer.text
        assert error_of(answer)["code"] == "unauthorized"
        assert "not issued to the Grove website" in error_of(answer)["message"]
    keys = stack.owner(person).get("/v1/keys").json()["data"]["items"]
    assert [key["name"] for key in keys] == []


def test_an_agent_waits_for_approval_and_sees_only_its_grant(stack: Stack) -> None:
    person = login()
    owner = stack.owner(person)
    shared = owner.post("/v1/notebooks", {"name": "shared"}).json()["data"]["id"]
    kept = owner.post("/v1/notebooks", {"name": "kept"}).json()["data"]["id"]
    owner.save("lunar deploy notes", projectId=shared)
    owner.save("lunar private diary", projectId=kept)
    owner.save("lunar personal note")

    client_id = stack.provider.register("Test Agent", AGENT_CALLBACK)
    token = stack.agent(person, client_id)
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["aud"] == stack.mcp.url and claims["client_id"] == client_id

    async def tools_and_recall(bearer: str) -> tuple[int, Any]:
        async with agent_session(stack.mcp.url, bearer) as session:
            listed = await session.list_tools()
            return len(listed.tools), await session.call_tool("search_memories", {"query": "lunar"})

    tool_count, first = asyncio.run(tools_and_recall(token))
    assert tool_count > 0  # signed in: it may look, not yet read
    required = tool_error(first)
    assert required["code"] == "connection_required", required
    approval = required["approvalUrl"]
    assert approval.startswith(f"{WEBSITE}/connections/approve?request=")
    request_id = approval.split("request=")[1]

    request = owner.get(f"/v1/connections/requests/{request_id}")
    assert request.status_code == 200, request.text
    shown = request.json()["data"]
    assert shown["status"] == "pending"
    assert shown["clientId"] == client_id
    assert (shown["clientName"], shown["clientVersion"]) == ("Test Agent", "1.2.3")
    assert shown["connection"]["name"] == "Test Agent"
    assert shown["connection"]["status"] == "pending"
    assert shown["connection"]["grants"] is None  # it holds nothing yet
    assert stack.owner(login()).get(f"/v1/connections/requests/{request_id}").status_code == 404

    grants = {"personal": False, "projectIds": [shared], "capabilities": ["memory:read"]}
    approved = owner.post(f"/v1/connections/requests/{request_id}/approve", {"grants": grants})
    assert approved.status_code == 200, approved.text
    connection = approved.json()["data"]["id"]
    assert owner.get(f"/v1/connections/requests/{request_id}").json()["data"]["status"] == (
        "approved"
    )
    assert owner.post(f"/v1/connections/requests/{request_id}/deny").status_code == 404

    _, found = asyncio.run(tools_and_recall(token))
    assert not found.is_error, found
    assert [n["memory"]["content"] for n in text_json(found)["items"]] == ["lunar deploy notes"]

    # Tokens carry whole seconds (iat): the re-approval below must be a later second.
    wait_until(lambda: time.time() >= claims["iat"] + 1)
    revoked = owner.delete(f"/v1/connections/{connection}")
    assert revoked.status_code == 200
    _, after = asyncio.run(tools_and_recall(token))
    again = tool_error(after)
    assert again["code"] == "connection_required"
    assert "revoked" in again["message"]
    renewed = again["approvalUrl"].split("request=")[1]
    assert renewed != request_id
    assert owner.post(f"/v1/connections/requests/{renewed}/approve", {"grants": grants}).ok
    # The token from before the revocation stays dead: the agent must sign in again.
    stale = requests.post(
        stack.mcp.url,
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
        timeout=10,
    )
    assert stale.status_code == 401
    fresh = stack.agent(person, client_id)
    _, last = asyncio.run(tools_and_recall(fresh))
    assert [n["memory"]["content"] for n in text_json(last)["items"]] == ["lunar deploy notes"]


def test_a_deleted_accounts_identity_and_operations_are_never_provisioned_again(
    database: embedded.EmbeddedDatabase, stack: Stack
) -> None:
    """The subject tombstone refuses provisioning the identity again, and the operation
    tombstone refuses its operations in any account, even after the account's rows were
    erased by hand (operations.md), which leaves only the tombstones."""
    person = login()
    owner = stack.owner(person)
    operation = str(uuid.uuid4())
    body = {"content": "my diary, to be deleted", "kind": "fact", "operationId": operation}
    saved = owner.post("/v1/memories", body)
    assert saved.status_code == 201, saved.text
    gone = owner.delete("/v1/account", json={"confirmation": "delete my Grove account"})
    assert gone.status_code == 200, gone.text
    account = gone.json()["data"]["accountId"]

    def signed_in_again() -> requests.Response:
        return stack.owner(person).get("/v1/memories")

    refused = signed_in_again()
    assert refused.status_code == 403 and error_of(refused)["code"] == "identity_not_provisioned"
    assert "was deleted" in error_of(refused)["message"]
    # The operator erases the account's rows: its owners and operation records go too, so
    # provisioning and the replay below meet nothing but the tombstones.
    with psycopg.connect(database.migration_url) as conn:
        conn.execute("SELECT set_config('grove.account_id', %s, false)", (account,))
        conn.execute("DELETE FROM account_owners WHERE account_id = %s", (account,))
        conn.execute("DELETE FROM operations WHERE account_id = %s", (account,))
    refused = signed_in_again()
    assert refused.status_code == 403, refused.text
    assert error_of(refused)["code"] == "identity_not_provisioned"
    assert "belonged to a deleted Grove account" in error_of(refused)["message"]
    with psycopg.connect(database.migration_url) as conn:
        owned = conn.execute(
            "SELECT count(*) FROM account_owners WHERE issuer = %s AND subject = %s",
            (stack.provider.issuer, person),
        ).fetchone()
    assert owned == (0,)  # no new account was provisioned for the identity
    # The same save, retried by a client now signed in to another account: refused.
    other = stack.owner(login())
    replayed = other.post("/v1/memories", body)
    assert replayed.status_code == 410, replayed.text
    assert error_of(replayed)["code"] == "gone"
    assert "deleted account" in error_of(replayed)["message"]
    assert other.get("/v1/memories").json()["data"]["items"] == []
    # Another operation under the same ID (another client's, as derived IDs can be) runs.
    unrelated = other.post("/v1/memories", {**body, "content": "someone else's note"})
    assert unrelated.status_code == 201, unrelated.text


def test_an_agent_of_another_person_cannot_use_this_approval(stack: Stack) -> None:
    person, stranger = login(), login()
    owner = stack.owner(person)
    owner.post("/v1/memories", {"content": "only mine", "kind": "fact"})
    client_id = stack.provider.register("Shared Agent", AGENT_CALLBACK)
    # A client of the 2026-07-28 protocol names itself in every request's _meta.
    first = tool_error(_search(stack.mcp.url, stack.agent(person, client_id), "mine", "auto"))
    request_id = first["approvalUrl"].split("request=")[1]
    shown = owner.get(f"/v1/connections/requests/{request_id}").json()["data"]
    assert shown["clientName"] == "Test Agent"
    owner.post(f"/v1/connections/requests/{request_id}/approve", {"grants": {"personal": True}})
    # The same client signed in by someone else is that person's (unapproved) connection.
    theirs = tool_error(_search(stack.mcp.url, stack.agent(stranger, client_id), "mine"))
    assert theirs["code"] == "connection_required"


def _search(url: str, token: str, query: str, mode: str = "legacy") -> Any:
    async def run() -> Any:
        async with agent_session(url, token, mode) as session:
            return await session.call_tool("search_memories", {"query": query})

    return asyncio.run(run())


def test_opaque_owner_tokens_are_introspected(database: embedded.EmbeddedDatabase) -> None:
    mcp_url = f"http://127.0.0.1:{free_port()}/mcp"
    provider = OidcProvider.start({API_RESOURCE: {"format": "opaque"}}, clients())
    api = start_api(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_EMBEDDING_PROFILE": "disabled",
            "GROVE_API_WORKERS": "1",
            **identity_env(provider, mcp_url),
            "GROVE_OIDC_INTROSPECTION_CLIENT_ID": RESOURCE_SERVER,
            "GROVE_OIDC_INTROSPECTION_CLIENT_SECRET": RESOURCE_SERVER_SECRET,
        }
    )
    try:
        tokens = provider.sign_in(login(), CONSOLE, CONSOLE_CALLBACK, API_RESOURCE, CONSOLE_SECRET)
        assert tokens.access_token.count(".") == 0  # opaque
        owner = Client(api.url, tokens.access_token)
        assert owner.get("/v1/connections").status_code == 200
        provider.revoke(tokens.access_token, CONSOLE, CONSOLE_SECRET)
        assert owner.get("/v1/connections").status_code == 401  # seen at once
    finally:
        api.stop()
        provider.stop()


# --- start-up: settings that do not line up stop a production service -----------------


def start_production(script: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run a service with GROVE_ENV=production until it exits (it must, at start-up)."""
    return run_script(
        script,
        env={
            "GROVE_ENV": "production",
            "GROVE_SECRET_KEY": SECRET,
            "GROVE_API_PORT": "0",
            "GROVE_API_METRICS_PORT": "0",
            "GROVE_MCP_PORT": "0",
            "GROVE_MCP_METRICS_PORT": "0",
            **env,
        },
    )


@pytest.mark.parametrize("script", ["grove-api", "grove-mcp"])
def test_misconfigured_identity_stops_production_start_up(
    database: embedded.EmbeddedDatabase, stack: Stack, script: str
) -> None:
    good = {
        "GROVE_DATABASE_URL": database.runtime_url,
        "GROVE_EMBEDDING_PROFILE": "disabled",
        **identity_env(stack.provider, "https://grove.test/mcp"),
    }
    cases = {
        "issuer": (
            {"GROVE_OIDC_ISSUER": stack.provider.issuer + "/"},
            "must match exactly",
        ),
        "unreachable": (
            {"GROVE_OIDC_ISSUER": "http://127.0.0.1:9"},
            "cannot be reached",
        ),
        "jwks": (
            {"GROVE_OIDC_JWKS_URL": f"{stack.provider.issuer}/.well-known/jwks.json"},
            "answered HTTP 404",
        ),
        "resource": (
            {"GROVE_MCP_PUBLIC_URL": "http://grove.test/mcp"},
            "GROVE_MCP_PUBLIC_URL must be an absolute https URL",
        ),
        "api-origin": (
            {"GROVE_API_ORIGIN": "https://grove.test"},
            "GROVE_API_ORIGIN is no longer read",
        ),
    }
    for name, (change, reason) in cases.items():
        done = start_production(script, {**good, **change})
        assert done.returncode != 0, (name, done.stderr[-2000:])
        last = done.stderr.strip().splitlines()[-1]
        assert reason in last, (name, last)
        assert script in last, (name, last)


def test_production_api_refuses_to_start_without_the_websites_client_id(
    database: embedded.EmbeddedDatabase, stack: Stack
) -> None:
    env = {
        "GROVE_DATABASE_URL": database.runtime_url,
        "GROVE_EMBEDDING_PROFILE": "disabled",
        **identity_env(stack.provider, "https://grove.test/mcp"),
    }
    del env["GROVE_OIDC_AUTHORIZED_PARTY"]
    done = start_production("grove-api", env)
    assert done.returncode != 0, done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1] == (
        "grove-api: identity settings: GROVE_OIDC_AUTHORIZED_PARTY (the website's client id,"
        " which owner tokens must name) is not set: any client's token for the API audience"
        " would be an owner session"
    )
