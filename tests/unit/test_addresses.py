"""The client's address behind trusted proxies: only their ``X-Forwarded-For`` counts."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from pydantic_settings import SettingsConfigDict

from grove_auth.addresses import ProxySettings, TrustedProxies


class Settings(ProxySettings):
    model_config = SettingsConfigDict(env_prefix="GROVE_", frozen=True, extra="ignore")


PROXIES = Settings(trusted_proxies="10.0.0.1, 10.1.0.0/16 ,fd00::/8").proxies()  # type: ignore[arg-type]


def test_without_trusted_proxies_the_peer_is_the_client() -> None:
    assert TrustedProxies().client("10.0.0.1", ["198.51.100.7"]) == "10.0.0.1"


def test_x_forwarded_for_from_an_untrusted_peer_is_ignored() -> None:
    assert PROXIES.client("203.0.113.9", ["198.51.100.7"]) == "203.0.113.9"


@pytest.mark.parametrize(
    ("forwarded", "client"),
    [
        (["198.51.100.7"], "198.51.100.7"),
        # What the client wrote itself stands left of what the proxy appended.
        (["192.0.2.1, 198.51.100.7"], "198.51.100.7"),
        # Through two trusted proxies (one header, or one header each).
        (["192.0.2.1, 198.51.100.7, 10.1.2.3"], "198.51.100.7"),
        (["192.0.2.1, 198.51.100.7", "10.1.2.3"], "198.51.100.7"),
        # Every hop trusted: the left-most is the client.
        (["10.1.0.9, 10.1.2.3"], "10.1.0.9"),
        # Not an address: the walk ends at the last trusted hop.
        (["198.51.100.7, not-an-address"], "10.0.0.1"),
        (["198.51.100.7, unknown, 10.1.2.3"], "10.1.2.3"),
        ([], "10.0.0.1"),
        ([""], "10.0.0.1"),
        (["::ffff:198.51.100.7"], "198.51.100.7"),
        (["2001:db8::7, fd00::1"], "2001:db8::7"),
    ],
)
def test_the_right_most_untrusted_hop_is_the_client(forwarded: list[str], client: str) -> None:
    assert PROXIES.client("10.0.0.1", forwarded) == client


def test_a_peer_without_an_address_is_counted_as_it_is() -> None:
    assert PROXIES.client(None, ["198.51.100.7"]) == "unknown"
    assert PROXIES.client("unix-socket", ["198.51.100.7"]) == "unix-socket"
    assert PROXIES.client("::ffff:10.0.0.1", ["198.51.100.7"]) == "198.51.100.7"


def test_a_trusted_proxy_that_is_not_an_address_stops_start_up() -> None:
    with pytest.raises(ValidationError, match=r"'ingress\.local' is not an IP address or CIDR"):
        Settings(trusted_proxies="10.0.0.1, ingress.local")  # type: ignore[arg-type]
    assert Settings(trusted_proxies="").trusted_proxies == ()  # type: ignore[arg-type]
