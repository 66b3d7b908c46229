"""The client's real address, behind proxies the operator trusts (``GROVE_TRUSTED_PROXIES``).

Limits counted per client address (failed sign-ins on grove-api and grove-mcp) need the
client's own address: behind an ingress every client would otherwise share the
ingress's. ``X-Forwarded-For`` is believed only when the peer is a configured proxy, and
only as far as the chain of configured proxies goes, so a client that reaches a service
directly (or names itself in the header) cannot pick the address it is counted under.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated

from pydantic import field_validator
from pydantic_settings import BaseSettings, NoDecode

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

#: What a request with no peer address at all is counted as (never seen over TCP).
UNKNOWN = "unknown"


class ProxySettings(BaseSettings):
    """``GROVE_TRUSTED_PROXIES`` (a mixin of each metering service's settings)."""

    #: Proxies (IPs or CIDRs, comma-separated) whose ``X-Forwarded-For`` is believed;
    #: none by default: the peer address is the client's.
    trusted_proxies: Annotated[tuple[Network, ...], NoDecode] = ()

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _networks(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        networks = []
        for part in (p.strip() for p in value.split(",")):
            if not part:
                continue
            try:
                networks.append(ipaddress.ip_network(part, strict=False))
            except ValueError as ex:
                raise ValueError(f"{part!r} is not an IP address or CIDR range") from ex
        return tuple(networks)

    def proxies(self) -> TrustedProxies:
        """The trusted proxies, ready to find clients' addresses."""
        return TrustedProxies(self.trusted_proxies)


@dataclass(frozen=True)
class TrustedProxies:
    """Finds a request's client address from its peer and ``X-Forwarded-For``."""

    networks: tuple[Network, ...] = ()

    def client(self, peer: str | None, forwarded_for: Iterable[str] = ()) -> str:
        """The client's address: the peer's, unless the peer is a trusted proxy; then the
        right-most address of ``X-Forwarded-For`` (every value, in order) that is not
        one, or the left-most if all are. Each trusted proxy appends the address it was
        connected from, so everything left of the first untrusted one may be made up.
        An entry that is not an address ends the walk at the last trusted hop."""
        if peer is None:
            return UNKNOWN
        found = parsed(peer)
        if found is None:
            return peer
        if not self.trusts(found):
            return str(found)
        hops = [hop.strip() for value in forwarded_for for hop in value.split(",")]
        for hop in reversed(hops):
            address = parsed(hop)
            if address is None:
                break
            found = address
            if not self.trusts(address):
                break
        return str(found)

    def trusts(self, address: Address) -> bool:
        """Whether ``address`` is one of the configured proxies."""
        return any(address in network for network in self.networks)


def parsed(text: str) -> Address | None:
    """An IP address (an IPv4-mapped IPv6 one as IPv4), or None if ``text`` is not one."""
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address
