"""Executing registry tools: the same memory functions behind MCP, REST and the bridge."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from grove_auth.errors import OwnerSessionRequired
from grove_auth.principal import Principal
from grove_contracts.tools import OWNER_SESSION_OPERATIONS, OWNER_TOOLS_BY_NAME, TOOLS_BY_NAME
from grove_memory.errors import ServiceError
from grove_memory.notes import lifecycle, listing, notebooks, notes, subtrees
from grove_memory.search import recall
from grove_memory.store import Store

#: Why a registry operation that only the owner's session may run is refused here.
OWNER_SESSION_ONLY = (
    "This operation is for the account owner's session over REST, not for a connection's"
    " credential."
)


class UnknownTool(ServiceError):
    """No tool has that name on this server."""

    code = "unknown_tool"
    status = 404


#: A tool's operation: its answer is the tool's output model.
Handler = Callable[[Store, Principal, Any], BaseModel]

HANDLERS: dict[str, Handler] = {
    "remember": lambda s, p, r: notes.remember(s, p, r).memory,
    "recall": recall.recall,
    "update_memory": lambda s, p, r: notes.update_memory(s, p, r.id, r).memory,
    "forget": notes.forget,
    "get_memory": lambda s, p, r: notes.get_memory(s, p, r.id),
    "list_memories": listing.list_memories,
    "search_memories": recall.search,
    "memory_history": lambda s, p, r: notes.list_revisions(s, p, r.id, r.afterVersion, r.limit),
    "list_notebooks": notebooks.list_notebooks,
    "create_notebook": lambda s, p, r: notebooks.create_notebook(s, p, r)[0],
    "restore_memory": lifecycle.restore,
    "archive_memories": lifecycle.archive,
    "move_memories": lifecycle.move,
    "update_notebook": notebooks.update_notebook,
}


#: The owner session's operations (``OWNER_TOOLS``), each the same function as its route.
OWNER_HANDLERS: dict[str, Handler] = {
    "preview_notebook": lambda s, p, r: subtrees.preview(s, p, r.id),
    "archive_notebook": lambda s, p, r: subtrees.apply(s, p, r.id, "archive", r.fingerprint),
    "restore_notebook": lambda s, p, r: subtrees.apply(s, p, r.id, "restore", r.fingerprint),
    "delete_notebook": lambda s, p, r: subtrees.apply(s, p, r.id, "delete", r.fingerprint),
    "list_archived_notebooks": lambda s, p, r: subtrees.list_archived(s, p),
}


def parse(name: str, arguments: dict[str, Any]) -> BaseModel:
    """Validate arguments against the tool's input model (``ValidationError`` if bad)."""
    tool = TOOLS_BY_NAME.get(name) or OWNER_TOOLS_BY_NAME.get(name)
    if tool is None:
        raise UnknownTool(f"no tool named {name!r}")
    return tool.input_model.model_validate(arguments)


def call(
    store: Store, principal: Principal, name: str, arguments: dict[str, Any]
) -> dict[str, Any]:
    """Run one tool for a principal; the JSON of its output model (dumped here, once).

    An owner-session operation is refused to any other caller before its arguments are
    read, so a key learns nothing from them.
    """
    if name in OWNER_SESSION_OPERATIONS and not principal.is_owner:
        raise OwnerSessionRequired(OWNER_SESSION_ONLY)
    request = parse(name, arguments)
    handler = HANDLERS.get(name) or OWNER_HANDLERS[name]
    return handler(store, principal, request).model_dump(mode="json")
