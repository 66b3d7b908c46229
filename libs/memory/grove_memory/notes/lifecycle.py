"""Archiving, restoring and moving notes.

Archive is how a note is kept but set aside: it leaves recall and search and can be
restored. Restore brings back an earlier revision as a new one, un-archives (its
lifetime renewed), makes a handoff durable (a permanent fact), or, for the owner,
brings back a note that expired. Moves are all or nothing and check the grants of
both the note's current scope and the destination.
"""

from __future__ import annotations

from typing import Any, Literal

import psycopg

from grove_auth.errors import OwnerSessionRequired
from grove_auth.principal import Principal
from grove_contracts.notes import (
    ArchiveRequest,
    ArchiveResponse,
    ArchiveResult,
    Memory,
    MoveRequest,
    MoveResponse,
    RestoreRequest,
)
from grove_db import queue
from grove_db.pool import Conn
from grove_memory import idempotency
from grove_memory.errors import Conflict, InvalidRequest, MoveRefused, NotFound
from grove_memory.notes.notes import (
    KEEP,
    LOCK_HANDOFF,
    NOTE_FIELDS,
    lock_note,
    lock_visible,
    record_revision,
    supersede,
    write_correction,
)
from grove_memory.rows import ROW_COLUMNS, memory_of, with_saver
from grove_memory.scope import GRANTED, check_notebook, granted, params
from grove_memory.store import Store, require

RESTORED_FIELDS = ("content", "kind", "task_id", "capture", "source_agent", "source_ref")


def archive(store: Store, principal: Principal, req: ArchiveRequest) -> ArchiveResponse:
    """Archive notes; each gets ``archived`` (also if it already was) or ``not_found``."""
    require(principal, "write")
    with idempotency.mutation(store, principal, "archive_memories", req) as op:
        if op.replay is not None:
            return op.replay.answer(ArchiveResponse)
        results = [
            ArchiveResult(id=i, outcome=_archive_one(op.conn, principal, i)) for i in req.ids
        ]
        return op.record(ArchiveResponse(results=results))


def _archive_one(
    conn: Conn, principal: Principal, memory_id: Any
) -> Literal["archived", "not_found"]:
    if lock_visible(conn, principal, memory_id) is None:
        return "not_found"
    # An archived note keeps its first archive time (the filter, not a coalesce: Citus
    # refuses a non-immutable function inside one, docs/scaling.md).
    conn.execute(
        "UPDATE memories SET archived_at = statement_timestamp()"
        " WHERE account_id = %s AND id = %s AND archived_at IS NULL",
        (principal.account_id, memory_id),
    )
    return "archived"


#: Bring a note back: if it was archived or had expired, un-archive it and start its
#: lifetime again from now as a fresh save would (same ``retention_days``; a permanent
#: note stays permanent). Restoring a live note that was not archived changes nothing.
#: ``{expires}`` is ``RENEW`` or ``notes.KEEP``, chosen in Python from the locked row:
#: two statements rather than a CASE, which Citus refuses with the statement's time in
#: it (docs/scaling.md).
BRING_BACK = f"""
    UPDATE memories AS m SET archived_at = NULL, swept_at = NULL, expires_at = {{expires}}
    WHERE m.account_id = %(account_id)s AND m.id = %(id)s RETURNING {ROW_COLUMNS}
"""
#: The note's ``retention_days`` is a value, not the column: Citus refuses a column
#: reference beside the statement's time in an UPDATE (a null one stays permanent).
RENEW = "statement_timestamp() + make_interval(days => %(retention_days)s)"

#: An expired note in its restoration window (hidden, not deleted) in the caller's grants.
LOCK_EXPIRED = f"""
    SELECT {ROW_COLUMNS} FROM memories m
    WHERE m.id = %(id)s AND m.deleted_at IS NULL AND {GRANTED}
      AND (m.swept_at IS NOT NULL OR m.expires_at <= statement_timestamp())
    FOR UPDATE
"""


def restore(store: Store, principal: Principal, req: RestoreRequest) -> Memory:
    """Bring a note back: un-archive it, and/or revision ``version``, and/or make it durable.

    The one operation behind ``restore_memory`` and ``POST /v1/memories/{id}/restore``.
    Un-archiving renews the lifetime as a fresh save would; so does bringing back a
    revision (a durable handoff becomes permanent). An expired note in its restoration
    window comes back the same way, for the owner's session only.
    """
    require(principal, "write")
    with idempotency.mutation(store, principal, "restore_memory", req) as op:
        if op.replay is not None:
            return op.replay.answer(Memory)
        conn = op.conn
        current, lapsed = _lock_restorable(conn, principal, req.id)
        values = {name: current[name] for name in NOTE_FIELDS}
        if req.version is not None:
            values.update(_revision(conn, principal, req.id, req.version))
        if req.durable:
            if values["kind"] != "handoff":
                raise InvalidRequest("durable", "only a handoff can be made durable")
            values.update(kind="fact", retention_days=None)
        if values["kind"] == "handoff":
            _hold_task(conn, principal, req.id, values)
        renew = lapsed or current["archived_at"] is not None
        row = conn.execute(
            BRING_BACK.format(expires=RENEW if renew else KEEP),
            {
                "account_id": principal.account_id,
                "id": req.id,
                "retention_days": current["retention_days"],
            },
        ).fetchone()
        assert row is not None
        # Its sweep at the renewed expiry.
        queue.enqueue_expiries(conn, principal.account_id, [req.id])
        if req.version is not None or req.durable:
            # A restore renews the lifetime (a durable one makes it permanent).
            row = write_correction(conn, store, row, values, retention_supplied=True, by=principal)
            memory = record_revision(conn, store, row, req.operationId)
        else:
            memory = memory_of(with_saver(conn, row))
        _no_longer_superseded(conn, principal, req.id)
        return op.record(memory, req.id)


