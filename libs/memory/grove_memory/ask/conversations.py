"""Conversations: an owner's durable question-and-answer threads over their notes.

Only owner sessions use them. This module holds the records: create, list, read, hide
and search conversations, their wire shapes and their export. Asking the next question
(the turn machine: claim, generate, complete) is ``grove_memory.ask.turns``, which reads and
shapes conversations through the functions here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import datetime
from typing import Any
from uuid import UUID

from grove_auth.connections import require_owner
from grove_auth.principal import Principal
from grove_contracts.conversations import (
    CONVERSATION_PAGE,
    Conversation,
    ConversationDetail,
    ConversationHit,
    ConversationList,
    ConversationSearchPage,
    ConversationSearchRequest,
    CreateConversationRequest,
    DeletedConversation,
    Turn,
)
from grove_db.pool import Conn, transaction
from grove_memory import cursors
from grove_memory.errors import Gone, IdempotencyConflict, InvalidRequest, NotFound
from grove_memory.idempotency import hold_account, request_hash
from grove_memory.scope import check_notebook
from grove_memory.store import Store

PREVIEW_CHARS = 160

CONVERSATION_COLUMNS = """
    c.id, c.title, c.all_scopes, c.project_id, c.include_personal, c.version,
    c.created_at, c.updated_at, c.deleted_at, c.request_hash,
    (SELECT count(*) FROM conversation_turns t
     WHERE t.account_id = %(account_id)s AND t.conversation_id = c.id) AS turn_count
"""
#: A proposal row (alias ``p``) as its wire resource (``grove_contracts.proposals.Proposal``).
PROPOSAL_JSON = """jsonb_build_object(
    'id', p.id, 'source', p.source, 'summary', p.summary, 'change', p.change,
    'preview', p.preview, 'state', p.state, 'events', p.events)"""
TURN_COLUMNS = f"""
    t.id, t.ordinal, t.query, t.format, t.context, t.request_hash, t.status, t.attempts,
    t.lease_expires_at, t.outcome, t.answer_text, t.answer_format, t.generator, t.citations,
    t.sources, t.context_coverage, t.error, t.created_at, t.completed_at,
    (SELECT coalesce(jsonb_agg({PROPOSAL_JSON} ORDER BY p.ordinal), '[]')
     FROM turn_proposals p WHERE p.account_id = %(account_id)s
       AND p.conversation_id = t.conversation_id AND p.turn_id = t.id) AS proposals
"""
#: A conversation's turns, oldest first.
SELECT_TURNS = f"""
    SELECT {TURN_COLUMNS} FROM conversation_turns t
    WHERE t.account_id = %(account_id)s AND t.conversation_id = %(conversation)s
    ORDER BY t.ordinal
"""

#: A retried creation inserts nothing; its caller then compares the stored body.
INSERT_CONVERSATION = """
    INSERT INTO conversations (account_id, id, request_hash, all_scopes, project_id,
                               include_personal, title)
    VALUES (%(account)s, %(id)s, %(hash)s, %(all_scopes)s, %(project_id)s,
            %(include_personal)s, %(title)s)
    ON CONFLICT DO NOTHING RETURNING id
"""


def create_conversation(
    store: Store, principal: Principal, body: CreateConversationRequest
) -> tuple[Conversation, bool]:
    """Create the conversation ``body.id``, or return it again for the same body."""
    require_owner(principal)
    all_scopes = "projectId" not in body.model_fields_set
    include_personal = body.includePersonal
    if include_personal is None:
        include_personal = all_scopes or body.projectId is None
    values = {
        "all_scopes": all_scopes,
        "project_id": None if all_scopes else body.projectId,
        "include_personal": include_personal,
        "title": body.title,
    }
    digest = request_hash("create_conversation", values)
    with transaction(store.pool, principal.account_id) as conn:
        hold_account(conn, principal)
        if not all_scopes:
            check_notebook(conn, principal, body.projectId)
        created = conn.execute(
            INSERT_CONVERSATION,
            {"account": principal.account_id, "id": body.id, "hash": digest, **values},
        ).fetchone()
        row = conversation_row(conn, principal.account_id, body.id, deleted=True)
    assert row is not None
    if row["deleted_at"] is not None:
        raise Gone("this conversation was deleted")
    if row["request_hash"] != digest:
        raise IdempotencyConflict("this conversation ID was already used with another body")
    return as_conversation(row), created is not None


#: Live conversations, newest first, after the key ``(created_at, id)`` (none: the start).
LIST_PAGE = f"""
    SELECT {CONVERSATION_COLUMNS} FROM conversations c
    WHERE c.account_id = %(account_id)s AND c.deleted_at IS NULL
      AND (%(key_time)s::timestamptz IS NULL
           OR (c.created_at, c.id) < (%(key_time)s::timestamptz, %(key_id)s::uuid))
    ORDER BY c.created_at DESC, c.id DESC LIMIT %(limit)s
