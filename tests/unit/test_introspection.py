"""Introspection asks about every active token, and about an inactive one once a minute."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from grove_auth.errors import Unauthorized
from grove_auth.provider import NEGATIVE_ENTRIES, Discovery, Introspection
from tests.support import loopback

ISSUER = "https://id.grove.test"


class Endpoint:
    """An RFC 7662 endpoint on loopback: ``active`` tokens are active; it counts calls."""

    def __init__(self) -> None:
        self.calls = 0
        endpoint = self

        class Handler(loopback.Handler):
            def do_POST(self) -> None:  # http.server's method name
                endpoint.calls += 1
                active = "token=active" in self.body().decode()
                self.answer({"active": active, "iss": ISSUER, "sub": "someone"})

        self.server = loopback.Server(Handler)
        self.url = f"{self.server.url}/introspect"


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    running = Endpoint()
    yield running
    running.server.close()


def test_inactive_tokens_are_remembered_for_a_minute_active_ones_never(
    endpoint: Endpoint,
) -> None:
    now = [1000.0]
    introspection = Introspection(
        Discovery(ISSUER, introspection_url=endpoint.url), "grove", "secret", lambda: now[0]
    )
    for _ in range(3):
        assert introspection.claims("active")["sub"] == "someone"
    assert endpoint.calls == 3  # a revocation is seen at once
    for _ in range(3):
        with pytest.raises(Unauthorized):
            introspection.claims("made-up")
    assert endpoint.calls == 4
    now[0] += 61
    with pytest.raises(Unauthorized):
        introspection.claims("made-up")
    assert endpoint.calls == 5


def test_the_memory_of_inactive_tokens_is_bounded(endpoint: Endpoint) -> None:
    now = [1000.0]
    introspection = Introspection(
        Discovery(ISSUER, introspection_url=endpoint.url), "grove", "secret", lambda: now[0]
    )
    for i in range(NEGATIVE_ENTRIES + 5):
        introspection._remember_refused(i.to_bytes(32, "big"))
    assert len(introspection._refused) == NEGATIVE_ENTRIES
