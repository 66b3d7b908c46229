"""Saving, correcting, reading and forgetting notes.

Each public function is one operation: it checks the principal's capability, opens
one tenant transaction, checks grants inside it, and commits the note, its revision,
its embedding job and its idempotency record together.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any
from uuid import UUID, uuid4

import psycopg

from grove_auth.principal import Principal
from grove_contracts.notes import (
    MAX_SIMILAR,
    ForgetOutcome,
    ForgetRequest,
    ForgetResponse,
    ForgetResult,
    Memory,
    RememberRequest,
    RevisionPage,
    SavedMemory,
    SimilarNote,
    UpdateRequest,
)
from grove_db import queue
from grove_db.pool import Conn, transaction
from grove_memory import idempotency
from grove_memory.errors import (
    CapturePaused,
    Conflict,
    InvalidRequest,
    NotFound,
    PassageReadOnly,
    VersionConflict,
)
from grove_memory.notes import duplicates
from grove_memory.rows import (
    MEMORY_COLUMNS,
    REVISION_COLUMNS,
    ROW_COLUMNS,
    memory_of,
    revision_of,
    with_saver,
)
from grove_memory.scope import SAVED, VISIBLE, check_notebook, granted, in_notebook, params
from grove_memory.store import Store, require

HANDOFF_DEFAULT_RETENTION_DAYS = 30
MAX_REVISIONS_PAGE = 100

# The fields a save writes, in column order; ``expires_at`` is derived from retention.
NOTE_FIELDS = (
    "content",
    "kind",
    "project_id",
    "task_id",
    "capture",
    "source_agent",
    "source_ref",
    "retention_days",
)

INSERT_NOTE = f"""
    INSERT INTO memories AS m (account_id, id, {", ".join(NOTE_FIELDS)}, expires_at, indexing,
                               saved_by, connection_id)
    VALUES (%(account_id)s, %(id)s, %(content)s, %(kind)s, %(project_id)s, %(task_id)s,
            %(capture)s, %(source_agent)s, %(source_ref)s, %(retention_days)s,
            statement_timestamp() + make_interval(days => %(retention_days)s), %(indexing)s,
            %(saved_by)s, %(connection_id)s)
    ON CONFLICT (account_id,
                 coalesce(project_id, '00000000-0000-0000-0000-000000000000'::uuid), task_id)
        WHERE kind = 'handoff' AND deleted_at IS NULL AND superseded_at IS NULL
    DO NOTHING
    RETURNING {ROW_COLUMNS}
"""

# ``{expires}`` is ``RESTART`` when the lifetime starts again from now (retention
# supplied), else ``KEEP``: expiry preserved exactly. Two statements rather than a CASE:
# Citus refuses a non-immutable function (the statement's time) inside a CASE of an
# UPDATE (docs/scaling.md).
RESTART = "statement_timestamp() + make_interval(days => %(retention_days)s)"
KEEP = "m.expires_at"
UPDATE_NOTE = f"""
    UPDATE memories AS m SET
        content = %(content)s, kind = %(kind)s, project_id = %(project_id)s,
        task_id = %(task_id)s, capture = %(capture)s, source_agent = %(source_agent)s,
        source_ref = %(source_ref)s, retention_days = %(retention_days)s,
        expires_at = {{expires}},
        indexing = %(indexing)s, indexing_error = NULL, version = m.version + 1,
        updated_at = statement_timestamp(), saved_by = %(saved_by)s,
        connection_id = %(connection_id)s
    WHERE m.account_id = %(account_id)s AND m.id = %(id)s
    RETURNING {ROW_COLUMNS}
"""

INSERT_REVISION = f"""
    INSERT INTO memory_revisions (account_id, memory_id, version, {", ".join(NOTE_FIELDS)},
                                  expires_at, operation_id, saved_by, connection_id)
    SELECT m.account_id, m.id, m.version, {", ".join("m." + f for f in NOTE_FIELDS)},
           m.expires_at, %(operation_id)s, m.saved_by, m.connection_id
    FROM memories m WHERE m.account_id = %(account_id)s AND m.id = %(id)s
