"""What every api resource is built from, assembled once per app by ``create_app``."""

from __future__ import annotations

from dataclasses import dataclass

from psycopg_pool import ConnectionPool

from grove_api.settings import ApiSettings
from grove_memory.inference import InferenceClient
from grove_memory.store import Store


@dataclass(frozen=True)
class Wiring:
    """The settings, the store and the answering service the resources talk to.

    One object, so each route of ``grove_api.routes.ROUTES`` can name its resource
    class (or a one-line factory) and ``create_app`` builds every route the same way.
    ``store`` holds the pool, the secrets and the project-memory switches.
    """

    settings: ApiSettings
    store: Store
    #: The ask service's ``Answer`` (None: no answering service is configured).
    answerer: InferenceClient | None

    @property
    def pool(self) -> ConnectionPool:
        """The runtime pool (the store's)."""
        return self.store.pool

    @property
    def max_body(self) -> int:
        """The largest request body a route reads, in bytes."""
        return self.settings.max_body_bytes

    @property
    def max_batch_body(self) -> int:
        """The largest body of a batch save, in bytes (its own limit)."""
        return self.settings.max_batch_body_bytes

    @property
    def answer_timeout(self) -> float:
        """How long an answer may take, in seconds."""
        return self.settings.answer_timeout_ms / 1000
