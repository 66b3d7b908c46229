"""grove-client: a small, typed client of Grove's REST API.

``Grove(url, api_key)`` calls the API; every error answer raises a subclass of
``GroveError``. See docs/python.md in the Grove repository.
"""

from __future__ import annotations

from grove_client.client import USER_AGENT, VERSION, Grove
from grove_client.errors import (
    AuthError,
    Conflict,
    Gone,
    GroveError,
    NotFound,
    PayloadTooLarge,
    PermissionDenied,
    RateLimited,
    ServerError,
    Unavailable,
    ValidationError,
)
from grove_client.models import (
    BatchItemResult,
    BatchResult,
    ForgetResponse,
    ForgetResult,
    Memory,
    MemoryPage,
    NewNote,
    Notebook,
    Provenance,
    RecallItem,
    RecallResult,
    Revision,
    RevisionPage,
    SearchItem,
    SearchPage,
)

__version__ = VERSION

__all__ = [
    "USER_AGENT",
    "AuthError",
    "BatchItemResult",
    "BatchResult",
    "Conflict",
    "ForgetResponse",
    "ForgetResult",
    "Gone",
    "Grove",
    "GroveError",
    "Memory",
    "MemoryPage",
    "NewNote",
    "NotFound",
    "Notebook",
    "PayloadTooLarge",
    "PermissionDenied",
    "Provenance",
    "RateLimited",
    "RecallItem",
    "RecallResult",
    "Revision",
    "RevisionPage",
    "SearchItem",
    "SearchPage",
    "ServerError",
    "Unavailable",
    "ValidationError",
    "__version__",
]
