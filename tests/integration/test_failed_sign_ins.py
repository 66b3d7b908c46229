"""Failed sign-ins to grove-api and grove-mcp: metered per token and per client address,
never at the expense of a valid credential.

Each test's clients come from addresses of their own: a fresh loopback source address
(127.x.y.z; Linux answers the whole 127/8), or, through the one trusted proxy
(127.0.0.1, ``GROVE_TRUSTED_PROXIES``), a fresh documentation address in
``X-Forwarded-For``. So no test sees another's buckets, and none waits for a window.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import requests
from requests.adapters import HTTPAdapter

from grove_db import embedded
from tests.support import loopback
from tests.support.mcp import INITIALIZE, MCP_ACCEPT
from tests.support.processes import Running, start_api, start_mcp
from tests.support.tenants import Tenant, new_tenant
from tests.support.windows import in_one_window

#: Failed sign-ins a token or an address may have per minute in these tests.
LIMIT = 3
PROXY = "127.0.0.1"


class SourceAdapter(HTTPAdapter):
    """Connections from one local source address."""

    def __init__(self, address: str) -> None:
        self.address = address
        super().__init__()

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        kwargs["source_address"] = (self.address, 0)
        super().init_poolmanager(*args, **kwargs)


def fresh_peer() -> str:
    """A loopback address no other test connects from (never the trusted proxy)."""
    return f"127.{1 + secrets.randbelow(254)}.{secrets.randbelow(256)}.{1 + secrets.randbelow(254)}"


def fresh_client() -> str:
    """An outside client's address, as a proxy would name it (TEST-NET-2, RFC 5737)."""
    return f"198.51.{secrets.randbelow(256)}.{1 + secrets.randbelow(254)}"


def bad_token() -> str:
    """A well-formed API key that was never issued."""
    return "grv_" + secrets.token_urlsafe(32)


@dataclass
class Service:
    """One metering service as its clients see it: ``call`` sends one authenticated
    request from ``peer``, with ``X-Forwarded-For`` if given."""

    name: str
    url: str

    def call(self, token: str | None, peer: str, forwarded: str | None = None) -> requests.Response:
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        if forwarded is not None:
            headers["X-Forwarded-For"] = forwarded
        with requests.Session() as session:
            session.mount("http://", SourceAdapter(peer))
            if self.name == "api":
                return session.get(f"{self.url}/v1/memories", headers=headers, timeout=30)
            headers |= {**MCP_ACCEPT, "Content-Type": "application/json"}
            return session.post(self.url, data=json.dumps(INITIALIZE), headers=headers, timeout=30)


METERED = {
    "GROVE_EMBEDDING_PROFILE": "disabled",
    "GROVE_API_FAILED_AUTH_LIMIT_PER_MINUTE": str(LIMIT),
    "GROVE_MCP_FAILED_AUTH_LIMIT_PER_MINUTE": str(LIMIT),
    "GROVE_TRUSTED_PROXIES": PROXY,
    "GROVE_API_WORKERS": "1",
    "GROVE_MCP_WORKERS": "1",
}


@pytest.fixture(scope="module")
def services(database: embedded.EmbeddedDatabase) -> Iterator[dict[str, Service]]:
    """grove-api and grove-mcp metering failed sign-ins, behind one trusted proxy."""
    env = {"GROVE_DATABASE_URL": database.runtime_url, **METERED}
    api = start_api(env)
    try:
        mcp = start_mcp(env, workers=1)
    except BaseException:
        api.stop()
        raise
    yield {"api": Service("api", api.url), "mcp": Service("mcp", mcp.url)}
    mcp.stop()
    api.stop()


@pytest.fixture(params=["api", "mcp"])
def service(request: pytest.FixtureRequest, services: dict[str, Service]) -> Service:
    return services[request.param]


@pytest.fixture
def owner(database: embedded.EmbeddedDatabase, services: dict[str, Service]) -> Tenant:
    return new_tenant(database, services["api"].url)


def assert_refused(response: requests.Response, per: str) -> None:
    """The 429 of a failed sign-in over the limit: the envelope and ``Retry-After``."""
    assert response.status_code == 429, response.text
    body = response.json()
    assert body["success"] is False
    assert body["error"]["code"] == "rate_limited"
    assert (
        f"at most {LIMIT} requests per minute for failed sign-ins {per}"
        in (body["error"]["message"])
    )
    assert 1 <= int(response.headers["Retry-After"]) <= 61


def test_bad_tokens_from_one_address_never_refuse_a_valid_key(
    service: Service, owner: Tenant
) -> None:
    key = owner.client.key

    def scenario() -> None:
        peer = fresh_peer()
        flood = [service.call(bad_token(), peer).status_code for _ in range(LIMIT * 4)]
        assert set(flood) == {401, 429}
        for _ in range(10):
            assert service.call(key, peer).status_code == 200
            assert service.call(bad_token(), peer).status_code == 429

    in_one_window(scenario)


