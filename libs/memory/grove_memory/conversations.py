"""Conversations: an owner's durable question-and-answer threads over their notes.

Only owner sessions use them. A turn runs in three steps, so no transaction is ever open
while an answer is generated:

1. *Claim* (one transaction): lock the conversation, replay or refuse a known turn ID,
   check ``expectedVersion``, the turn limit and any turn in progress, check and read the
   selected context (409 ``context_unavailable`` before anything advances), then insert
   the turn ``in_progress`` with a five-minute attempt lease and advance the version.
2. *Generate* (no transaction): strict context alone, or the context plus scoped evidence
   retrieved afresh by ``grove_memory.ask`` with the latest questions for references;
   then the ask service's ``Answer``, and ``verify_citations``.
3. *Complete* (one transaction): re-check the account and that the attempt still holds
   the turn, drop citations (and sources) of notes deleted meanwhile, store the answer.

An attempt that fails marks the turn ``failed``; one that crashes leaves its lease to
expire, after which the same turn ID and body may be retried. ``now`` (the clock the
lease is compared against) is injectable; by default it is the database's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from grove_auth.connections import require_owner
from grove_auth.errors import AuthError
from grove_auth.principal import Principal
from grove_contracts.ask import MAX_ASK_QUERY_CHARS, AskRequest
from grove_contracts.conversations import (
    CONVERSATION_PAGE,
    MAX_CONTEXT_NOTES,
    MAX_TURNS,
    ConversationSearchRequest,
    CreateConversationRequest,
    TurnContext,
    TurnRequest,
)
from grove_db.pool import Conn, transaction
from grove_memory import ask, cursors
from grove_memory.errors import (
    AccountDeleted,
    Gone,
    IdempotencyConflict,
    InvalidRequest,
    NotFound,
    ServiceError,
    VersionConflict,
)
from grove_memory.idempotency import request_hash
from grove_memory.inference import EvidenceText, Generated
from grove_memory.recall import lexical_candidates
from grove_memory.rows import MEMORY_COLUMNS
from grove_memory.scope import VISIBLE, check_project, params
from grove_memory.store import Store

#: How long one attempt at a turn holds it; a crashed attempt frees it after this.
ATTEMPT_LEASE = timedelta(minutes=5)
#: Earlier questions a turn's references resolve against (completed turns, newest last).
HISTORY_TURNS = 8
#: A question this short ("and the second one?") is retrieved together with the last one.
SHORT_QUESTION_WORDS = 4
PREVIEW_CHARS = 160
TITLE_CHARS = 80

CONVERSATION_COLUMNS = """
    c.id, c.title, c.all_scopes, c.project_id, c.include_personal, c.version,
    c.created_at, c.updated_at, c.deleted_at, c.request_hash,
    (SELECT count(*) FROM conversation_turns t
     WHERE t.account_id = c.account_id AND t.conversation_id = c.id) AS turn_count
"""
TURN_COLUMNS = """
    t.id, t.ordinal, t.query, t.format, t.context, t.request_hash, t.status, t.attempts,
    t.lease_expires_at, t.outcome, t.answer_text, t.answer_format, t.generator, t.citations,
    t.sources, t.context_coverage, t.error, t.created_at, t.completed_at
"""
SELECT_TURNS = f"""
    SELECT {TURN_COLUMNS} FROM conversation_turns t
    WHERE t.conversation_id = %s ORDER BY t.ordinal
"""
INSERT_TURN = """
    INSERT INTO conversation_turns (account_id, conversation_id, id, ordinal, query, format,
                                    context, request_hash, status, lease_expires_at)
    VALUES (%(account)s, %(conversation)s, %(id)s, %(ordinal)s, %(query)s, %(format)s,
            %(context)s, %(hash)s, 'in_progress', %(lease)s)
"""
COMPLETE_TURN = """
    UPDATE conversation_turns SET status = 'completed', lease_expires_at = NULL,
        outcome = %(outcome)s, answer_text = %(text)s, answer_format = %(answer_format)s,
        generator = %(generator)s, citations = %(citations)s, sources = %(sources)s,
        context_coverage = %(coverage)s, error = NULL, completed_at = statement_timestamp()
    WHERE conversation_id = %(conversation)s AND id = %(id)s
