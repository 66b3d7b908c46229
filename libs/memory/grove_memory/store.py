"""What every memory operation needs: the runtime pool and the service's settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from psycopg_pool import ConnectionPool

from grove_auth.principal import Principal
from grove_memory.errors import Forbidden

EmbeddingMode = Literal["pending", "disabled"]


@dataclass(frozen=True)
class Store:
    """The runtime connection pool plus per-deployment behaviour.

    ``indexing`` is what a save answers: ``pending`` (an embedding job is queued with
    the save) when an embedding profile is configured, ``disabled`` when none is.
    ``cursor_secret`` signs pagination cursors.
    """

    pool: ConnectionPool
    cursor_secret: bytes
    indexing: EmbeddingMode = "disabled"


def require(principal: Principal, capability: Literal["read", "write", "delete"]) -> None:
    """Raise ``Forbidden`` unless the principal holds the capability."""
    held = {
        "read": principal.can_read,
        "write": principal.can_write,
        "delete": principal.can_delete,
    }[capability]
    if not held:
        raise Forbidden(f"this credential may not {capability} notes")
