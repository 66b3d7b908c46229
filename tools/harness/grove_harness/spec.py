"""What a rendered hook does: one project's retrieve URL, the query, the key variable.

Every value is checked here, before anything is rendered or written, against the same
bounds the retrieve route applies (a limit of 1 to 50, a query of 1 to 2,000 characters),
so a mistake shows up when the operator renders, not at every agent's session start.
"""

from __future__ import annotations

import base64
import ipaddress
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from grove_harness.errors import HarnessError
from grove_harness.rules import RulePack

DEFAULT_KEY_ENV = "GROVE_PROJECT_KEY"
DEFAULT_QUERY = "project rules, decisions, conventions and current state"
DEFAULT_LIMIT = 10
MAX_LIMIT = 50
MAX_QUERY_CHARS = 2000
UUID_TEXT = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class HookSpec:
    """A checked hook: where it retrieves, what it asks, where it finds the key."""

    api_url: str
    org_id: str
    project_id: str
    query: str
    limit: int
    key_env: str
    rules: RulePack | None = None

    @property
    def retrieve_url(self) -> str:
        return f"{self.api_url}/v1/orgs/{self.org_id}/projects/{self.project_id}/memory/retrieve"

    def config(self) -> dict[str, Any]:
        """The hook's configuration; it holds the key's variable name, never a key."""
        rules = None
        if self.rules is not None:
            encoded = base64.b64encode(self.rules.data).decode("ascii")
            rules = {"sha256": self.rules.sha256, "base64": encoded}
        return {
            "url": self.retrieve_url,
            "org": self.org_id,
            "project": self.project_id,
            "keyEnv": self.key_env,
            "query": self.query,
            "limit": self.limit,
            "rules": rules,
        }


def checked_spec(
    api_url: str,
    org: str,
    project: str,
    *,
    query: str = DEFAULT_QUERY,
    limit: int = DEFAULT_LIMIT,
    key_env: str = DEFAULT_KEY_ENV,
    rules: RulePack | None = None,
) -> HookSpec:
    """A ``HookSpec`` from operator input, or ``HarnessError`` naming the bad value."""
    if not 1 <= limit <= MAX_LIMIT:
        raise HarnessError(f"--limit must be between 1 and {MAX_LIMIT} (got {limit})")
    if not 1 <= len(query) <= MAX_QUERY_CHARS or CONTROL.search(query):
        raise HarnessError(
            f"--query must be 1 to {MAX_QUERY_CHARS} characters without control characters"
        )
    if not ENV_NAME.fullmatch(key_env):
        raise HarnessError(f"--key-env must be an environment variable name (got {key_env!r})")
    return HookSpec(
        api_url=api_base_url(api_url),
        org_id=uuid_text(org, "--org"),
        project_id=uuid_text(project, "--project"),
        query=query,
        limit=limit,
        key_env=key_env,
        rules=rules,
    )


def uuid_text(value: str, option: str) -> str:
    """A UUID in its canonical hyphenated form, lower case."""
    if not UUID_TEXT.fullmatch(value):
        raise HarnessError(f"{option} must be a hyphenated UUID (got {value!r})")
    return value.lower()


def api_base_url(value: str) -> str:
    """The API's base URL: http(s), a host, no credentials, query or fragment."""
    if not value.isascii() or any(c.isspace() or not c.isprintable() for c in value):
        raise HarnessError("--api-url must be plain ASCII without spaces (punycode a host)")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise HarnessError(f"--api-url must be an http:// or https:// URL (got {value!r})")
    if parts.username is not None or parts.password is not None:
        raise HarnessError("--api-url must not hold credentials: the key comes from --key-env")
    if parts.query or parts.fragment or value.endswith(("?", "#")):
        raise HarnessError("--api-url must not have a query or a fragment")
    try:
        parts.port  # noqa: B018  urlsplit checks the port only when it is read
    except ValueError as ex:
        raise HarnessError(f"--api-url has an invalid port (got {value!r})") from ex
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))


def is_loopback(url: str) -> bool:
    """Whether ``url`` names this machine (where plain http cannot be overheard)."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
