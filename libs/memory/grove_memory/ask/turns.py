"""Turns: asking the next question in a conversation and storing its cited answer.

Only owner sessions use them. A turn runs in three steps, so no transaction is ever open
while an answer is generated:

1. *Claim* (one transaction): lock the conversation, replay or refuse a known turn ID,
   check ``expectedVersion``, the turn limit and any turn in progress, check and read the
   selected context (409 ``context_unavailable`` before anything advances), then insert
   the turn ``in_progress`` with a five-minute attempt lease and advance the version.
2. *Generate* (no transaction): strict context alone, or the context plus scoped evidence
   retrieved afresh by ``grove_memory.ask.ask`` with the latest questions for references;
   then the ask service's ``Answer``, and ``verify_citations``. Then ask the ask service
   (``Describe``) which generator and settings it answers with now: if they are not
   the ones that wrote the answer (the model was changed, or answering switched off,
   meanwhile), the turn fails with 409 ``generator_changed`` and stores nothing, so an
   answer is never kept as if the new configuration had written it.
3. *Complete* (one transaction): re-check the account, the owner session, the
   conversation (still there, its notebook still available: what the claim checked)
   and that the attempt still holds the turn, drop citations (and sources) of notes
   deleted meanwhile, store the answer.

An attempt that fails marks the turn ``failed``; one that crashes leaves its lease to
expire, after which the same turn ID and body may be retried. ``now`` (the clock the
lease is compared against) is injectable; by default it is the database's. The
conversations themselves (their rows and wire shapes) are ``grove_memory.ask.conversations``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from grove_auth.connections import require_owner
from grove_auth.principal import Principal
from grove_contracts.ask import MAX_ASK_QUERY_CHARS, AskRequest
from grove_contracts.conversations import (
    MAX_CONTEXT_NOTES,
    MAX_TURNS,
    TurnContext,
    TurnReply,
    TurnRequest,
)
from grove_contracts.proposals import MAX_PROPOSAL_NOTEBOOKS, ProposalDraft, ProposalSource
from grove_db.pool import Conn, transaction
from grove_memory.ask import ask, cleanup, proposals, proposer
from grove_memory.ask.conversations import (
    CONVERSATION_COLUMNS,
    TURN_COLUMNS,
    as_conversation,
    as_turn,
    conversation_row,
    preview,
    turn_rows,
)
from grove_memory.errors import IdempotencyConflict, NotFound, ServiceError, VersionConflict
from grove_memory.idempotency import hold_account, hold_session, request_hash
from grove_memory.inference import EvidenceText, Generated
from grove_memory.rows import MEMORY_COLUMNS
from grove_memory.scope import VISIBLE, check_notebook, params
from grove_memory.search.recall import lexical_candidates
from grove_memory.store import Store

#: How long one attempt at a turn holds it; a crashed attempt frees it after this.
ATTEMPT_LEASE = timedelta(minutes=5)
#: Earlier questions a turn's references resolve against (completed turns, newest last).
HISTORY_TURNS = 8
#: A question this short ("and the second one?") is retrieved together with the last one.
SHORT_QUESTION_WORDS = 4
TITLE_CHARS = 80


class ContextUnavailable(ServiceError):
    """A selected note or notebook is unknown, deleted, archived or not granted."""

    code = "context_unavailable"
    status = 409


class TurnInProgress(ServiceError):
    """Another answer is being written in this conversation; retry when it is done."""

    code = "turn_in_progress"
    status = 409


class GeneratorChanged(ServiceError):
    """The ask service's answer generator or its settings changed while this answer was
    written; nothing was stored: ask again."""

    code = "generator_changed"
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
    selectors: dict[str, Any] | None = None
    notebooks: list[tuple[str, str]] = field(default_factory=list)
    coverage: dict[str, int] | None = None
    cleanup: bool = False
    done: TurnReply | None = None


@dataclass
class Outcome:
    """What generation produced, before the completing checks."""

    outcome: str
    generated: Generated | None = None
    citations: list[dict[str, Any]] = field(default_factory=list)
    sources: list[dict[str, Any]] = field(default_factory=list)


def add_turn(
    store: Store,
    answerer: ask.Answerer,
    principal: Principal,
    conversation_id: UUID,
    body: TurnRequest,
    timeout: float,
    now: datetime | None = None,
) -> tuple[TurnReply, bool]:
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
        _recheck_generator(answerer, produced, timeout)
        return _complete(store, principal, claim, produced), True
    except Exception as ex:
        _fail(store, principal, claim, getattr(ex, "code", "internal"))
        raise


#: The live conversation, locked: one claim at a time decides its next turn.
LOCK_CONVERSATION = f"""
    SELECT {CONVERSATION_COLUMNS} FROM conversations c
    WHERE c.account_id = %(account_id)s AND c.id = %(id)s AND c.deleted_at IS NULL FOR UPDATE