def test_a_client_sending_bad_tokens_is_refused_past_the_limit(service: Service) -> None:
    def scenario() -> None:
        peer = fresh_peer()
        # The LIMIT-th failure is answered 401, the next 429, with or without a token.
        assert [service.call(bad_token(), peer).status_code for _ in range(LIMIT)] == [401] * LIMIT
        assert_refused(service.call(bad_token(), peer), "from this address")
        assert_refused(service.call(None, peer), "from this address")

    in_one_window(scenario)


def test_behind_a_trusted_proxy_each_client_is_metered_by_its_own_address(
    service: Service, owner: Tenant
) -> None:
    key = owner.client.key

    def scenario() -> None:
        clients = [fresh_client() for _ in range(4)]
        # LIMIT failures from each of four clients behind the proxy: four times the limit
        # from the proxy's one address, and none of them is refused.
        for client in clients:
            for _ in range(LIMIT):
                assert service.call(bad_token(), PROXY, client).status_code == 401
        # The next from any of them is; what a client puts left of the proxy's entry
        # (its own made-up X-Forwarded-For) does not change whose it is.
        assert_refused(service.call(bad_token(), PROXY, clients[0]), "from this address")
        spoofed = f"{fresh_client()}, {clients[1]}"
        assert_refused(service.call(bad_token(), PROXY, spoofed), "from this address")
        # A valid key is served from every one of them, and from a client never seen.
        for client in [*clients, fresh_client()]:
            assert service.call(key, PROXY, client).status_code == 200

    in_one_window(scenario)


def test_x_forwarded_for_from_an_untrusted_peer_cannot_dodge_the_meter(
    service: Service,
) -> None:
    def scenario() -> None:
        peer = fresh_peer()
        for _ in range(LIMIT):
            assert service.call(bad_token(), peer, fresh_client()).status_code == 401
        assert_refused(service.call(bad_token(), peer, fresh_client()), "from this address")

    in_one_window(scenario)


def test_one_bad_token_is_metered_whichever_address_sends_it(service: Service) -> None:
    def scenario() -> None:
        token = bad_token()
        for _ in range(LIMIT):
            assert service.call(token, PROXY, fresh_client()).status_code == 401
        assert_refused(service.call(token, PROXY, fresh_client()), "with this token")
        assert service.call(bad_token(), PROXY, fresh_client()).status_code == 401

    in_one_window(scenario)


class Provider:
    """A provider whose introspection endpoint cannot answer (503); it counts the calls."""

    def __init__(self) -> None:
        self.introspections = 0
        provider = self

        class Handler(loopback.Handler):
            def do_GET(self) -> None:  # http.server's method name: the JWKS
                self.answer({"keys": []})

            def do_POST(self) -> None:  # http.server's method name: introspection
                self.body()
                provider.introspections += 1
                self.answer({"error": "temporarily_unavailable"}, status=503)

        self.server = loopback.Server(Handler)
        self.url = self.server.url


@pytest.fixture(scope="module")
def unchecked(database: embedded.EmbeddedDatabase) -> Iterator[tuple[Provider, dict[str, Service]]]:
    """grove-api and grove-mcp whose provider cannot check opaque tokens."""
    provider = Provider()
    env = {
        "GROVE_DATABASE_URL": database.runtime_url,
        **METERED,
        "GROVE_OIDC_ISSUER": "https://id.grove.test",
        "GROVE_OIDC_AUDIENCE": "grove-api",
        "GROVE_OIDC_AUTHORIZED_PARTY": "grove-website",
        "GROVE_OIDC_JWKS_URL": f"{provider.url}/jwks",
        "GROVE_OIDC_INTROSPECTION_URL": f"{provider.url}/introspect",
        "GROVE_OIDC_INTROSPECTION_CLIENT_ID": "grove",
        "GROVE_OIDC_INTROSPECTION_CLIENT_SECRET": "secret",
        "GROVE_WEBSITE_ORIGIN": "http://127.0.0.1:1",
    }
    started: list[Running] = []
    try:
        started.append(start_api(env))
        started.append(start_mcp(env, workers=1))
        yield (
            provider,
            {"api": Service("api", started[0].url), "mcp": Service("mcp", started[1].url)},
        )
    finally:
        for running in started:
            running.stop()
        provider.server.close()


@pytest.mark.parametrize("name", ["api", "mcp"])
def test_a_token_the_provider_cannot_check_is_metered_as_a_failure(
    unchecked: tuple[Provider, dict[str, Service]], name: str
) -> None:
    provider, services = unchecked
    service = services[name]
    # grove-mcp lets such a token through (its tool calls say why), grove-api answers 503.
    passed = 200 if name == "mcp" else 503

    def scenario() -> None:
        token, peer = f"opaque-{secrets.token_urlsafe(24)}", fresh_peer()
        asked = provider.introspections
        for _ in range(LIMIT):
            assert service.call(token, peer).status_code == passed
        assert_refused(service.call(token, peer), "from this address")
        # Refused now, it is not passed on to the provider any more.
        assert_refused(service.call(token, peer), "from this address")
        assert provider.introspections - asked == LIMIT + 1

    in_one_window(scenario)
