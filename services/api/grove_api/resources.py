"""What every /v1 resource shares: its base class and the success answer."""

from __future__ import annotations

from typing import Any

import falcon
from pydantic import BaseModel

from grove_api.wiring import Wiring
from grove_contracts.errors import success_envelope


def _ok(resp: falcon.Response, data: BaseModel | dict[str, Any], status: int = 200) -> None:
    """Answer ``data`` in the success envelope; a contract model is dumped here, once."""
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json")
    resp.status = status
    resp.media = success_envelope(data)


class Resource:
    """Base for the routes: the memory store and the body limit."""

    def __init__(self, wiring: Wiring) -> None:
        self.store = wiring.store
        self.max_body = wiring.max_body
