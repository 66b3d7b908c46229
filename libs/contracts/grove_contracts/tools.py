"""The tool registry: each agent tool defined once, for MCP, REST and the stdio bridge.

A tool has a name, a title, a description written for models, annotations, and
pydantic input and output models; the JSON Schemas clients see come from those
models, so bounds, defaults and every argument's description are visible.
``grove_memory.notes.tools`` executes them. ``INSTRUCTIONS`` is what an MCP server (grove-mcp
and the stdio bridge alike) tells clients when they connect.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from grove_contracts.notebooks import (
    ArchivedNotebookList,
    CreateNotebookRequest,
    NoArguments,
    Notebook,
    NotebookList,
    NotebookListQuery,
    NotebookRef,
    SubtreeInput,
    SubtreePreview,
    SubtreeResult,
    UpdateNotebookRequest,
)
from grove_contracts.notes import (
    ArchiveRequest,
    ArchiveResponse,
    ForgetRequest,
    ForgetResponse,
    ListQuery,
    Memory,
    MemoryHistoryInput,
    MemoryPage,
    MemoryRef,
    MoveRequest,
    MoveResponse,
    RecallRequest,
    RecallResult,
    RememberRequest,
    RestoreRequest,
    RevisionPage,
    SavedMemory,
    SearchPage,
    SearchRequest,
    UpdateMemoryInput,
)

RETRIES = (
    " Give each mutation a new UUID `operationId` and keep the same one when retrying it:"
    " a retry then returns the first result instead of saving twice."
)
#: What recall and search say about the passages of uploaded files among their results.
PASSAGES = (
    " Results include passages of files the user uploaded (`kind: passage`), each citing"
    " its source in `file` (`fileId`, `version`, and `pages` of a PDF or `bytes` of the"
    " original): cite them by file and page; they cannot be updated or forgotten."
)
SCOPE = " `projectId: null` (or omitted) is the user's personal notes; a UUID is a notebook."
CONTENT = (
    " Content is CommonMark/GitHub-flavoured Markdown, 1-6,000 characters after trimming;"
    " a supplied `content` replaces the whole body."
)
CAPTURE = (
    " Set `capture` to `explicit` when the user asked you to remember something and to"
    " `automatic` when you save on your own initiative."
)
#: How to write a note that still makes sense when recalled alone, months later.
NOTE_WRITING = (
    " Write each note to stand alone: one fact a note (two things are two notes); name its"
    ' subject instead of writing "he", "it" or "the project"; write dates absolutely ("on'
    ' 2026-03-14", not "yesterday" or "last week"); and pick the kind that fits: lasting'
    " knowledge is a `preference`, `fact`, `decision` or `solution`, and a `handoff` is only"
    " where an unfinished task stands (by default it expires after 30 days)."
)
#: The MCP server's instructions, sent to clients at initialization.
INSTRUCTIONS = (
    "Grove is the user's long-term memory: recall before you start, remember what should"
    " outlast this conversation." + NOTE_WRITING
)


@dataclass(frozen=True)
class Tool:
    """One agent tool."""

    name: str
    title: str
    description: str
    input_model: type[BaseModel]
    output_model: type[BaseModel]
    read_only: bool
    destructive: bool = False
    idempotent: bool = True

    def annotations(self) -> dict[str, Any]:
        """MCP tool annotations (hints for clients; they never change behaviour)."""
        return {
            "title": self.title,
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": False,
        }

    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of the arguments."""
        return self.input_model.model_json_schema()

    def output_schema(self) -> dict[str, Any]:
        """The JSON Schema of ``structuredContent``."""
        return self.output_model.model_json_schema()

    def describe(self) -> dict[str, Any]:
        """The tool as published by ``GET /v1/tools`` (camelCase, like MCP's tools/list)."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.input_schema(),
            "outputSchema": self.output_schema(),
            "annotations": self.annotations(),
        }


class ToolAnnotations(BaseModel):
    """MCP tool annotations, as ``Tool.annotations`` gives them."""

    title: str
    readOnlyHint: bool
    destructiveHint: bool
    idempotentHint: bool
    openWorldHint: bool


class ToolDescription(BaseModel):
    """One tool as ``GET /v1/tools`` publishes it (``Tool.describe``)."""

    name: str
    title: str
    description: str
    inputSchema: dict[str, Any]
    outputSchema: dict[str, Any]
    annotations: ToolAnnotations


class ToolList(BaseModel):
    """The registry, in registry order, with the instructions an MCP server sends."""

    tools: list[ToolDescription]
    instructions: str


TOOLS: tuple[Tool, ...] = (
    Tool(
        "remember",
        "Remember a note",
        "Save a durable note about the user or the work: a preference, fact, decision,"
        " solution, or a handoff (the state of a task for whoever continues it; needs a"
        " stable `taskId`, and saving another handoff for that task updates it)."
        + NOTE_WRITING
        + CONTENT
        + SCOPE
        + CAPTURE
        + " The answer's `similar` lists up to three notes in the same scope that say much the"
        " same: when it is not empty, prefer `update_memory` on one of them over keeping"
        " near-duplicate notes."
        " To correct a note partly, use `update_memory`; passing `id`"
        " here replaces the whole note, metadata included." + RETRIES,
        RememberRequest,
        SavedMemory,
        read_only=False,
        idempotent=False,
    ),
    Tool(
        "recall",
        "Recall relevant notes",
        "Get the notes most relevant to a query, within a budget (default 8 notes and 6,000"
        " characters), or, with no query, the user's compact profile (preferences, facts,"
        " decisions) plus the handoff for `taskId`. Use at the start of a task and whenever"
        " past context may help; use `search_memories` to browse or page through matches."
        + SCOPE
        + " Recall searches that scope (plus personal notes unless"
        " `includePersonal` is false) and never other notebooks." + PASSAGES,
        RecallRequest,
        RecallResult,
        read_only=True,
    ),
    Tool(
        "update_memory",
        "Correct a note",
        "Correct part of a note: omitted fields stay as they are." + CONTENT + " Pass"
        " `expectedVersion` (from `get_memory`) to fail with version_conflict instead of"
        " overwriting someone else's change." + RETRIES,
        UpdateMemoryInput,
        Memory,
        read_only=False,
        idempotent=False,
    ),
    Tool(
        "forget",
        "Forget notes",
        "Delete up to 100 notes (by `ids`, or `items` with `expectedVersion`); each gets"
        " `deleted`, `not_found` or `version_conflict`. Deleted notes are never shown again"
        " and cannot be restored." + RETRIES,
        ForgetRequest,
        ForgetResponse,
        read_only=False,
        destructive=True,
    ),
    Tool(
        "get_memory",
        "Get a note",
        "Read one note with its current `version` and `indexing` state (`pending` until it"
        " can be found by meaning, then `ready`).",
        MemoryRef,
        Memory,
        read_only=True,
    ),
    Tool(
        "list_memories",
        "List notes",
        "List notes newest first (or by `sort`), filtered by kind, notebook (`projectId`: a"
        " UUID or `personal`), source agent, the connection that saved it (`connectionId`),"
        " update time or lifetime; pass `nextCursor` back"
        " as `cursor` for the next page (at most 100 per page).",
        ListQuery,
        MemoryPage,
        read_only=True,
    ),
    Tool(
        "search_memories",
        "Search notes",
        "Search notes by words and meaning; notes with more of the rarer words rank higher"
        ' (-word or -"a phrase" excludes). `sort` is `relevance` or'
        " `updated_desc`; page with"
        " `cursor`; `matches: true` explains each result." + SCOPE + " Omit `projectId` to"
        " search every scope you may read." + PASSAGES,
        SearchRequest,
        SearchPage,
        read_only=True,
    ),
    Tool(
        "memory_history",
        "Note history",
        "List a note's saved states, oldest first (every save and correction is kept).",
        MemoryHistoryInput,
        RevisionPage,
        read_only=True,
    ),
    Tool(
        "restore_memory",
        "Restore a note",
        "Undo changes to a note: un-archive it (its lifetime, if it has one, starts again),"
        " bring back an earlier revision (`version`, from `memory_history`; saved as a new"
        " revision, nothing is lost), and/or with `durable: true` turn a handoff into a"
        " permanent fact." + RETRIES,
        RestoreRequest,
        Memory,
        read_only=False,
        idempotent=False,
    ),
    Tool(
        "archive_memories",
        "Archive notes",
        "Set up to 100 notes aside: archived notes leave recall and search but are kept and"
        " can be restored with `restore_memory`. Prefer this to `forget` whenever the user"
        " might want the note back; forgetting cannot be undone." + RETRIES,
        ArchiveRequest,
        ArchiveResponse,
        read_only=False,
    ),
    Tool(
        "move_memories",
        "Move notes",
        "Move up to 100 notes to a notebook (`projectId`) or to personal notes"
        " (`projectId: null`). All or nothing: if any note cannot be moved (unknown, or"
        " outside your grants), none is." + RETRIES,
        MoveRequest,
        MoveResponse,
        read_only=False,
    ),
    Tool(
        "list_notebooks",
        "List notebooks",
        "List the notebooks this connection may use (children of `parentId`, or the top"
        " level with `root: true`); their IDs are the `projectId` of notes.",
        NotebookListQuery,
        NotebookList,
        read_only=True,
    ),
    Tool(
        "create_notebook",
        "Create a notebook",
        "Create a notebook (optionally inside `parentId`) to keep a project's notes"
        " together. Needs a connection granted all notebooks with write access." + RETRIES,
        CreateNotebookRequest,
        Notebook,
        read_only=False,
        idempotent=False,
    ),
    Tool(
        "update_notebook",
        "Rename or move a notebook",
        "Rename a notebook (`name`) or move it under another (`parentId`; `null` moves it to"
        " the top level). A notebook cannot move under itself or its descendants, and moves"
        " only out of and into notebooks you are granted (the top level needs all"
        " notebooks)." + RETRIES,
        UpdateNotebookRequest,
        Notebook,
        read_only=False,
    ),
)

TOOLS_BY_NAME: dict[str, Tool] = {tool.name: tool for tool in TOOLS}

#: Operations of the account owner's session, by name through ``POST /v1/tools/{tool}``
#: like the agent tools (the same operations as their REST routes): whole notebook
#: subtrees and the archived notebooks. They are not agent tools, so neither MCP nor
#: ``GET /v1/tools`` lists them; keys and agent tokens calling them are answered
#: ``owner_session_required`` rather than "unknown tool".
OWNER_TOOLS: tuple[Tool, ...] = (
    Tool(
        "preview_notebook",
        "Preview a notebook's subtree",
        "What archiving, restoring or deleting a notebook would touch (its notebooks and"
        " notes) and the `fingerprint` those operations take.",
        NotebookRef,
        SubtreePreview,
        read_only=True,
    ),
    Tool(
        "archive_notebook",
        "Archive a notebook's subtree",
        "Archive a notebook with everything in it, as previewed (`fingerprint`).",
        SubtreeInput,
        SubtreeResult,
        read_only=False,
        idempotent=False,
    ),
    Tool(
        "restore_notebook",
        "Restore a notebook's subtree",
        "Bring back what archiving the notebook set aside, as previewed (`fingerprint`).",
        SubtreeInput,
        SubtreeResult,
        read_only=False,
        idempotent=False,
    ),
    Tool(
        "delete_notebook",
        "Delete a notebook's subtree",
        "Delete a notebook with everything in it, as previewed (`fingerprint`).",
        SubtreeInput,
        SubtreeResult,
        read_only=False,
        destructive=True,
        idempotent=False,
    ),
    Tool(
        "list_archived_notebooks",
        "List archived notebooks",
        "Every archived (not deleted) notebook of the account, by name.",
        NoArguments,
        ArchivedNotebookList,
        read_only=True,
    ),
)

OWNER_TOOLS_BY_NAME: dict[str, Tool] = {tool.name: tool for tool in OWNER_TOOLS}

OWNER_SESSION_OPERATIONS = frozenset(OWNER_TOOLS_BY_NAME)