"""

COPY_EMBEDDING = """
    INSERT INTO embeddings (account_id, memory_id, version, profile, dimensions, embedding)
    SELECT e.account_id, e.memory_id, m.version, e.profile, e.dimensions, e.embedding
    FROM memories m
    JOIN memory_revisions prev
      ON prev.account_id = m.account_id AND prev.memory_id = m.id AND prev.version = m.version - 1
    JOIN embeddings e
      ON e.account_id = m.account_id AND e.memory_id = m.id AND e.version = prev.version
     AND e.profile = %(profile)s
    WHERE m.account_id = %(account_id)s AND m.id = %(id)s AND prev.content = m.content
    ON CONFLICT DO NOTHING
"""

MARK_READY = f"""
    UPDATE memories AS m SET indexing = 'ready', indexing_error = NULL
    WHERE m.account_id = %(account_id)s AND m.id = %(id)s RETURNING {ROW_COLUMNS}
"""

LOCK_VISIBLE = f"""
    SELECT {ROW_COLUMNS}
    FROM memories m WHERE m.id = %(id)s AND {VISIBLE} FOR UPDATE
"""

LOCK_HANDOFF = f"""
    SELECT {ROW_COLUMNS}, statement_timestamp() >= m.expires_at AS expired
    FROM memories m
    WHERE m.account_id = %(account_id)s
      AND m.kind = 'handoff' AND m.deleted_at IS NULL AND m.superseded_at IS NULL
      AND m.task_id = %(task_id)s AND m.project_id IS NOT DISTINCT FROM %(project_id)s
    FOR UPDATE
