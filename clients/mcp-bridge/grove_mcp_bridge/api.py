"""The two REST calls the bridge makes: the tool registry, and one tool call.

Both go to the Grove API with the key as the bearer token; an answer that is not a
success becomes an ``ApiError`` with the API's code, message and request ID.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx2
import mcp_types as types

#: A tool call may search and embed; the registry is one small document.
CALL_TIMEOUT_SECONDS = 60
REGISTRY_TIMEOUT_SECONDS = 10


@dataclass
class ApiError(Exception):
    """The API refused the request or did not answer."""

    code: str
    message: str
    request_id: str
    details: list[dict[str, str]] | None = None


@dataclass(frozen=True)
class Registry:
    """The tools the API offers (``GET /v1/tools``), and the instructions for models."""

    tools: dict[str, types.Tool]
    instructions: str | None


class GroveApi:
    """The Grove API at ``api_url``, called with one key."""

    def __init__(self, api_url: str, key: str) -> None:
        self._client = httpx2.AsyncClient(
            base_url=api_url.rstrip("/") + "/v1/",
            headers={"Authorization": f"Bearer {key}"},
            timeout=CALL_TIMEOUT_SECONDS,
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def registry(self, request_id: str) -> Registry:
        """The registry as the API publishes it: one source of truth, always the
        tools of the server the calls go to."""
        data = await self._send("GET", "tools", None, request_id, "the tool registry")
        tools = [types.Tool.model_validate(tool) for tool in data["tools"]]
        return Registry({tool.name: tool for tool in tools}, data.get("instructions"))

    async def call(self, name: str, arguments: dict[str, Any], request_id: str) -> dict[str, Any]:
        """``POST /v1/tools/{name}``; ``name`` must come from the registry, as it
        becomes part of the URL's path."""
        return await self._send("POST", "tools/" + name, arguments, request_id, repr(name))

    async def _send(
        self, method: str, path: str, body: dict[str, Any] | None, request_id: str, what: str
    ) -> dict[str, Any]:
        timeout = REGISTRY_TIMEOUT_SECONDS if method == "GET" else CALL_TIMEOUT_SECONDS
        try:
            response = await self._client.request(
                method, path, json=body, headers={"X-Request-Id": request_id}, timeout=timeout
            )
            answer = response.json()
        except (httpx2.HTTPError, ValueError) as ex:
            raise ApiError(
                "unavailable", f"the Grove API did not answer: {type(ex).__name__}", request_id
            ) from ex
        if isinstance(answer, dict) and answer.get("success") is True:
            data: dict[str, Any] = answer["data"]
            return data
        error = (answer.get("error") if isinstance(answer, dict) else None) or {}
        code, message = error.get("code", "internal"), error.get("message", "refused")
        if response.status_code == 404 and (code == "unknown_tool" or _route_missing(message)):
            code, message = "unsupported_by_server", f"this Grove API does not offer {what}"
        raise ApiError(code, message, error.get("requestId", request_id), error.get("details"))


def _route_missing(message: str) -> bool:
    # An API older than /v1/tools answers its generic route-not-found title.
    return message == "404 Not Found"