"""


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
        hold_account(conn, principal)
        clock = _clock(conn, now)
        conversation = _lock_conversation(conn, principal, conversation_id)
        if conversation is None:
            raise NotFound("conversation not found")
        turns = turn_rows(conn, principal.account_id, conversation_id)
        claim = Claim(conversation, body.id)
        existing = next((t for t in turns if t["id"] == body.id), None)
        if existing is not None:
            attempt = _retry(conn, principal, claim, turns, existing, digest, clock)
        else:
            attempt = _accept(conn, principal, claim, turns, body, digest, clock)
        if attempt is None:
            claim.done = _turn_reply(conn, principal, conversation_id, body.id)
            return claim
        claim.attempt = attempt
        _check_scope(conn, principal, conversation)
        if body.context is not None:
            claim.context, claim.coverage = _context(conn, principal, body.query, body.context)
            claim.selectors = body.context.model_dump(mode="json")
        if body.context is None or not body.context.only:
            completed = [t["query"] for t in turns if t["status"] == "completed"]
            claim.previous = completed[-HISTORY_TURNS:]
            claim.cleanup = cleanup.is_cleanup(body.query)
        fresh = conversation_row(conn, principal.account_id, conversation_id)
        claim.conversation = fresh or conversation
        rows = conn.execute(
            PROPOSABLE_NOTEBOOKS, (principal.account_id, MAX_PROPOSAL_NOTEBOOKS)
        ).fetchall()
        claim.notebooks = [(str(r["id"]), r["name"]) for r in rows]
    return claim


#: The notebooks a model may name in proposals (as destinations, or to archive, restore
#: or delete: ``grove_memory.ask.proposals`` checks each against the scope), by name.
PROPOSABLE_NOTEBOOKS = """
    SELECT id, CASE WHEN archived_at IS NULL THEN name
                    ELSE left(name, 189) || ' (archived)' END AS name
    FROM projects WHERE account_id = %s AND deleted_at IS NULL ORDER BY name, id LIMIT %s
"""


#: A new attempt at a known turn: ``in_progress`` again under a fresh lease.
RETRY_TURN = """
    UPDATE conversation_turns SET status = 'in_progress', attempts = %s,
        lease_expires_at = %s, error = NULL
    WHERE account_id = %s AND conversation_id = %s AND id = %s
"""


def _retry(
    conn: Conn,
    principal: Principal,
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
    key = (principal.account_id, claim.conversation["id"], turn["id"])
    conn.execute(RETRY_TURN, (attempt, clock + ATTEMPT_LEASE, *key))
    return attempt


INSERT_TURN = """
    INSERT INTO conversation_turns (account_id, conversation_id, id, ordinal, query, format,
                                    context, request_hash, status, lease_expires_at)
    VALUES (%(account)s, %(conversation)s, %(id)s, %(ordinal)s, %(query)s, %(format)s,
            %(context)s, %(hash)s, 'in_progress', %(lease)s)
"""
#: A new turn advances the version; the first question titles an untitled conversation.
ADVANCE_CONVERSATION = """
    UPDATE conversations SET version = version + 1, updated_at = statement_timestamp(),
        title = coalesce(title, %s)
    WHERE account_id = %s AND id = %s
"""


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
        _abandon(conn, principal.account_id, conversation["id"], latest["id"])
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
    title = preview(body.query, TITLE_CHARS)
    conn.execute(ADVANCE_CONVERSATION, (title, principal.account_id, conversation["id"]))
    return 1


def _context_json(context: TurnContext | None) -> Jsonb | None:
    return None if context is None else Jsonb(context.model_dump(mode="json"))


ABANDON_TURN = """
    UPDATE conversation_turns SET status = 'failed', lease_expires_at = NULL,
        error = 'abandoned'
    WHERE account_id = %s AND conversation_id = %s AND id = %s