"""


def list_conversations(store: Store, principal: Principal, after: UUID | None) -> ConversationList:
    """A page of conversations, most recently created first, after the one named."""
    require_owner(principal)
    key: tuple[datetime | None, UUID | None] = (None, None)
    with transaction(store.pool, principal.account_id) as conn:
        if after is not None:
            # Deleted ones too: deleting the last row of a page keeps the next page.
            last = conversation_row(conn, principal.account_id, after, deleted=True)
            if last is None:
                raise InvalidRequest("after", "no such conversation")
            key = (last["created_at"], last["id"])
        rows = conn.execute(
            LIST_PAGE,
            {
                "account_id": principal.account_id,
                "key_time": key[0],
                "key_id": key[1],
                "limit": CONVERSATION_PAGE + 1,
            },
        ).fetchall()
    page = rows[:CONVERSATION_PAGE]
    more = len(rows) > CONVERSATION_PAGE
    return ConversationList(
        items=[as_conversation(r) for r in page], nextAfter=page[-1]["id"] if more else None
    )


def get_conversation(
    store: Store, principal: Principal, conversation_id: UUID
) -> ConversationDetail:
    """One live conversation with all of its turns, oldest first."""
    require_owner(principal)
    with transaction(store.pool, principal.account_id) as conn:
        row = conversation_row(conn, principal.account_id, conversation_id)
        if row is None:
            raise NotFound("conversation not found")
        turns = turn_rows(conn, principal.account_id, conversation_id)
    return ConversationDetail.model_validate(
        {**conversation_json(row), "turns": [turn_json(t) for t in turns]}
    )


#: Hiding keeps the row and its turns (the history is retained, never shown again).
HIDE_CONVERSATION = """
    UPDATE conversations SET deleted_at = statement_timestamp()
    WHERE account_id = %s AND id = %s AND deleted_at IS NULL RETURNING id
"""


def delete_conversation(
    store: Store, principal: Principal, conversation_id: UUID
) -> DeletedConversation:
    """Hide a conversation (its history is retained, never shown again)."""
    require_owner(principal)
    with transaction(store.pool, principal.account_id) as conn:
        deleted = conn.execute(
            HIDE_CONVERSATION, (principal.account_id, conversation_id)
        ).fetchone()
    if deleted is None:
        raise NotFound("conversation not found")
    return DeletedConversation(id=conversation_id, deleted=True)


#: Live conversations whose title or a question matches ``pattern`` (None: all), newest
#: first after the key, with the first matching question as the preview.
SEARCH = f"""
    SELECT {CONVERSATION_COLUMNS},
        (SELECT t.query FROM conversation_turns t
         WHERE t.account_id = %(account_id)s AND t.conversation_id = c.id
           AND (%(pattern)s::text IS NULL OR t.query ILIKE %(pattern)s ESCAPE '\\')
         ORDER BY t.ordinal LIMIT 1) AS preview
    FROM conversations c
    WHERE c.account_id = %(account_id)s AND c.deleted_at IS NULL
      AND (%(pattern)s::text IS NULL OR c.title ILIKE %(pattern)s ESCAPE '\\'
           OR EXISTS (SELECT 1 FROM conversation_turns t
                      WHERE t.account_id = %(account_id)s AND t.conversation_id = c.id
                        AND t.query ILIKE %(pattern)s ESCAPE '\\'))
      AND (%(key_time)s::timestamptz IS NULL
           OR (c.created_at, c.id) < (%(key_time)s::timestamptz, %(key_id)s::uuid))
    ORDER BY c.created_at DESC, c.id DESC
    LIMIT %(limit)s
"""


def search_conversations(
    store: Store, principal: Principal, body: ConversationSearchRequest
) -> ConversationSearchPage:
    """Conversations whose title or a question contains ``query`` (any case), newest
    first; the answers are never searched. The cursor binds account and query and
    keeps the exact creation time of the page's last row."""
    require_owner(principal)
    query = body.query.strip() if body.query else ""
    digest = hashlib.sha256(query.encode()).hexdigest()
    binding = {"a": str(principal.account_id), "l": "conversations", "q": digest}
    key: tuple[datetime | None, UUID | None] = (None, None)
    if body.after:
        key = cursors.newest_after(store.cursor_secret, body.after, binding)
    pattern = "%" + query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    with transaction(store.pool, principal.account_id) as conn:
        rows = conn.execute(
            SEARCH,
            {
                "account_id": principal.account_id,
                "pattern": pattern if query else None,
                "key_time": key[0],
                "key_id": key[1],
                "limit": CONVERSATION_PAGE + 1,
            },
        ).fetchall()
    page, next_cursor = cursors.newest_page(store.cursor_secret, binding, rows, CONVERSATION_PAGE)
    items = [
        ConversationHit.model_validate(
            {**conversation_json(r), "questionPreview": preview(r["preview"], PREVIEW_CHARS)}
        )
        for r in page
    ]
    return ConversationSearchPage(items=items, nextCursor=next_cursor)