"""
SEARCH = f"""
    SELECT {CONVERSATION_COLUMNS},
        (SELECT t.query FROM conversation_turns t
         WHERE t.account_id = c.account_id AND t.conversation_id = c.id
           AND (%(pattern)s::text IS NULL OR t.query ILIKE %(pattern)s ESCAPE '\\')
         ORDER BY t.ordinal LIMIT 1) AS preview
    FROM conversations c
    WHERE c.deleted_at IS NULL
      AND (%(pattern)s::text IS NULL OR c.title ILIKE %(pattern)s ESCAPE '\\'
           OR EXISTS (SELECT 1 FROM conversation_turns t
                      WHERE t.account_id = c.account_id AND t.conversation_id = c.id
                        AND t.query ILIKE %(pattern)s ESCAPE '\\'))
      AND (%(key_time)s::timestamptz IS NULL
           OR (c.created_at, c.id) < (%(key_time)s::timestamptz, %(key_id)s::uuid))
    ORDER BY c.created_at DESC, c.id DESC
    LIMIT %(limit)s
"""


class ContextUnavailable(ServiceError):
    """A selected note or notebook is unknown, deleted, archived or not granted."""

    code = "context_unavailable"
    status = 409


class TurnInProgress(ServiceError):
    """Another answer is being written in this conversation; retry when it is done."""

    code = "turn_in_progress"
    status = 409


class ConversationFull(ServiceError):
    """This conversation holds the most turns it may; start a new conversation."""

    code = "conversation_full"
    status = 409


@dataclass
class Claim:
    """A turn this request holds (or ``done``: the stored reply of a finished one)."""

    conversation: dict[str, Any]
    turn_id: UUID
    attempt: int = 0
    previous: list[str] = field(default_factory=list)
    context: list[dict[str, Any]] = field(default_factory=list)
    coverage: dict[str, int] | None = None
    done: dict[str, Any] | None = None


@dataclass
class Outcome:
    """What generation produced, before the completing checks."""

    outcome: str
    generated: Generated | None = None
    citations: list[dict[str, Any]] = field(default_factory=list)
    sources: list[dict[str, Any]] = field(default_factory=list)


def create_conversation(
    store: Store, principal: Principal, body: CreateConversationRequest
) -> tuple[dict[str, Any], bool]:
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
        _hold_account(conn, principal)
        if not all_scopes:
            check_project(conn, principal, body.projectId)
        created = conn.execute(
            "INSERT INTO conversations (account_id, id, request_hash, all_scopes, project_id,"
            " include_personal, title) VALUES (%(account)s, %(id)s, %(hash)s, %(all_scopes)s,"
            " %(project_id)s, %(include_personal)s, %(title)s)"
            " ON CONFLICT DO NOTHING RETURNING id",
            {"account": principal.account_id, "id": body.id, "hash": digest, **values},
        ).fetchone()
        row = _conversation_row(conn, body.id, deleted=True)
    assert row is not None
    if row["deleted_at"] is not None:
        raise Gone("this conversation was deleted")
    if row["request_hash"] != digest:
        raise IdempotencyConflict("this conversation ID was already used with another body")
    return conversation_json(row), created is not None


def list_conversations(store: Store, principal: Principal, after: UUID | None) -> dict[str, Any]:
    """A page of conversations, most recently created first, after the one named."""
    require_owner(principal)
    key: tuple[datetime | None, UUID | None] = (None, None)
    with transaction(store.pool, principal.account_id) as conn:
        if after is not None:
            # Deleted ones too: deleting the last row of a page keeps the next page.
            last = _conversation_row(conn, after, deleted=True)
            if last is None:
                raise InvalidRequest("after", "no such conversation")
            key = (last["created_at"], last["id"])
        rows = conn.execute(
            f"SELECT {CONVERSATION_COLUMNS} FROM conversations c WHERE c.deleted_at IS NULL"
            " AND (%s::timestamptz IS NULL OR (c.created_at, c.id) < (%s::timestamptz, %s::uuid))"
            " ORDER BY c.created_at DESC, c.id DESC LIMIT %s",
            (key[0], key[0], key[1], CONVERSATION_PAGE + 1),
        ).fetchall()
    page = rows[:CONVERSATION_PAGE]
    more = len(rows) > CONVERSATION_PAGE
    return {
        "items": [conversation_json(r) for r in page],
        "nextAfter": str(page[-1]["id"]) if more else None,
    }


def get_conversation(store: Store, principal: Principal, conversation_id: UUID) -> dict[str, Any]:
    """One live conversation with all of its turns, oldest first."""
    require_owner(principal)
    with transaction(store.pool, principal.account_id) as conn:
        row = _conversation_row(conn, conversation_id)
        if row is None:
            raise NotFound("conversation not found")
        turns = conn.execute(SELECT_TURNS, (conversation_id,)).fetchall()
    return {**conversation_json(row), "turns": [turn_json(t) for t in turns]}


def delete_conversation(
    store: Store, principal: Principal, conversation_id: UUID
) -> dict[str, Any]:
    """Hide a conversation (its history is retained, never shown again)."""
    require_owner(principal)
    with transaction(store.pool, principal.account_id) as conn:
        deleted = conn.execute(
            "UPDATE conversations SET deleted_at = statement_timestamp()"
            " WHERE id = %s AND deleted_at IS NULL RETURNING id",
            (conversation_id,),
        ).fetchone()
    if deleted is None:
        raise NotFound("conversation not found")
    return {"id": str(conversation_id), "deleted": True}


def search_conversations(
    store: Store, principal: Principal, body: ConversationSearchRequest
) -> dict[str, Any]:
    """Conversations whose title or a question contains ``query`` (any case), newest
    first; the answers are never searched. The cursor binds account and query and
    keeps the exact creation time of the page's last row."""
    require_owner(principal)
    query = body.query.strip() if body.query else ""
    digest = hashlib.sha256(query.encode()).hexdigest()
    binding = {"a": str(principal.account_id), "l": "conversations", "q": digest}
    key: tuple[datetime | None, UUID | None] = (None, None)
    if body.after:
        payload = cursors.decode(store.cursor_secret, body.after, binding)
        key = (datetime.fromisoformat(payload["key"][0]), UUID(payload["key"][1]))
    pattern = "%" + query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    with transaction(store.pool, principal.account_id) as conn:
        rows = conn.execute(
            SEARCH,
            {
                "pattern": pattern if query else None,
                "key_time": key[0],
                "key_id": key[1],
                "limit": CONVERSATION_PAGE + 1,
            },
        ).fetchall()
    page = rows[:CONVERSATION_PAGE]
    next_cursor = None
    if len(rows) > CONVERSATION_PAGE:
        last = [page[-1]["created_at"].isoformat(), str(page[-1]["id"])]
        next_cursor = cursors.encode(store.cursor_secret, {"bind": binding, "key": last})
    items = [
        {**conversation_json(r), "questionPreview": _preview(r["preview"], PREVIEW_CHARS)}
        for r in page
    ]
    return {"items": items, "nextCursor": next_cursor}