"""


def _abandon(conn: Conn, account_id: UUID, conversation_id: UUID, turn_id: UUID) -> None:
    """Mark a crashed attempt's turn failed once a newer turn replaces it."""
    conn.execute(ABANDON_TURN, (account_id, conversation_id, turn_id))


def _check_scope(conn: Conn, principal: Principal, conversation: dict[str, Any]) -> None:
    """The conversation's notebook must still be there (it may have been deleted)."""
    if conversation["all_scopes"] or conversation["project_id"] is None:
        return
    try:
        check_notebook(conn, principal, conversation["project_id"])
    except NotFound as ex:
        raise ContextUnavailable("this conversation's notebook is no longer available") from ex


#: The selected notes that are live and granted.
SELECTED_NOTES = f"""
    SELECT {MEMORY_COLUMNS} FROM memories m
    WHERE m.id = ANY(%(ids)s::uuid[]) AND m.archived_at IS NULL AND {VISIBLE}
"""
#: Direct members of the selected notebooks not selected themselves (a ``WHERE`` part,
#: also handed to ``lexical_candidates``).
NOTEBOOK_MEMBERS = "m.project_id = ANY(%(notebooks)s::uuid[]) AND NOT m.id = ANY(%(ids)s::uuid[])"
COUNT_MEMBERS = f"""
    SELECT count(*) AS n FROM memories m
    WHERE {NOTEBOOK_MEMBERS} AND m.archived_at IS NULL AND {VISIBLE}
"""
SELECT_MEMBERS = f"""
    SELECT {MEMORY_COLUMNS} FROM memories m
    WHERE {NOTEBOOK_MEMBERS} AND m.archived_at IS NULL AND {VISIBLE}
    ORDER BY m.updated_at DESC, m.id
"""


