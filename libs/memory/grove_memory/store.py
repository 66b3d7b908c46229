"""What every memory operation needs: the runtime pool, its secrets and the settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from psycopg_pool import ConnectionPool

from grove_auth.errors import ConnectionRequired
from grove_auth.principal import Principal
from grove_memory.errors import Forbidden

#: Search and recall weigh BM25 this much against similarity, and drop semantic
#: candidates farther than this cosine distance (both chosen by bench.crossval on LoCoMo).
#: The weight stays above 0.5 by rule: then the only note holding a query's words (an
#: error code, a name) outranks every note that holds none of them, however close in
#: meaning (at 0.5 it ties the closest). LoCoMo has no such questions and its folds pick
#: 0.4-0.45 when allowed, so crossval's grid starts above 0.5.
DEFAULT_LEXICAL_WEIGHT = 0.55
DEFAULT_MAX_DISTANCE = 0.8
DEFAULT_QUERY_EMBED_SECONDS = 0.3
#: Days a file version replaced by a newer one keeps its bytes before they are purged
#: (``GROVE_FILE_VERSION_RETENTION_DAYS``): room to recover from a bad upload, not an
#: archive; they count against the account's file quota until then.
DEFAULT_FILE_VERSION_RETENTION_DAYS = 30


class QueryEmbedder(Protocol):
    """Turns a query into a vector, or raises ``grove_memory.inference.InferenceError``."""

    def embed_query(self, text: str, timeout: float) -> list[float]:
        """The query's vector within ``timeout`` seconds."""
        ...


@dataclass(frozen=True)
class Store:
    """The runtime connection pool, its secrets and per-deployment behaviour.

    Every memory operation takes one as its first argument. ``profile`` names the
    embedding profile (None: embeddings disabled): saves queue an embedding job for it
    and answer ``indexing: pending``, and recall fuses its vectors with full-text ranks.
    ``cursor_secret`` signs pagination cursors. ``automatic_capture_paused`` refuses
    ``capture: automatic`` saves server-wide (accounts can also pause on their own).

    ``key_secret`` hashes the project keys ``grove_memory.orgs.orgs`` issues (the api's
    API-key secret); ``share_secret`` hashes share-link tokens and ``share_public_url``
    is the base of the links ``grove_memory.notes.shares`` hands out. Left empty, a process
    issues neither (issuing then fails rather than hash with an empty key).
    ``project_memory_enabled`` is the platform switch of project memory
    (``GROVE_PROJECT_MEMORY_ENABLED``; off: every project-memory call answers 404), and
    ``max_project_records`` the most records one project's pool may hold
    (``GROVE_QUOTA_PROJECT_RECORDS``; 0: no limit). ``file_version_retention_days`` is
    how long a replaced file version's bytes are kept before the worker purges them.
    """

    pool: ConnectionPool
    cursor_secret: bytes
    profile: str | None = None
    embedder: QueryEmbedder | None = None
    lexical_weight: float = DEFAULT_LEXICAL_WEIGHT
    max_distance: float = DEFAULT_MAX_DISTANCE
    query_embed_seconds: float = DEFAULT_QUERY_EMBED_SECONDS
    automatic_capture_paused: bool = False
    key_secret: bytes = b""
    share_secret: bytes = b""
    share_public_url: str = ""
    project_memory_enabled: bool = True
    max_project_records: int = 0
    file_version_retention_days: int = DEFAULT_FILE_VERSION_RETENTION_DAYS

    @property
    def indexing(self) -> Literal["pending", "disabled"]:
        """What a save answers for ``indexing``."""
        return "pending" if self.profile else "disabled"


def require(principal: Principal, capability: Literal["read", "write", "delete"]) -> None:
    """Raise ``Forbidden`` unless the principal holds the capability.

    An OAuth client awaiting the owner's approval gets ``ConnectionRequired`` instead,
    with the approval link.
    """
    if principal.approval_url is not None:
        raise ConnectionRequired(
            principal.approval_url, principal.client_id or "", principal.revoked
        )
    held = {
        "read": principal.can_read,
        "write": principal.can_write,
        "delete": principal.can_delete,
    }[capability]
    if not held:
        raise Forbidden(f"this credential may not {capability} notes")
