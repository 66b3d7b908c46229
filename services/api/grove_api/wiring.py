"""What every api resource is built from, assembled once per app by ``create_app``."""

from __future__ import annotations

from dataclasses import dataclass

from psycopg_pool import ConnectionPool

from grove_api.settings import ApiSettings
from grove_memory.inference import InferenceClient
from grove_memory.project_memory import ProjectPool
from grove_memory.store import Store


@dataclass(frozen=True)
class Wiring:
    """The settings, the pool, the secrets and the stores the resources talk to.

    One object, so each entry of ``grove_api.openapi.OPERATIONS`` can name its resource
    class (or a one-line factory) and ``create_app`` builds every route the same way.
    """

    settings: ApiSettings
    pool: ConnectionPool
    key_secret: bytes
    cursor_secret: bytes
    share_secret: bytes
    store: Store
    project_pool: ProjectPool
    #: The ask service's ``Answer`` (None: no answering service is configured).
    answerer: InferenceClient | None

    @property
    def max_body(self) -> int:
        """The largest request body a route reads, in bytes."""
        return self.settings.max_body_bytes

    @property
    def answer_timeout(self) -> float:
        """How long an answer may take, in seconds."""
        return self.settings.answer_timeout_ms / 1000