def add_turn(
    store: Store,
    answerer: ask.Answerer,
    principal: Principal,
    conversation_id: UUID,
    body: TurnRequest,
    timeout: float,
    now: datetime | None = None,
) -> tuple[dict[str, Any], bool]:
    """Ask the next question; returns the reply and whether this request answered it.

    ``now`` is the clock the attempt lease is measured against (default: the
    database's); tests pass one to see a lease expire.
    """
    require_owner(principal)
    claim = _claim(store, principal, conversation_id, body, now)
    if claim.done is not None:
        return claim.done, False
    try:
        produced = _generate(store, answerer, principal, claim, body, timeout)
        return _complete(store, principal, claim, produced), True
    except Exception as ex:
        _fail(store, principal, claim, getattr(ex, "code", "internal"))
        raise


def _claim(
    store: Store,
    principal: Principal,
    conversation_id: UUID,
    body: TurnRequest,
    now: datetime | None,
) -> Claim:
    """Step 1: replay, refuse, or take the turn, in one transaction."""
    digest = request_hash("conversation_turn", body.model_dump(mode="json"))
    with transaction(store.pool, principal.account_id) as conn:
        _hold_account(conn, principal)
        clock = _clock(conn, now)
        conversation = conn.execute(
            f"SELECT {CONVERSATION_COLUMNS} FROM conversations c"
            " WHERE c.id = %s AND c.deleted_at IS NULL FOR UPDATE",
            (conversation_id,),
        ).fetchone()
        if conversation is None:
            raise NotFound("conversation not found")
        turns = conn.execute(SELECT_TURNS, (conversation_id,)).fetchall()
        claim = Claim(conversation, body.id)
        existing = next((t for t in turns if t["id"] == body.id), None)
        if existing is not None:
            attempt = _retry(conn, claim, turns, existing, digest, clock)
        else:
            attempt = _accept(conn, principal, claim, turns, body, digest, clock)
        if attempt is None:
            claim.done = _turn_reply(conn, conversation_id, body.id)
            return claim
        claim.attempt = attempt
        _check_scope(conn, principal, conversation)
        if body.context is not None:
            claim.context, claim.coverage = _context(conn, principal, body.query, body.context)
        if body.context is None or not body.context.only:
            completed = [t["query"] for t in turns if t["status"] == "completed"]
            claim.previous = completed[-HISTORY_TURNS:]
        claim.conversation = _conversation_row(conn, conversation_id) or conversation
    return claim


