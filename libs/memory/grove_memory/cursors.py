"""Opaque, signed pagination cursors.

A cursor is ``base64url(json) "." base64url(hmac)``. It is bound to the account, the
connection, the listing's filters and a creation-time ceiling, so it cannot be edited,
moved to another listing, or used by another credential.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from datetime import datetime
from typing import Any
from uuid import UUID

from grove_memory.errors import InvalidCursor


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def encode(secret: bytes, payload: dict[str, Any]) -> str:
    """Sign and encode a cursor payload."""
    body = json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()
    signature = hmac.new(secret, body, hashlib.sha256).digest()
    return f"{_b64(body)}.{_b64(signature)}"


def decode(secret: bytes, cursor: str, binding: dict[str, Any]) -> dict[str, Any]:
    """Verify a cursor and that it was issued for ``binding``; return its payload."""
    try:
        body_text, _, signature_text = cursor.partition(".")
        body, signature = _unb64(body_text), _unb64(signature_text)
    except (ValueError, binascii.Error) as ex:
        raise InvalidCursor() from ex
    expected = hmac.new(secret, body, hashlib.sha256).digest()
    if not hmac.compare_digest(signature, expected):
        raise InvalidCursor()
    payload = json.loads(body)
    if not isinstance(payload, dict) or payload.get("bind") != binding:
        raise InvalidCursor()
    return payload


def newest_after(secret: bytes, cursor: str, binding: dict[str, Any]) -> tuple[datetime, UUID]:
    """The ``(created_at, id)`` a newest-first listing resumes after (``newest_page``'s
    cursor, checked against ``binding``)."""
    key = decode(secret, cursor, binding)["key"]
    return datetime.fromisoformat(key[0]), UUID(key[1])


def newest_page(
    secret: bytes, binding: dict[str, Any], rows: list[dict[str, Any]], limit: int
) -> tuple[list[dict[str, Any]], str | None]:
    """A newest-first page of ``rows`` (read one past ``limit``) and the cursor after its
    last row's ``(created_at, id)``; None when nothing follows."""
    page = rows[:limit]
    if len(rows) <= limit:
        return page, None
    last = [page[-1]["created_at"].isoformat(), str(page[-1]["id"])]
    return page, encode(secret, {"bind": binding, "key": last})
