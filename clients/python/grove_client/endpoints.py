"""Every route the client calls, as the API's OpenAPI document names it.

The client makes no request that is not in ``ENDPOINTS``, so the drift test, which
checks each one (path, method and response model) against the running API's
``/v1/openapi.json``, covers all of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import quote

from pydantic import BaseModel

from grove_client import models

#: How a call is made idempotent: an ``Idempotency-Key`` header, an ``operationId`` on
#: each item of the body (a batch refuses the header), or not at all (reads; restore,
#: which the API does not record).
Idempotency = Literal["header", "items", "none"]


@dataclass(frozen=True)
class Endpoint:
    """One method on one route, and what its success answer's ``data`` holds."""

    method: str
    path: str
    response: type[BaseModel]
    idempotency: Idempotency = "none"
    #: Whether the call may be resent after the connection failed mid-request: reads
    #: and idempotent mutations may; a mutation the API does not record may not.
    resend: bool = True

    def url(self, **parameters: object) -> str:
        """The path with its parameters filled in, each escaped."""
        return self.path.format(**{k: quote(str(v), safe="") for k, v in parameters.items()})


REMEMBER = Endpoint("POST", "/v1/memories", models.Memory, "header")
LIST = Endpoint("GET", "/v1/memories", models.MemoryPage)
BATCH = Endpoint("POST", "/v1/memories/batch", models.BatchResult, "items")
SEARCH = Endpoint("POST", "/v1/memories/search", models.SearchPage)
FORGET = Endpoint("POST", "/v1/memories/forget", models.ForgetResponse, "header")
GET = Endpoint("GET", "/v1/memories/{memory_id}", models.Memory)
UPDATE = Endpoint("PATCH", "/v1/memories/{memory_id}", models.Memory, "header")
REVISIONS = Endpoint("GET", "/v1/memories/{memory_id}/revisions", models.RevisionPage)
RESTORE = Endpoint("POST", "/v1/memories/{memory_id}/restore", models.Memory, resend=False)
RECALL = Endpoint("POST", "/v1/recall", models.RecallResult)
CREATE_NOTEBOOK = Endpoint("POST", "/v1/notebooks", models.Notebook, "header")
NOTEBOOKS = Endpoint("GET", "/v1/notebooks", models.NotebookList)

ENDPOINTS: tuple[Endpoint, ...] = (
    REMEMBER,
    LIST,
    BATCH,
    SEARCH,
    FORGET,
    GET,
    UPDATE,
    REVISIONS,
    RESTORE,
    RECALL,
    CREATE_NOTEBOOK,
    NOTEBOOKS,
)