"""


@dataclass(frozen=True)
class SaveResult:
    """A saved note and how it came about (``created`` answers 201, else 200).

    ``replayed``: the operationId already ran and ``memory`` is its first answer.
    """

    memory: Memory
    created: bool
    replayed: bool = False


def remember(
    store: Store, principal: Principal, req: RememberRequest, *, similar: bool = True
) -> SaveResult:
    """Save a note; a handoff for a known taskId, or a given ``id``, corrects instead.

    The answer is a ``SavedMemory`` naming near-duplicates in the note's scope (unless
    ``similar`` is false: a batch's items do not look for them).
    """
    require(principal, "write")

    def lookup(conn: Conn) -> list[SimilarNote]:
        return similar_notes(conn, principal, req.content, req.projectId, req.id)

    # Looked up before the transaction holds the account (each save's shared lock on its
    # row) or writes (the usage row, which every save of the account waits for): its
    # time would otherwise lengthen the holds every save of the account contends on. The
    # scope is checked just after; the candidates of a refused save are never shown.
    with idempotency.mutation(
        store, principal, "remember", req, before=lookup if similar else None
    ) as op:
        if op.replay is not None:
            return SaveResult(op.replay.answer(SavedMemory), created=False, replayed=True)
        conn = op.conn
        check_notebook(conn, principal, req.projectId)
        if req.capture == "automatic":
            _check_capture(conn, store)
        values = _values_from_request(req)
        found: list[SimilarNote] = op.before or []
        if req.id is not None:
            current = lock_note(conn, principal, req.id, req.expectedVersion)
            retention_supplied = "retentionDays" in req.model_fields_set
            row = write_correction(conn, store, current, values, retention_supplied, by=principal)
            created = False
        else:
            row, created = _create_or_update_handoff(conn, store, principal, req, values)
        memory = record_revision(conn, store, row, op.operation_id)
        found = [s for s in found if s.id != row["id"]]  # a handoff it updated
        saved = SavedMemory(**memory.model_dump(), similar=found[:MAX_SIMILAR])
        return SaveResult(op.record(saved, row["id"]), created)


def update_memory(
    store: Store, principal: Principal, memory_id: UUID, req: UpdateRequest
) -> SaveResult:
    """Correct part of a note: omitted fields keep their current values."""
    require(principal, "write")
    path = {"id": str(memory_id)}
    with idempotency.mutation(
        store, principal, "update_memory", req, supplied_only=True, path=path
    ) as op:
        if op.replay is not None:
            return SaveResult(op.replay.answer(Memory), created=False, replayed=True)
        conn = op.conn
        current = lock_note(conn, principal, memory_id, req.expectedVersion)
        if req.capture == "automatic":
            _check_capture(conn, store)
        values = _merge(current, req)
        if "projectId" in req.model_fields_set:
            check_notebook(conn, principal, req.projectId)
        if values["kind"] == "handoff" and values["task_id"] is None:
            raise InvalidRequest("taskId", "a handoff requires a taskId")
        row = write_correction(
            conn, store, current, values, "retentionDays" in req.model_fields_set, by=principal
        )
        return _finish(op, store, row, created=False)


def get_memory(store: Store, principal: Principal, memory_id: UUID) -> Memory:
    """One live, granted note, or ``NotFound``."""
    require(principal, "read")
    with transaction(store.pool, principal.account_id) as conn:
        row = conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE m.id = %(id)s AND {VISIBLE}",
            params(principal, id=memory_id),
        ).fetchone()
    if row is None:
        raise NotFound("note not found")
    return memory_of(row)


def list_revisions(
    store: Store, principal: Principal, memory_id: UUID, after_version: int, limit: int
) -> RevisionPage:
    """A note's immutable revisions in the caller's grants, oldest first, ``limit`` at a
    time."""
    require(principal, "read")
    with transaction(store.pool, principal.account_id) as conn:
        visible = conn.execute(
            f"SELECT 1 FROM memories m WHERE m.id = %(id)s AND {VISIBLE}",
            params(principal, id=memory_id),
        ).fetchone()
        if visible is None:
            raise NotFound("note not found")
        # Only revisions saved in a scope the caller may read (a note moved into a granted
        # notebook does not reveal what it said while it was elsewhere).
        rows = conn.execute(
            f"SELECT {REVISION_COLUMNS} FROM memory_revisions r"
            f" WHERE r.memory_id = %(id)s AND r.version > %(after)s AND {granted('r')}"
            " ORDER BY r.version LIMIT %(limit)s",
            params(principal, id=memory_id, after=after_version, limit=limit + 1),
        ).fetchall()
    items = [revision_of(r) for r in rows[:limit]]
    more = len(rows) > limit
    return RevisionPage(items=items, nextAfterVersion=items[-1].version if more else None)


def forget(store: Store, principal: Principal, req: ForgetRequest) -> ForgetResponse:
    """Soft-delete notes; each gets ``deleted``, ``not_found`` or ``version_conflict``."""
    require(principal, "delete")
    with idempotency.mutation(store, principal, "forget", req) as op:
        if op.replay is not None:
            return op.replay.answer(ForgetResponse)
        results = [
            ForgetResult(
                id=item.id,
                outcome=_forget_one(op.conn, principal, item.id, item.expectedVersion),
            )
            for item in req.targets()
        ]
        return op.record(ForgetResponse(results=results))


def _forget_one(
    conn: Conn, principal: Principal, memory_id: UUID, expected: int | None
) -> ForgetOutcome:
    row = lock_visible(conn, principal, memory_id)
    if row is None:
        return "not_found"
    if expected is not None and row["version"] != expected:
        return "version_conflict"
    conn.execute(
        "UPDATE memories SET deleted_at = statement_timestamp() WHERE account_id = %s AND id = %s",
        (principal.account_id, memory_id),
    )
    return "deleted"


def _check_capture(conn: Conn, store: Store) -> None:
    """Refuse an automatic save while the server or the account has capture paused."""
    if store.automatic_capture_paused:
        raise CapturePaused("automatic capture is paused on this server")
    row = conn.execute(
        "SELECT automatic_capture_paused FROM accounts WHERE id = grove_current_account()"
    ).fetchone()
    if row is not None and row["automatic_capture_paused"]:
        raise CapturePaused()


def _values_from_request(req: RememberRequest) -> dict[str, Any]:
    provenance = req.provenance
    return {
        "content": req.content,
        "kind": req.kind,
        "project_id": req.projectId,
        "task_id": req.taskId,
        "capture": req.capture,
        "source_agent": provenance.sourceAgent if provenance else None,
        "source_ref": provenance.sourceRef if provenance else None,
        "retention_days": req.retentionDays,
    }


def _merge(current: dict[str, Any], req: UpdateRequest) -> dict[str, Any]:
    values = {name: current[name] for name in NOTE_FIELDS}
    supplied = req.model_fields_set
    for wire, column in (
        ("content", "content"),
        ("kind", "kind"),
        ("projectId", "project_id"),
        ("taskId", "task_id"),
        ("capture", "capture"),
        ("retentionDays", "retention_days"),
    ):
        if wire in supplied:
            values[column] = getattr(req, wire)
    if "provenance" in supplied:
        provenance = req.provenance
        values["source_agent"] = provenance.sourceAgent if provenance else None
        values["source_ref"] = provenance.sourceRef if provenance else None
    return values


def lock_note(
    conn: Conn, principal: Principal, memory_id: UUID, expected: int | None
) -> dict[str, Any]:
    """Lock a live, granted note for change (``NotFound``, ``VersionConflict``,
    ``PassageReadOnly``)."""
    row = lock_visible(conn, principal, memory_id)
    if row is None:
        raise NotFound("note not found")
    _check_version(row, expected)
    return row


def lock_visible(conn: Conn, principal: Principal, memory_id: UUID) -> dict[str, Any] | None:
    """Lock a live, granted note for change, or None; a passage is ``PassageReadOnly``
    (only its file's extraction and lifecycle write it)."""
    row = conn.execute(LOCK_VISIBLE, params(principal, id=memory_id)).fetchone()
    if row is not None and row["file_id"] is not None:
        raise PassageReadOnly()
    return row


def _check_version(row: dict[str, Any], expected: int | None) -> None:
    if expected is not None and row["version"] != expected:
        raise VersionConflict(
            f"the note is at version {row['version']}, not {expected}; read it and retry"
        )


def _create_or_update_handoff(
    conn: Conn, store: Store, principal: Principal, req: RememberRequest, values: dict[str, Any]
) -> tuple[dict[str, Any], bool]:
    retention_supplied = "retentionDays" in req.model_fields_set
    if req.kind == "handoff" and not retention_supplied:
        values = {**values, "retention_days": HANDOFF_DEFAULT_RETENTION_DAYS}
    row = conn.execute(
        INSERT_NOTE,
        {
            **values,
            **saver(principal),
            "account_id": principal.account_id,
            "id": uuid4(),
            "indexing": store.indexing,
        },
    ).fetchone()
    if row is not None:
        return row, True
    # A live handoff for this task exists (perhaps committed a moment ago): correct it,
    # unless it has expired, in which case it is superseded (it stays restorable for its
    # whole restoration window) and a fresh note starts.
    current = conn.execute(LOCK_HANDOFF, {**values, "account_id": principal.account_id}).fetchone()
    if current is not None and current["expired"]:
        supersede(conn, principal.account_id, current["id"])
        return _create_or_update_handoff(conn, store, principal, req, values)
    if current is None:
        raise Conflict("the handoff for this taskId changed concurrently; retry")
    _check_version(current, req.expectedVersion)
    return write_correction(conn, store, current, values, retention_supplied, by=principal), False


def supersede(conn: Conn, account_id: UUID, memory_id: Any) -> None:
    """Take an expired handoff off its task (a fresh one takes its place): it leaves the
    one-live-handoff-per-task index (migration 0017), and stays restorable."""
    conn.execute(
        "UPDATE memories SET superseded_at = statement_timestamp()"
        " WHERE account_id = %s AND id = %s",
        (account_id, memory_id),
    )


def saver(principal: Principal) -> dict[str, Any]:
    """Who a save records as its writer (``saved_by``, ``connection_id``: migration
    0045): the account's owner (any owner session, the website's or an owner token's),
    or the connection whose credential, an API key or an approved agent's token, made it.
    """
    if principal.is_owner:
        return {"saved_by": "owner", "connection_id": None}
    return {"saved_by": "connection", "connection_id": principal.connection_id}


def write_correction(
    conn: Conn,
    store: Store,
    current: dict[str, Any],
    values: dict[str, Any],
    retention_supplied: bool,
    *,
    by: Principal,
) -> dict[str, Any]:
    """Save ``values`` as the note's next version, saved ``by`` the caller (the caller
    writes its revision)."""
    if not retention_supplied:
        values = {**values, "retention_days": current["retention_days"]}
    restart = retention_supplied
    keys = {
        "account_id": current["account_id"],
        "id": current["id"],
        "indexing": store.indexing,
        **saver(by),
    }
    try:
        with conn.transaction():
            row = conn.execute(
                UPDATE_NOTE.format(expires=RESTART if restart else KEEP), {**values, **keys}
            ).fetchone()
    except psycopg.errors.UniqueViolation as ex:
        raise Conflict("another live handoff already has this taskId in that scope") from ex
    assert row is not None
    return row


#: Notes the search for similar ones scores (``lexical_similarity``) at most.
SIMILAR_CANDIDATES = 5
#: Notes each of the saved note's bands (``grove_note_bands``, migration 0037) finds at
#: most (bench.similar, see bench/README.md): about the latest written, the band's rows
#: read from the end of the index, where rows of one band are in the order of their
#: place in the table, which is about the order they were written (a note saved again
#: is most often one saved lately).
SIMILAR_POSTINGS = 20
#: The notes sharing the most of those bands that are read (and then kept if live).
SIMILAR_SHORTLIST = 8
#: A shortlisted note is returned only if the stemmed words (``content_tsv``'s lexemes)
#: of the two notes overlap at least this much (shared over either's): a floor well under
#: ``duplicates.SAVE_LEXICAL_THRESHOLD``'s own measure, so the saves with a likely
#: near-duplicate are the only ones whose candidates are read and scored in Python.
SIMILAR_MIN_OVERLAP = 0.2

#: Candidates for the notes like the saved one: the notes in its scope sharing one of
#: its MinHash bands (pairs of its words hashed with its scope, ``grove_note_bands``
#: (migration 0037): at most ``SIMILAR_POSTINGS`` notes for each band), the
#: ``SIMILAR_SHORTLIST`` sharing the most bands, then those live whose words overlap the
#: note's by ``SIMILAR_MIN_OVERLAP``. Only bands of the saved note's scope, which its
#: writer sees, are read (a band of another scope hashes differently, and the rows'
#: account and notebook are checked too), so which notes a caller is told of never
#: depends on notes outside its grants. The work is bounded by the bands read (21 index
#: probes, at most ``SIMILAR_POSTINGS`` rows each).
#: The constants are literals, not parameters: with a parameter ``LIMIT`` the server's
#: generic plan is estimated worse than a custom one and each save planned the statement
#: again (lookup 0.39 -> 0.32 ms median at 100,000 notes, a round trip included).
SIMILAR = f"""
    WITH saved AS (
        SELECT tsvector_to_array(to_tsvector('english', %(content)s)) AS lexemes
    ), shared AS (
        SELECT p.memory_id, count(*) AS score
        FROM saved CROSS JOIN LATERAL unnest(grove_note_bands(
            %(account_id)s, %(project_id)s, saved.lexemes)) AS b (band)
        CROSS JOIN LATERAL (
            SELECT v.memory_id FROM note_bands v
            WHERE v.band = b.band AND v.account_id = %(account_id)s
              AND v.memory_id IS DISTINCT FROM %(exclude)s AND {{postings}}
            ORDER BY v.band DESC LIMIT {SIMILAR_POSTINGS}) AS p
        GROUP BY p.memory_id
        ORDER BY score DESC, p.memory_id LIMIT {SIMILAR_SHORTLIST}
    )
    SELECT m.id, m.version, m.content
    FROM shared s JOIN memories m ON m.id = s.memory_id CROSS JOIN saved
    CROSS JOIN LATERAL (
        SELECT count(*) FILTER (WHERE w.lexeme = ANY(saved.lexemes)) AS common,
               count(*) AS lexemes
        FROM unnest(tsvector_to_array(m.content_tsv)) AS w (lexeme)
    ) AS o
    WHERE m.archived_at IS NULL AND {VISIBLE} AND {SAVED} AND {{scope}}
      AND o.common >= {SIMILAR_MIN_OVERLAP} * (o.lexemes + cardinality(saved.lexemes) - o.common)
    ORDER BY s.score DESC, m.id LIMIT {SIMILAR_CANDIDATES}
"""


@functools.cache
def _similar(postings: str, scope: str) -> str:
    """``SIMILAR`` for one scope's predicates (formatted once for each)."""
    return SIMILAR.format(postings=postings, scope=scope)


def similar_notes(
    conn: Conn,
    principal: Principal,
    content: str,
    project_id: UUID | None,
    exclude: UUID | None = None,
) -> list[SimilarNote]:
    """Live notes in scope ``project_id`` whose words ``content`` largely shares, but
    ``exclude`` (the note being corrected): ``SIMILAR``'s candidates kept at
    ``duplicates.SAVE_LEXICAL_THRESHOLD``, most similar first, at most
    ``SIMILAR_CANDIDATES``. The note's own vector is not computed yet, so the measure is
    lexical alone (the words as ``content_tsv`` stems them: ``to_tsvector('english')``)."""
    values = params(
        principal,
        project_id=project_id,
        content=content,
        exclude=exclude,
    )
    statement = _similar(in_notebook(project_id, "v"), in_notebook(project_id))
    found = conn.execute(statement, values).fetchall()
    if not found:
        return []
    saved = duplicates.words(content)
    scored = [(duplicates.word_similarity(saved, duplicates.words(f["content"])), f) for f in found]
    kept = sorted(
        ((score, f) for score, f in scored if score >= duplicates.SAVE_LEXICAL_THRESHOLD),
        key=lambda pair: (-pair[0], str(pair[1]["id"])),
    )
    return [
        SimilarNote(id=f["id"], version=f["version"], similarity=round(score, 3))
        for score, f in kept
    ]


def _finish(
    op: idempotency.Mutation, store: Store, row: dict[str, Any], created: bool
) -> SaveResult:
    memory = record_revision(op.conn, store, row, op.operation_id)
    return SaveResult(op.record(memory, row["id"]), created)


def record_revision(
    conn: Conn, store: Store, row: dict[str, Any], operation_id: UUID | None
) -> Memory:
    """Write the revision of a just-saved state and see to its embedding; the saved note.

    If the content did not change (a move, a metadata fix), the previous revision's
    vector is reused and the note stays ``ready``; otherwise an embedding job is queued.
    """
    keys = {"account_id": row["account_id"], "id": row["id"]}
    conn.execute(INSERT_REVISION, {**keys, "operation_id": operation_id})
    if row["expires_at"] is not None:  # a note that never expires has no sweep to queue
        queue.enqueue_expiries(conn, row["account_id"], [row["id"]])
    if store.profile is not None:
        copied = {**keys, "profile": store.profile}
        if conn.execute(COPY_EMBEDDING, copied).rowcount:
            row = conn.execute(MARK_READY, copied).fetchone() or row
        else:
            queue.enqueue_embeddings(conn, row["account_id"], [row["id"]], store.profile)
    return memory_of(with_saver(conn, row))