def _context(
    conn: Conn, principal: Principal, query: str, context: TurnContext
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The selected notes, then direct members of the selected notebooks, at most
    ``MAX_CONTEXT_NOTES`` in all (by keyword retrieval when more are available)."""
    notes = conn.execute(SELECTED_NOTES, params(principal, ids=context.notes)).fetchall()
    if len(notes) != len(context.notes):
        missing = len(context.notes) - len(notes)
        raise ContextUnavailable(f"{missing} selected note(s) are deleted, archived or unknown")
    order = {note_id: index for index, note_id in enumerate(context.notes)}
    notes.sort(key=lambda row: order[row["id"]])
    if not context.notebooks:
        return notes, {"considered": len(notes), "available": len(notes)}
    _check_notebooks(conn, principal, context.notebooks)
    values: dict[str, Any] = {"notebooks": context.notebooks, "ids": context.notes}
    counted = conn.execute(COUNT_MEMBERS, params(principal, **values)).fetchone()
    available = int(counted["n"]) if counted else 0
    room = MAX_CONTEXT_NOTES - len(notes)
    if available <= room:
        members = conn.execute(SELECT_MEMBERS, params(principal, **values)).fetchall()
    else:
        members = lexical_candidates(
            conn, principal, query, NOTEBOOK_MEMBERS, {**values, "limit": room}
        )
    chosen = notes + members[:room]
    return chosen, {"considered": len(chosen), "available": len(notes) + available}


#: Which of the selected notebooks are live (whether each is granted is checked after).
LIVE_NOTEBOOKS = """
    SELECT id FROM projects WHERE account_id = %s AND id = ANY(%s::uuid[])
      AND deleted_at IS NULL AND archived_at IS NULL
"""


def _check_notebooks(conn: Conn, principal: Principal, notebooks: list[UUID]) -> None:
    rows = conn.execute(LIVE_NOTEBOOKS, (principal.account_id, notebooks)).fetchall()
    found = {row["id"] for row in rows if principal.may_see_notebook(row["id"])}
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
    generated = ask.generate(
        answerer, body.query, previous, evidence, markdown, timeout, notebooks=claim.notebooks
    )
    if generated is None:
        return Outcome("disabled", sources=sources)
    citations = ask.verify_citations(generated.citations, evidence)
    if not generated.text or not citations:
        return Outcome("no_evidence", sources=sources)
    return Outcome("answered", generated, citations, sources)


def _recheck_generator(answerer: ask.Answerer, produced: Outcome, timeout: float) -> None:
    """Refuse an answer written with settings the ask service no longer has."""
    if produced.generated is None:
        return
    now = ask.configuration(answerer, timeout)
    if now != produced.generated.configuration:
        raise GeneratorChanged(
            f"the answer was written by {produced.generated.configuration or 'unknown'}"
            f" but the ask service now answers with {now}; nothing was stored: ask again"
        )


def _retrieve(store: Store, principal: Principal, claim: Claim, query: str) -> list[dict[str, Any]]:
    """Scoped evidence retrieved afresh by ``grove_memory.ask.ask``.

    A short question ("and the second one?") is searched with the latest earlier
    question, so its references find the notes they point at.
    """
    if len(query.split()) < SHORT_QUESTION_WORDS and claim.previous:
        query = f"{claim.previous[-1]} {query}"[:MAX_ASK_QUERY_CHARS]
    return ask.find_sources(store, principal, _scoped(claim.conversation, query))


def _scoped(conversation: dict[str, Any], query: str) -> AskRequest:
    """A search for ``query`` in the conversation's scope."""
    scope: dict[str, Any] = {"includePersonal": conversation["include_personal"]}
    if not conversation["all_scopes"]:
        scope["projectId"] = conversation["project_id"]
    return AskRequest(query=query, mode="search", **scope)


#: The turn's attempt, locked: only the attempt that still holds the turn completes it.
LOCK_TURN = """
    SELECT status, attempts FROM conversation_turns
    WHERE account_id = %s AND conversation_id = %s AND id = %s FOR UPDATE
"""
COMPLETE_TURN = """
    UPDATE conversation_turns SET status = 'completed', lease_expires_at = NULL,
        outcome = %(outcome)s, answer_text = %(text)s, answer_format = %(answer_format)s,
        generator = %(generator)s, citations = %(citations)s, sources = %(sources)s,
        context_coverage = %(coverage)s, error = NULL, completed_at = statement_timestamp()
    WHERE account_id = %(account_id)s AND conversation_id = %(conversation)s AND id = %(id)s
"""
TOUCH_CONVERSATION = """
    UPDATE conversations SET updated_at = statement_timestamp() WHERE account_id = %s AND id = %s
"""


def _complete(store: Store, principal: Principal, claim: Claim, produced: Outcome) -> TurnReply:
    """Step 3: re-check the account, the session and the conversation, drop citations of
    notes deleted meanwhile, store the answer."""
    conversation_id = claim.conversation["id"]
    with transaction(store.pool, principal.account_id) as conn:
        hold_account(conn, principal)
        hold_session(conn, principal)
        _recheck_conversation(conn, principal, conversation_id)
        key = (principal.account_id, conversation_id, claim.turn_id)
        turn = conn.execute(LOCK_TURN, key).fetchone()
        if turn is None or turn["status"] != "in_progress" or turn["attempts"] != claim.attempt:
            raise TurnInProgress("this attempt's lease expired and another attempt took the turn")
        live = _live_notes(conn, principal, [s["noteId"] for s in produced.sources])
        citations = [c for c in produced.citations if c["noteId"] in live]
        sources = [s for s in produced.sources if s["noteId"] in live]
        outcome, generated = produced.outcome, produced.generated
        if outcome == "answered" and not citations:
            outcome, generated = "no_evidence", None
        conn.execute(
            COMPLETE_TURN,
            {
                "account_id": principal.account_id,
                "conversation": conversation_id,
                "id": claim.turn_id,
                "outcome": outcome,
                "text": generated.text if generated else None,
                "answer_format": _format(generated),
                "generator": generated.generator if generated else None,
                "citations": Jsonb(citations if generated else []),
                "sources": Jsonb(sources),
                "coverage": None if claim.coverage is None else Jsonb(claim.coverage),
            },
        )
        _propose(conn, store, principal, claim, generated, sources)
        conn.execute(TOUCH_CONVERSATION, (principal.account_id, conversation_id))
        return _turn_reply(conn, principal, conversation_id, claim.turn_id)


def _lock_conversation(
    conn: Conn, principal: Principal, conversation_id: UUID
) -> dict[str, Any] | None:
    """The live conversation, locked until the transaction ends (None: not found)."""
    values = {"account_id": principal.account_id, "id": conversation_id}
    return conn.execute(LOCK_CONVERSATION, values).fetchone()


def _recheck_conversation(conn: Conn, principal: Principal, conversation_id: UUID) -> None:
    """What the claim checked, again, now that the answer is written: a conversation
    deleted meanwhile (or whose notebook was) stores nothing more."""
    conversation = _lock_conversation(conn, principal, conversation_id)
    if conversation is None:
        raise NotFound("the conversation was deleted while the answer was written")
    _check_scope(conn, principal, conversation)


def _propose(
    conn: Conn,
    store: Store,
    principal: Principal,
    claim: Claim,
    generated: Generated | None,
    sources: list[dict[str, Any]],
) -> None:
    """Store the turn's proposals: the model's, then the deterministic proposer's over
    the notes the turn was given (over its whole scope for a clean-up question, which
    names no topic to search for), each checked against the turn's scope."""
    given = [UUID(s["noteId"]) for s in sources]
    drafts: list[tuple[ProposalSource, ProposalDraft]] = []
    if generated is not None:
        drafts += [("model", d) for d in generated.proposals]
    if claim.cleanup:
        predicate, values = ask.scope_predicate(_scoped(claim.conversation, "clean up"))
        found = cleanup.suggest(conn, store, principal, predicate, values)
    else:
        found = proposer.suggest(conn, store, principal, given)
    drafts += [("deterministic", d) for d in found]
    if drafts:
        scope = proposals.scope_of(claim.conversation, claim.selectors, given)
        earlier = proposals.earlier_changes(conn, principal, claim.conversation["id"])
        prepared = proposals.prepare(conn, principal, scope, drafts, earlier)
        proposals.store_proposals(
            conn, principal, claim.conversation["id"], claim.turn_id, prepared
        )


def _format(generated: Generated | None) -> str | None:
    if generated is None:
        return None
    return "markdown" if generated.markdown else "plain"


LIVE_NOTES = f"""
    SELECT m.id FROM memories m
    WHERE m.id = ANY(%(ids)s::uuid[]) AND m.archived_at IS NULL AND {VISIBLE}
"""


def _live_notes(conn: Conn, principal: Principal, note_ids: list[str]) -> set[str]:
    """Which of these notes still exist (not deleted, archived or expired)."""
    rows = conn.execute(LIVE_NOTES, params(principal, ids=note_ids)).fetchall()
    return {str(row["id"]) for row in rows}


#: Fails the turn only while this attempt still holds it.
FAIL_TURN = """
    UPDATE conversation_turns SET status = 'failed', lease_expires_at = NULL, error = %s
    WHERE account_id = %s AND conversation_id = %s AND id = %s
      AND status = 'in_progress' AND attempts = %s
"""


def _fail(store: Store, principal: Principal, claim: Claim, code: str) -> None:
    """Mark this attempt's turn failed (unless another attempt took it meanwhile)."""
    with transaction(store.pool, principal.account_id) as conn:
        key = (principal.account_id, claim.conversation["id"], claim.turn_id)
        conn.execute(FAIL_TURN, (code, *key, claim.attempt))


DATABASE_CLOCK = "SELECT statement_timestamp() AS now"


def _clock(conn: Conn, now: datetime | None) -> datetime:
    if now is not None:
        return now
    row = conn.execute(DATABASE_CLOCK).fetchone()
    assert row is not None
    return row["now"]  # type: ignore[no-any-return]


SELECT_TURN = f"""
    SELECT {TURN_COLUMNS} FROM conversation_turns t
    WHERE t.account_id = %(account_id)s AND t.conversation_id = %(conversation)s
      AND t.id = %(id)s
"""


def _turn_reply(
    conn: Conn, principal: Principal, conversation_id: UUID, turn_id: UUID
) -> TurnReply:
    conversation = conversation_row(conn, principal.account_id, conversation_id, deleted=True)
    values = {"account_id": principal.account_id, "conversation": conversation_id, "id": turn_id}
    turn = conn.execute(SELECT_TURN, values).fetchone()
    assert conversation is not None and turn is not None
    return TurnReply(conversation=as_conversation(conversation), turn=as_turn(turn))


def _context_source(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "noteId": str(row["id"]),
        "version": row["version"],
        "kind": row["kind"],
        "projectId": None if row["project_id"] is None else str(row["project_id"]),
        "score": None,
    }
