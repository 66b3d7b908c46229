"""Get started: how to connect an agent, and a live wait for the first one.

The page a new owner lands on (no connection yet), and reachable later from the
navigation: the MCP address (``GROVE_MCP_PUBLIC_URL``) with ready-to-copy set-ups for the
common clients, a key and REST examples (``GROVE_API_PUBLIC_URL``), and, until an agent is
connected, "waiting for your first agent", which ``console.js`` turns into the approval
page as soon as a request arrives (``/start/status``; without scripts, the page's
own "Check again" link does the same).
"""

from __future__ import annotations

from typing import Any

import falcon

from grove_console.page import Page


def waiting(connections: list[dict[str, Any]]) -> dict[str, Any]:
    """Whether any connection is live, and the approval page of the newest pending
    request (the connection list is newest first)."""
    pending = next((c["pendingRequest"] for c in connections if c.get("pendingRequest")), None)
    return {
        "connected": any(c["status"] == "active" for c in connections),
        "approvalUrl": f"/connections/approve?request={pending['id']}" if pending else None,
    }


class Start(Page):
    """``GET /start``: the Get started page."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        self.session(req)
        connections = self.call(req, "GET", "/v1/connections")["items"]
        settings = self.deps.settings
        self.render(
            req,
            resp,
            "start.html",
            mcp_url=settings.mcp_public_url,
            api_url=settings.public_api_url,
            agents=waiting(connections),
            first=not connections,
        )


class Status(Page):
    """``GET /start/status``: ``{"connected", "approvalUrl"}`` for the waiting page's
    poll (JSON; the session's own connections only)."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        self.session(req)
        connections = self.call(req, "GET", "/v1/connections")["items"]
        resp.media = waiting(connections)