def _retry(
    conn: Conn,
    claim: Claim,
    turns: list[dict[str, Any]],
    turn: dict[str, Any],
    digest: str,
    clock: datetime,
) -> int | None:
    """A known turn ID: its stored reply (None), or a new attempt at a failed or
    abandoned latest turn (its attempt number)."""
    if turn["request_hash"] != digest:
        raise IdempotencyConflict("this turn ID was already used with another body")
    if turn["status"] == "completed" or turn["ordinal"] != turns[-1]["ordinal"]:
        return None
    if turn["status"] == "in_progress" and turn["lease_expires_at"] > clock:
        raise TurnInProgress("this turn is being answered; retry after its lease expires")
    attempt = int(turn["attempts"]) + 1
    conn.execute(
        "UPDATE conversation_turns SET status = 'in_progress', attempts = %s,"
        " lease_expires_at = %s, error = NULL WHERE conversation_id = %s AND id = %s",
        (attempt, clock + ATTEMPT_LEASE, claim.conversation["id"], turn["id"]),
    )
    return attempt


def _accept(
    conn: Conn,
    principal: Principal,
    claim: Claim,
    turns: list[dict[str, Any]],
    body: TurnRequest,
    digest: str,
    clock: datetime,
) -> int:
    """A new turn: check version, lease and limit, then insert it and advance."""
    conversation = claim.conversation
    if body.expectedVersion != conversation["version"]:
        raise VersionConflict(
            f"the conversation is at version {conversation['version']}, not"
            f" {body.expectedVersion}; read it again"
        )
    latest = turns[-1] if turns else None
    if latest is not None and latest["status"] == "in_progress":
        if latest["lease_expires_at"] > clock:
            raise TurnInProgress()
        _abandon(conn, conversation["id"], latest["id"])
    if len(turns) >= MAX_TURNS:
        raise ConversationFull(f"a conversation holds at most {MAX_TURNS} turns")
    conn.execute(
        INSERT_TURN,
        {
            "account": principal.account_id,
            "conversation": conversation["id"],
            "id": body.id,
            "ordinal": len(turns) + 1,
            "query": body.query,
            "format": body.format,
            "context": _context_json(body.context),
            "hash": digest,
            "lease": clock + ATTEMPT_LEASE,
        },
    )
    conn.execute(
        "UPDATE conversations SET version = version + 1, updated_at = statement_timestamp(),"
        " title = coalesce(title, %s) WHERE id = %s",
        (_preview(body.query, TITLE_CHARS), conversation["id"]),
    )
    return 1


