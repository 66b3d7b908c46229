"""Uploading files the way a client does: the raw body with its ``Content-Type``, the
arguments in the query string (``POST /v1/files``, or a file's path for a new version)."""

from __future__ import annotations

from typing import Any

import requests

from tests.support.clients import Client, data_of

FILES = "/v1/files"


def upload(
    client: Client,
    data: Any,
    media: str = "text/plain",
    path: str = FILES,
    headers: dict[str, str] | None = None,
    **params: Any,
) -> requests.Response:
    """Send ``data`` (bytes, or an iterator of them) as a file; a new file is named
    ``runbook.txt`` unless ``name`` is given."""
    if path == FILES:
        params.setdefault("name", "runbook.txt")
    return client.session.post(
        client.base + path,
        params=params,
        data=data,
        headers=client.headers({"Content-Type": media, **(headers or {})}),
        timeout=30,
    )


def uploaded(client: Client, data: bytes, media: str = "text/plain", **params: Any) -> Any:
    """The stored file of an upload that must succeed (201)."""
    response = upload(client, data, media, **params)
    assert response.status_code == 201, response.text
    return data_of(response)
