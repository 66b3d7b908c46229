"""What every /v1 resource shares: its base class and the success answer.

A route that any credential calls derives from ``Resource`` (the pool's routes, which
project keys may call too, from ``projects.PoolResource``) and answers through ``ok``;
only the public health and discovery routes, which take no principal, stand alone.
"""

from __future__ import annotations

from typing import Any

import falcon
from pydantic import BaseModel

from grove_api.wiring import Wiring
from grove_contracts.errors import success_envelope
from grove_memory.files.blobs import PostgresBlobs


def ok(resp: falcon.Response, data: BaseModel | dict[str, Any], status: int = 200) -> None:
    """Answer ``data`` in the success envelope; a contract model is dumped here, once."""
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json")
    resp.status = status
    resp.media = success_envelope(data)


class Resource:
    """Base of the routes: what their responders talk to, from the app's ``Wiring``.

    The store (pool, secrets, per-deployment switches), the settings, the body limit (a
    route with a limit of its own sets ``max_body`` in its ``__init__``), where files'
    bytes are kept, and the answering service with its deadline.
    """

    def __init__(self, wiring: Wiring) -> None:
        self.store = wiring.store
        self.settings = wiring.settings
        self.max_body = wiring.max_body
        self.blobs = PostgresBlobs()
        #: The ask service's ``Answer`` (None: no answering service is configured).
        self.answerer = wiring.answerer
        self.answer_timeout = wiring.answer_timeout