def _context_json(context: TurnContext | None) -> Jsonb | None:
    return None if context is None else Jsonb(context.model_dump(mode="json"))


def _abandon(conn: Conn, conversation_id: UUID, turn_id: UUID) -> None:
    """Mark a crashed attempt's turn failed once a newer turn replaces it."""
    conn.execute(
        "UPDATE conversation_turns SET status = 'failed', lease_expires_at = NULL,"
        " error = 'abandoned' WHERE conversation_id = %s AND id = %s",
        (conversation_id, turn_id),
    )


def _check_scope(conn: Conn, principal: Principal, conversation: dict[str, Any]) -> None:
    """The conversation's notebook must still be there (it may have been deleted)."""
    if conversation["all_scopes"] or conversation["project_id"] is None:
        return
    try:
        check_project(conn, principal, conversation["project_id"])
    except NotFound as ex:
        raise ContextUnavailable("this conversation's notebook is no longer available") from ex


def _context(
    conn: Conn, principal: Principal, query: str, context: TurnContext
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The selected notes, then direct members of the selected notebooks, at most
    ``MAX_CONTEXT_NOTES`` in all (by keyword retrieval when more are available)."""
    notes = conn.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memories m"
        f" WHERE m.id = ANY(%(ids)s::uuid[]) AND m.archived_at IS NULL AND {VISIBLE}",
        params(principal, ids=context.notes),
    ).fetchall()
    if len(notes) != len(context.notes):
        missing = len(context.notes) - len(notes)
        raise ContextUnavailable(f"{missing} selected note(s) are deleted, archived or unknown")
    order = {note_id: index for index, note_id in enumerate(context.notes)}
    notes.sort(key=lambda row: order[row["id"]])
    if not context.notebooks:
        return notes, {"considered": len(notes), "available": len(notes)}
    _check_notebooks(conn, principal, context.notebooks)
    scope = "m.project_id = ANY(%(notebooks)s::uuid[]) AND NOT m.id = ANY(%(ids)s::uuid[])"
    values: dict[str, Any] = {"notebooks": context.notebooks, "ids": context.notes}
    counted = conn.execute(
        f"SELECT count(*) AS n FROM memories m WHERE {scope}"
        f" AND m.archived_at IS NULL AND {VISIBLE}",
        params(principal, **values),
    ).fetchone()
    available = int(counted["n"]) if counted else 0
    room = MAX_CONTEXT_NOTES - len(notes)
    if available <= room:
        members = conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE {scope}"
            f" AND m.archived_at IS NULL AND {VISIBLE} ORDER BY m.updated_at DESC, m.id",
            params(principal, **values),
        ).fetchall()
    else:
        members = lexical_candidates(conn, principal, query, scope, {**values, "limit": room})
    chosen = notes + members[:room]
    return chosen, {"considered": len(chosen), "available": len(notes) + available}


def _check_notebooks(conn: Conn, principal: Principal, notebooks: list[UUID]) -> None:
    rows = conn.execute(
        "SELECT id FROM projects WHERE id = ANY(%s::uuid[])"
        " AND deleted_at IS NULL AND archived_at IS NULL",
        (notebooks,),
    ).fetchall()
    found = {row["id"] for row in rows if principal.may_see_project(row["id"])}
    if len(found) != len(notebooks):
        missing = len(notebooks) - len(found)
        raise ContextUnavailable(f"{missing} selected notebook(s) are deleted, archived or unknown")


def _generate(
    store: Store,
    answerer: ask.Answerer,
    principal: Principal,
    claim: Claim,
    body: TurnRequest,
    timeout: float,
) -> Outcome:
    """Step 2, outside any transaction: gather evidence, call ``Answer``, verify."""
    sources = [_context_source(row) for row in claim.context]
    evidence = [EvidenceText(str(r["id"]), r["version"], r["content"]) for r in claim.context]
    if body.context is None or not body.context.only:
        seen = {e.note_id for e in evidence}
        for found in _retrieve(store, principal, claim, body.query):
            if found["noteId"] not in seen:
                sources.append({k: v for k, v in found.items() if k != "content"})
                evidence.append(EvidenceText(found["noteId"], found["version"], found["content"]))
    if not evidence:
        return Outcome("no_evidence", sources=sources)
    previous = claim.previous[-HISTORY_TURNS:]
    markdown = body.format == "markdown"
    generated = ask.generate(answerer, body.query, previous, evidence, markdown, timeout)
    if generated is None:
        return Outcome("disabled", sources=sources)
    citations = ask.verify_citations(generated.citations, evidence)
    if not generated.text or not citations:
        return Outcome("no_evidence", sources=sources)
    return Outcome("answered", generated, citations, sources)


def _retrieve(store: Store, principal: Principal, claim: Claim, query: str) -> list[dict[str, Any]]:
    """Scoped evidence retrieved afresh by ``grove_memory.ask``.

    A short question ("and the second one?") is searched with the latest earlier
    question, so its references find the notes they point at.
    """
    if len(query.split()) < SHORT_QUESTION_WORDS and claim.previous:
        query = f"{claim.previous[-1]} {query}"[:MAX_ASK_QUERY_CHARS]
    conversation = claim.conversation
    scope: dict[str, Any] = {"includePersonal": conversation["include_personal"]}
    if not conversation["all_scopes"]:
        scope["projectId"] = conversation["project_id"]
    return ask.find_sources(store, principal, AskRequest(query=query, mode="search", **scope))


def _complete(
    store: Store, principal: Principal, claim: Claim, produced: Outcome
) -> dict[str, Any]:
    """Step 3: re-check the account and the session, drop citations of notes deleted
    meanwhile, store the answer."""
    conversation_id = claim.conversation["id"]
    with transaction(store.pool, principal.account_id) as conn:
        _hold_account(conn, principal)
        _hold_session(conn, principal)
        turn = conn.execute(
            "SELECT status, attempts FROM conversation_turns"
            " WHERE conversation_id = %s AND id = %s FOR UPDATE",
            (conversation_id, claim.turn_id),
        ).fetchone()
        if turn is None or turn["status"] != "in_progress" or turn["attempts"] != claim.attempt:
            raise TurnInProgress("this attempt's lease expired and another attempt took the turn")
        live = _live_notes(conn, principal, [s["noteId"] for s in produced.sources])
        citations = [c for c in produced.citations if c["noteId"] in live]
        outcome, generated = produced.outcome, produced.generated
        if outcome == "answered" and not citations:
            outcome, generated = "no_evidence", None
        conn.execute(
            COMPLETE_TURN,
            {
                "conversation": conversation_id,
                "id": claim.turn_id,
                "outcome": outcome,
                "text": generated.text if generated else None,
                "answer_format": _format(generated),
                "generator": generated.generator if generated else None,
                "citations": Jsonb(citations if generated else []),
                "sources": Jsonb([s for s in produced.sources if s["noteId"] in live]),
                "coverage": None if claim.coverage is None else Jsonb(claim.coverage),
            },
        )
        conn.execute(
            "UPDATE conversations SET updated_at = statement_timestamp() WHERE id = %s",
            (conversation_id,),
        )
        return _turn_reply(conn, conversation_id, claim.turn_id)


def _format(generated: Generated | None) -> str | None:
    if generated is None:
        return None
    return "markdown" if generated.markdown else "plain"


def _live_notes(conn: Conn, principal: Principal, note_ids: list[str]) -> set[str]:
    """Which of these notes still exist (not deleted, archived or expired)."""
    rows = conn.execute(
        f"SELECT m.id FROM memories m WHERE m.id = ANY(%(ids)s::uuid[])"
        f" AND m.archived_at IS NULL AND {VISIBLE}",
        params(principal, ids=note_ids),
    ).fetchall()
    return {str(row["id"]) for row in rows}


def _fail(store: Store, principal: Principal, claim: Claim, code: str) -> None:
    """Mark this attempt's turn failed (unless another attempt took it meanwhile)."""
    with transaction(store.pool, principal.account_id) as conn:
        conn.execute(
            "UPDATE conversation_turns SET status = 'failed', lease_expires_at = NULL,"
            " error = %s WHERE conversation_id = %s AND id = %s"
            " AND status = 'in_progress' AND attempts = %s",
            (code, claim.conversation["id"], claim.turn_id, claim.attempt),
        )


def _hold_account(conn: Conn, principal: Principal) -> None:
    """Hold the live account for the transaction (an account deletion waits for it)."""
    live = conn.execute(
        "SELECT 1 FROM accounts WHERE id = %s AND deleted_at IS NULL FOR SHARE",
        (principal.account_id,),
    ).fetchone()
    if live is None:
        raise AccountDeleted()


def _hold_session(conn: Conn, principal: Principal) -> None:
    """The owner session is still good: its identity still owns the account, and its
    token (whose expiry is the provider's wall-clock time) has not expired while the
    answer was being written."""
    if principal.owner_identity is not None:
        issuer, subject = principal.owner_identity
        owns = conn.execute(
            "SELECT 1 FROM account_owners WHERE issuer = %s AND subject = %s AND account_id = %s",
            (issuer, subject, principal.account_id),
        ).fetchone()
        if owns is None:
            raise AuthError("this identity no longer owns the account")
    expires = principal.session_expires_at
    if expires is not None and datetime.now(UTC) >= expires:
        raise AuthError("the session expired while the answer was written; sign in and retry")


def _clock(conn: Conn, now: datetime | None) -> datetime:
    if now is not None:
        return now
    row = conn.execute("SELECT statement_timestamp() AS now").fetchone()
    assert row is not None
    return row["now"]  # type: ignore[no-any-return]


def _conversation_row(
    conn: Conn, conversation_id: UUID, *, deleted: bool = False
) -> dict[str, Any] | None:
    hidden = "" if deleted else " AND c.deleted_at IS NULL"
    return conn.execute(
        f"SELECT {CONVERSATION_COLUMNS} FROM conversations c WHERE c.id = %s{hidden}",
        (conversation_id,),
    ).fetchone()


def _turn_reply(conn: Conn, conversation_id: UUID, turn_id: UUID) -> dict[str, Any]:
    conversation = _conversation_row(conn, conversation_id, deleted=True)
    turn = conn.execute(
        f"SELECT {TURN_COLUMNS} FROM conversation_turns t"
        " WHERE t.conversation_id = %s AND t.id = %s",
        (conversation_id, turn_id),
    ).fetchone()
    assert conversation is not None and turn is not None
    return {"conversation": conversation_json(conversation), "turn": turn_json(turn)}


def _context_source(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "noteId": str(row["id"]),
        "version": row["version"],
        "kind": row["kind"],
        "projectId": None if row["project_id"] is None else str(row["project_id"]),
        "score": None,
    }


def _preview(text: str | None, limit: int) -> str | None:
    """The first non-empty line of ``text``, cut to ``limit`` characters."""
    if text is None:
        return None
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def conversation_json(row: dict[str, Any]) -> dict[str, Any]:
    """A conversation row as its wire summary."""
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
    """A turn row as its wire resource (the answer only once completed with one)."""
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
    }


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def exported_conversations(
    conn: Conn,
) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Every live conversation of the transaction's account with its turns, oldest first
    (for the export; at most ``MAX_TURNS`` turns each, so one is held at a time)."""
    rows = conn.execute(
        f"SELECT {CONVERSATION_COLUMNS} FROM conversations c WHERE c.deleted_at IS NULL"
        " ORDER BY c.created_at, c.id"
    ).fetchall()
    for row in rows:
        yield row, conn.execute(SELECT_TURNS, (row["id"],)).fetchall()