SELECT_CONVERSATION = f"""
    SELECT {CONVERSATION_COLUMNS} FROM conversations c
    WHERE c.account_id = %(account_id)s AND c.id = %(id)s
"""
SELECT_LIVE_CONVERSATION = SELECT_CONVERSATION + " AND c.deleted_at IS NULL"


def conversation_row(
    conn: Conn, account_id: UUID, conversation_id: UUID, *, deleted: bool = False
) -> dict[str, Any] | None:
    """The conversation's row; a deleted one only when ``deleted`` asks for it.

    Every statement on conversations, turns and proposals names the account as a value
    (``account_id``), so that on a Citus cluster it runs on the account's node alone.
    """
    query = SELECT_CONVERSATION if deleted else SELECT_LIVE_CONVERSATION
    return conn.execute(query, {"account_id": account_id, "id": conversation_id}).fetchone()


def turn_rows(conn: Conn, account_id: UUID, conversation_id: UUID) -> list[dict[str, Any]]:
    """The conversation's turns, oldest first, each with its proposals."""
    values = {"account_id": account_id, "conversation": conversation_id}
    return conn.execute(SELECT_TURNS, values).fetchall()


def preview(text: str | None, limit: int) -> str | None:
    """The first non-empty line of ``text``, cut to ``limit`` characters."""
    if text is None:
        return None
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def as_conversation(row: dict[str, Any]) -> Conversation:
    """A conversation row as its summary resource."""
    return Conversation.model_validate(conversation_json(row))


def as_turn(row: dict[str, Any]) -> Turn:
    """A turn row as its resource (the answer only once completed with one)."""
    return Turn.model_validate(turn_json(row))


def conversation_json(row: dict[str, Any]) -> dict[str, Any]:
    """A conversation row as JSON (times in ``isoformat``), as the export writes it and
    ``as_conversation`` reads it."""
    return {
        "id": str(row["id"]),
        "title": row["title"],
        "allScopes": row["all_scopes"],
        "projectId": None if row["project_id"] is None else str(row["project_id"]),
        "includePersonal": row["include_personal"],
        "version": row["version"],
        "turnCount": int(row["turn_count"]),
        "createdAt": row["created_at"].isoformat(),
        "updatedAt": row["updated_at"].isoformat(),
    }


def turn_json(row: dict[str, Any]) -> dict[str, Any]:
    """A turn row as JSON (times in ``isoformat``), as the export writes it and ``as_turn``
    reads it."""
    answer = None
    if row["answer_text"] is not None:
        answer = {
            "text": row["answer_text"],
            "format": row["answer_format"],
            "generator": row["generator"],
            "citations": row["citations"],
        }
    return {
        "id": str(row["id"]),
        "ordinal": row["ordinal"],
        "query": row["query"],
        "format": row["format"],
        "context": row["context"],
        "status": row["status"],
        "outcome": row["outcome"],
        "answer": answer,
        "sources": row["sources"],
        "contextCoverage": row["context_coverage"],
        "error": row["error"],
        "attempts": row["attempts"],
        "leaseExpiresAt": _iso(row["lease_expires_at"]),
        "createdAt": row["created_at"].isoformat(),
        "completedAt": _iso(row["completed_at"]),
        "proposals": row["proposals"],
    }


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


#: Every live conversation of the transaction's account, oldest first.
EXPORTED_CONVERSATIONS = f"""
    SELECT {CONVERSATION_COLUMNS} FROM conversations c
    WHERE c.account_id = %(account_id)s AND c.deleted_at IS NULL
    ORDER BY c.created_at, c.id
"""


def exported_conversations(
    conn: Conn, account_id: UUID
) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Every live conversation of the account with its turns, oldest first (for the
    export; at most ``MAX_TURNS`` turns each, so one is held at a time)."""
    rows = conn.execute(EXPORTED_CONVERSATIONS, {"account_id": account_id}).fetchall()
    for row in rows:
        yield row, turn_rows(conn, account_id, row["id"])