def _hold_task(conn: Conn, principal: Principal, memory_id: Any, values: dict[str, Any]) -> None:
    """Make a note that comes back as a handoff its task's one live handoff.

    A task has one live handoff: the one a save for it corrects, recall gives and an
    export carries (an import refuses a second). A handoff superseded by a fresh one for
    its task (it had expired) is restorable, so bringing it back as a handoff is refused
    (``Conflict``, naming the task's handoff) while the task has another live one, and
    supersedes an expired one as a save would; made durable it is a fact, no task's, and
    comes back beside it. A handoff that was never superseded holds its task already.
    """
    holder = conn.execute(LOCK_HANDOFF, {**values, "account_id": principal.account_id}).fetchone()
    if holder is not None and holder["id"] != memory_id:
        if not holder["expired"]:
            raise Conflict(
                f"task {values['task_id']!r} has a live handoff, note {holder['id']}, and a"
                " task has one: restore this note with durable: true to keep it as a fact"
            )
        supersede(conn, principal.account_id, holder["id"])


def _no_longer_superseded(conn: Conn, principal: Principal, memory_id: Any) -> None:
    """A note brought back is no longer superseded: as a handoff it is its task's again
    (``_hold_task`` made room; the unique index of live handoffs, migration 0017, refuses
    a handoff for the task saved meanwhile). Last, once the note has its task and scope."""
    try:
        with conn.transaction():
            conn.execute(
                "UPDATE memories SET superseded_at = NULL"
                " WHERE account_id = %s AND id = %s AND superseded_at IS NOT NULL",
                (principal.account_id, memory_id),
            )
    except psycopg.errors.UniqueViolation as ex:
        raise Conflict("a handoff for this task was saved meanwhile; retry") from ex


def _lock_restorable(
    conn: Conn, principal: Principal, memory_id: Any
) -> tuple[dict[str, Any], bool]:
    """Lock a live, granted note, or an expired one awaiting restoration if the caller is
    the owner's session (``OwnerSessionRequired`` for anyone else, ``NotFound``); and
    whether it had expired."""
    row = lock_visible(conn, principal, memory_id)
    if row is not None:
        return row, False
    expired = conn.execute(LOCK_EXPIRED, params(principal, id=memory_id)).fetchone()
    if expired is None or expired["file_id"] is not None:
        raise NotFound("note not found")
    if not principal.is_owner:
        raise OwnerSessionRequired("only the account owner's session restores an expired note")
    return expired, True


def _move_one(
    conn: Conn, store: Store, principal: Principal, memory_id: Any, req: MoveRequest
) -> Memory:
    current = lock_note(conn, principal, memory_id, None)
    if current["project_id"] == req.projectId:
        return memory_of(with_saver(conn, current))
    values = {name: current[name] for name in NOTE_FIELDS}
    values["project_id"] = req.projectId
    row = write_correction(conn, store, current, values, retention_supplied=False, by=principal)
    return record_revision(conn, store, row, req.operationId)


def _revision(conn: Conn, principal: Principal, memory_id: Any, version: int) -> dict[str, Any]:
    """Revision ``version``'s content, if it was saved in a scope the caller may read."""
    row = conn.execute(
        f"SELECT {', '.join(RESTORED_FIELDS)} FROM memory_revisions r"
        f" WHERE r.memory_id = %(id)s AND r.version = %(version)s AND {granted('r')}",
        params(principal, id=memory_id, version=version),
    ).fetchone()
    if row is None:
        raise NotFound(f"the note has no version {version}")
    return dict(row)


def move(store: Store, principal: Principal, req: MoveRequest) -> MoveResponse:
    """Move notes to ``projectId`` (null: personal); if any cannot move, none do."""
    require(principal, "write")
    with idempotency.mutation(store, principal, "move_memories", req) as op:
        if op.replay is not None:
            return op.replay.answer(MoveResponse)
        check_notebook(op.conn, principal, req.projectId)
        items: list[Memory] = []
        refused: list[dict[str, str]] = []
        for index, memory_id in enumerate(dict.fromkeys(req.ids)):
            try:
                items.append(_move_one(op.conn, store, principal, memory_id, req))
            except (NotFound, Conflict) as ex:
                refused.append({"field": f"ids[{index}]", "message": f"{memory_id}: {ex.message}"})
        if refused:
            raise MoveRefused(refused)  # the transaction rolls back: nothing moved
        return op.record(MoveResponse(items=items))
