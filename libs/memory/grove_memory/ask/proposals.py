"""Proposals: changes to the notes a conversation turn offers, applied and undone by the owner.

A turn's proposals come from the model (``Generated.proposals``) and from the
deterministic proposer (``grove_memory.ask.proposer``: near-duplicate merges, archiving
handoffs about to expire). When
the turn completes, ``prepare`` checks each against the notes as they are in that
transaction: every target must exist, be in the conversation's ``Scope`` (a strict-context
turn: its selected notes only) and be in the state the change needs; anything else is
dropped and counted. What is kept is stored with its ``preview``: the exact note versions
and notebook subtree fingerprints it touches.

``apply`` and ``undo`` (owner session only) each run in one transaction that re-checks the
account, the session and every target's scope, then fences: the notes and subtrees must
still be exactly as the preview (for an undo: as the apply left them), or nothing is
written and the answer is 409 ``proposal_stale`` naming what moved. A second apply (or
undo) returns the first one's result. An undo writes new revisions that put the previous
content back, un-archives what the apply archived and archives what it created (a merged
note, a created note); deletions cannot be undone. Every apply, undo and stale refusal is
appended to the proposal's ``events``, which the conversation's export carries.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal
from uuid import UUID, uuid4

from psycopg.types.json import Jsonb
from pydantic import TypeAdapter

from grove_auth.connections import require_owner
from grove_auth.principal import Principal
from grove_contracts.proposals import (
    MAX_PROPOSALS,
    Change,
    CreateChange,
    EditChange,
    LifecycleChange,
    MergeChange,
    OrganizeChange,
    PreviewNote,
    PreviewNotebook,
    Proposal,
    ProposalDraft,
    ProposalNoteResult,
    ProposalOutcome,
    ProposalPreview,
    ProposalSource,
)
from grove_db.pool import Conn, transaction
from grove_memory.ask.conversations import PROPOSAL_JSON
from grove_memory.ask.conversations import preview as first_line
from grove_memory.errors import NotebookCycle, NotFound, ServiceError
from grove_memory.idempotency import hold_account, hold_session
from grove_memory.notes import subtrees
from grove_memory.notes.notebooks import CYCLE, NOTEBOOK_COLUMNS, lock_tree, write_notebook
from grove_memory.notes.notes import (
    INSERT_NOTE,
    NOTE_FIELDS,
    record_revision,
    saver,
    write_correction,
)
from grove_memory.rows import MEMORY_COLUMNS, ROW_COLUMNS
from grove_memory.scope import VISIBLE, params
from grove_memory.store import Store
from grove_telemetry import metrics

FIRST_LINE_CHARS = 120
#: The provenance of notes a proposal creates (a merge into a new note, a create).
SOURCE_AGENT = "grove-proposals"

CHANGE: TypeAdapter[Change] = TypeAdapter(Change)


class ProposalStale(ServiceError):
    """What the proposal would change has changed since; nothing was written. ``details``
    names what moved: read the notes and ask again."""

    code = "proposal_stale"
    status = 409

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("the notes changed since this was proposed: " + "; ".join(problems))
        self.details = [{"field": "proposal", "message": p} for p in problems]


class ProposalUndone(ServiceError):
    """This proposal was applied and undone; ask again for a fresh proposal."""

    code = "proposal_undone"
    status = 409


class ProposalNotApplied(ServiceError):
    """This proposal has not been applied, so there is nothing to undo."""

    code = "proposal_not_applied"
    status = 409


class NotUndoable(ServiceError):
    """A deletion cannot be undone (its preview says so)."""

    code = "not_undoable"
    status = 409


class OutOfScope(ServiceError):
    """The proposal names a note or notebook outside this conversation's scope."""

    code = "proposal_out_of_scope"
    status = 403


@dataclass(frozen=True)
class Scope:
    """What a conversation's proposals may touch.

    Notes in the conversation's scope (every notebook, plus personal notes when
    ``include_personal``; or the one notebook ``project_id``, personal notes when it is
    None). Whole notebooks only in a conversation over every notebook. A strict-context
    turn narrows both to what it selected (``notes``, ``notebooks``).
    """

    all_scopes: bool
    project_id: UUID | None
    include_personal: bool
    notes: frozenset[UUID] | None = None
    notebooks: frozenset[UUID] | None = None

    def covers_place(self, project_id: UUID | None) -> bool:
        """Whether notes in ``project_id`` (None: personal) are in the conversation."""
        if project_id is None:
            return self.include_personal or (not self.all_scopes and self.project_id is None)
        return self.all_scopes or project_id == self.project_id

    def covers_note(self, note_id: UUID, project_id: UUID | None) -> bool:
        if self.notes is not None and note_id not in self.notes:
            return False
        return self.covers_place(project_id)

    def covers_notebook(self, notebook_id: UUID) -> bool:
        if self.notebooks is not None:
            return notebook_id in self.notebooks
        return self.all_scopes


def scope_of(
    conversation: dict[str, Any], context: dict[str, Any] | None, given: Iterable[UUID]
) -> Scope:
    """The scope of a turn of ``conversation``: ``context`` is the turn's selectors as
    sent and ``given`` the notes it was given as context (a strict turn's only notes)."""
    strict = context is not None and bool(context.get("only"))
    return Scope(
        all_scopes=conversation["all_scopes"],
        project_id=conversation["project_id"],
        include_personal=conversation["include_personal"],
        notes=frozenset(given) if strict else None,
        notebooks=frozenset(UUID(str(n)) for n in context["notebooks"])
        if strict and context
        else None,
    )


# --- Previews -------------------------------------------------------------------------

#: Note targets (archived state each must be in; None: either) of each change.
Wanted = dict[UUID, bool | None]


def _targets(change: Change) -> tuple[Wanted, Wanted]:
    """The notes and notebooks ``change`` touches, with the archived state each needs."""
    if isinstance(change, EditChange):
        return {change.noteId: False}, {}
    if isinstance(change, CreateChange):
        return {}, {}
    if isinstance(change, MergeChange):
        return dict.fromkeys(change.noteIds, False), {}
    if isinstance(change, OrganizeChange):
        return dict.fromkeys(change.noteIds, False), dict.fromkeys(change.notebookIds, False)
    state = {"archive": False, "restore": True, "delete": None}[change.action]
    return dict.fromkeys(change.noteIds, state), dict.fromkeys(change.notebookIds, state)


READ_NOTES = f"""
    SELECT {ROW_COLUMNS} FROM memories m
    WHERE m.id = ANY(%(ids)s::uuid[]) AND {VISIBLE}
    ORDER BY m.id FOR UPDATE
"""
READ_NOTEBOOKS = """
    SELECT id, name, archived_at FROM projects
    WHERE account_id = %s AND id = ANY(%s::uuid[]) AND deleted_at IS NULL ORDER BY id FOR UPDATE
"""
LIVE_NOTEBOOK = "SELECT id FROM projects WHERE account_id = %s AND id = %s AND deleted_at IS NULL"


def _preview(
    conn: Conn, principal: Principal, scope: Scope, change: Change
) -> tuple[ProposalPreview, dict[UUID, dict[str, Any]]]:
    """What ``change`` touches as it is now (its rows locked), and the note rows.

    Raises ``OutOfScope`` for a target outside ``scope`` and ``ProposalStale`` for one
    that is gone or not in the state the change needs.
    """
    notes, notebooks = _targets(change)
    problems: list[str] = []
    rows = {
        r["id"]: r for r in conn.execute(READ_NOTES, params(principal, ids=list(notes))).fetchall()
    }
    shown = []
    for note_id, archived in notes.items():
        row = rows.get(note_id)
        if row is None:
            problems.append(f"note {note_id} is deleted, expired or unknown")
            continue
        if not scope.covers_note(note_id, row["project_id"]):
            raise OutOfScope(f"note {note_id} is outside this conversation's scope")
        if row["file_id"] is not None:
            problems.append(f"note {note_id} is a passage of a file: it changes with its file")
        if archived is not None and (row["archived_at"] is not None) != archived:
            problems.append(f"note {note_id} is {'not ' if archived else ''}archived")
        shown.append(
            PreviewNote(
                id=note_id,
                version=row["version"],
                firstLine=first_line(row["content"], FIRST_LINE_CHARS) or "",
                projectId=row["project_id"],
                archived=row["archived_at"] is not None,
            )
        )
    read = conn.execute(READ_NOTEBOOKS, (principal.account_id, list(notebooks))).fetchall()
    books = {r["id"]: r for r in read}
    trees = []
    for notebook_id, archived in notebooks.items():
        book = books.get(notebook_id)
        if book is None:
            problems.append(f"notebook {notebook_id} is deleted or unknown")
            continue
        if not scope.covers_notebook(notebook_id):
            raise OutOfScope(f"notebook {notebook_id} is outside this conversation's scope")
        if archived is not None and (book["archived_at"] is not None) != archived:
            problems.append(f"notebook {notebook_id} is {'not ' if archived else ''}archived")
        tree = subtrees.state(conn, principal.account_id, notebook_id)
        trees.append(PreviewNotebook(id=notebook_id, name=book["name"], **tree.model_dump()))
    problems += _place_problems(conn, principal, scope, change)
    if problems:
        raise ProposalStale(problems)
    preview = ProposalPreview(notes=shown, notebooks=trees, undoable=change.action != "delete")
    return preview, rows


def _place_problems(conn: Conn, principal: Principal, scope: Scope, change: Change) -> list[str]:
    """Where the change puts notes or notebooks must be live (and, for a created note,
    in the conversation's scope)."""
    places: list[UUID | None] = []
    if isinstance(change, CreateChange):
        if not scope.covers_place(change.projectId):
            raise OutOfScope("the new note's notebook is outside this conversation's scope")
        places.append(change.projectId)
    destination = None
    if isinstance(change, EditChange):
        destination = change.moveTo
    elif isinstance(change, OrganizeChange):
        destination = change.destination
    if destination is not None:
        new = destination.newNotebook
        places.append(new.parentId if new is not None else destination.projectId)
    missing = [
        p
        for p in places
        if p is not None
        and conn.execute(LIVE_NOTEBOOK, (principal.account_id, p)).fetchone() is None
    ]
    return [f"notebook {p} is deleted or unknown" for p in missing]


# --- Offering proposals with a turn ---------------------------------------------------


@dataclass(frozen=True)
class Prepared:
    """A draft that applies to the notes as they are, with its preview."""

    source: ProposalSource
    draft: ProposalDraft
    preview: ProposalPreview


def prepare(
    conn: Conn,
    principal: Principal,
    scope: Scope,
    drafts: Sequence[tuple[ProposalSource, ProposalDraft]],
    earlier: Sequence[dict[str, Any]] = (),
) -> list[Prepared]:
    """The drafts that apply now, with previews, at most ``MAX_PROPOSALS``; the rest are
    counted (``grove_proposals_total``): ``repeated`` when the conversation was offered the
    same change before (``earlier``, the stored changes: offered once, whether applied,
    undone or left alone), ``dropped`` when invalid, out of scope or over the limit."""
    kept: list[Prepared] = []
    for source, draft in drafts:
        draft = placed(scope, draft)
        if draft.change.model_dump(mode="json") in earlier:
            metrics.PROPOSALS.labels(metrics.service(), source, "repeated").inc()
            continue
        if len(kept) == MAX_PROPOSALS:
            metrics.PROPOSALS.labels(metrics.service(), source, "dropped").inc()
            continue
        try:
            preview, _ = _preview(conn, principal, scope, draft.change)
        except (ProposalStale, OutOfScope):
            metrics.PROPOSALS.labels(metrics.service(), source, "dropped").inc()
            continue
        metrics.PROPOSALS.labels(metrics.service(), source, "offered").inc()
        kept.append(Prepared(source, draft, preview))
    return kept


def placed(scope: Scope, draft: ProposalDraft) -> ProposalDraft:
    """``draft`` with a new note left without a notebook put in the conversation's one
    notebook (personal notes are outside a one-notebook conversation)."""
    change = draft.change
    if (
        isinstance(change, CreateChange)
        and change.projectId is None
        and scope.project_id is not None
        and not scope.covers_place(None)
    ):
        change = change.model_copy(update={"projectId": scope.project_id})
        return draft.model_copy(update={"change": change})
    return draft


EARLIER_CHANGES = """
    SELECT change FROM turn_proposals WHERE account_id = %s AND conversation_id = %s
"""


def earlier_changes(
    conn: Conn, principal: Principal, conversation_id: UUID
) -> list[dict[str, Any]]:
    """Every change the conversation was offered so far, as stored."""
    rows = conn.execute(EARLIER_CHANGES, (principal.account_id, conversation_id))
    return [row["change"] for row in rows]


INSERT_PROPOSAL = """
    INSERT INTO turn_proposals (account_id, conversation_id, turn_id, id, ordinal, source,
                                summary, change, preview)
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)
"""


def store_proposals(
    conn: Conn,
    principal: Principal,
    conversation_id: UUID,
    turn_id: UUID,
    prepared: Sequence[Prepared],
) -> None:
    """Store a completing turn's proposals."""
    for ordinal, item in enumerate(prepared, 1):
        conn.execute(
            INSERT_PROPOSAL,
            (
                principal.account_id,
                conversation_id,
                turn_id,
                uuid4(),
                ordinal,
                item.source,
                item.draft.summary,
                Jsonb(item.draft.change.model_dump(mode="json")),
                Jsonb(item.preview.model_dump(mode="json")),
            ),
        )


# --- Apply and undo -------------------------------------------------------------------

LOCK_PROPOSAL = f"""
    SELECT {PROPOSAL_JSON} AS resource, p.conversation_id, p.change, p.preview, p.state,
           p.applied,
           p.outcome, p.undo_outcome,
           c.all_scopes, c.project_id, c.include_personal, t.context, t.sources
    FROM turn_proposals p
    JOIN conversations c ON c.account_id = %(account_id)s AND c.id = p.conversation_id
    JOIN conversation_turns t ON t.account_id = %(account_id)s
         AND t.conversation_id = p.conversation_id AND t.id = p.turn_id
    WHERE p.account_id = %(account_id)s AND p.conversation_id = %(conversation)s
      AND p.id = %(id)s AND c.deleted_at IS NULL
    FOR UPDATE OF p
"""
RECORD = """
    UPDATE turn_proposals SET state = %(state)s, applied = coalesce(%(applied)s, applied),
        outcome = coalesce(%(outcome)s, outcome),
        undo_outcome = coalesce(%(undo_outcome)s, undo_outcome),
        events = events || %(event)s
    WHERE account_id = %(account_id)s AND conversation_id = %(conversation)s AND id = %(id)s
"""
RECORD_REFUSAL = """
    UPDATE turn_proposals SET events = events || %(event)s
    WHERE account_id = %(account_id)s AND conversation_id = %(conversation)s AND id = %(id)s
"""

Act = Literal["apply", "undo"]


@dataclass
class Written:
    """What an apply or undo wrote: the results, and for an apply what the undo needs."""

    notes: list[ProposalNoteResult] = field(default_factory=list)
    notebooks: list[UUID] = field(default_factory=list)
    undo: dict[str, Any] = field(default_factory=lambda: {"notes": [], "trees": []})


def apply(
    store: Store, principal: Principal, conversation_id: UUID, proposal_id: UUID
) -> ProposalOutcome:
    """Apply the proposal if everything it touches is still as previewed."""
    return _act(store, principal, conversation_id, proposal_id, "apply")


def undo(
    store: Store, principal: Principal, conversation_id: UUID, proposal_id: UUID
) -> ProposalOutcome:
    """Put back what the proposal's apply changed, if nothing changed since."""
    return _act(store, principal, conversation_id, proposal_id, "undo")


def _act(
    store: Store, principal: Principal, conversation_id: UUID, proposal_id: UUID, act: Act
) -> ProposalOutcome:
    require_owner(principal)
    key = {"account_id": principal.account_id, "conversation": conversation_id, "id": proposal_id}
    try:
        with transaction(store.pool, principal.account_id) as conn:
            hold_account(conn, principal)
            hold_session(conn, principal)
            row = conn.execute(LOCK_PROPOSAL, key).fetchone()
            if row is None:
                raise NotFound("proposal not found")
            earlier = _earlier(row, act)
            if earlier is not None:
                return _outcome(row, earlier)
            lock_tree(conn, principal.account_id)
            change = CHANGE.validate_python(row["change"])
            if act == "apply":
                written = _apply(conn, store, principal, row, change)
            else:
                written = _undo(conn, store, principal, row, change)
            result = {
                "notes": [n.model_dump(mode="json") for n in written.notes],
                "notebooks": [str(n) for n in written.notebooks],
            }
            event = _event(conn, principal, act, "applied" if act == "apply" else "undone")
            conn.execute(
                RECORD,
                {
                    "state": "applied" if act == "apply" else "undone",
                    "applied": Jsonb(written.undo) if act == "apply" else None,
                    "outcome": Jsonb(result) if act == "apply" else None,
                    "undo_outcome": Jsonb(result) if act == "undo" else None,
                    "event": Jsonb([event]),
                    **key,
                },
            )
            metrics.PROPOSAL_ACTIONS.labels(metrics.service(), act, event["result"]).inc()
            updated = conn.execute(LOCK_PROPOSAL, key).fetchone()
            assert updated is not None
            return _outcome(updated, result)
    except ProposalStale as ex:
        metrics.PROPOSAL_ACTIONS.labels(metrics.service(), act, "stale").inc()
        with transaction(store.pool, principal.account_id) as conn:
            event = _event(conn, principal, act, "stale", ex.message)
            conn.execute(RECORD_REFUSAL, {"event": Jsonb([event]), **key})
        raise


def _earlier(row: dict[str, Any], act: Act) -> dict[str, Any] | None:
    """The result of the same act done before (or refuse an act out of order)."""
    state = row["state"]
    if act == "apply":
        if state == "undone":
            raise ProposalUndone()
        return row["outcome"] if state == "applied" else None
    if row["change"]["action"] == "delete":
        raise NotUndoable()
    if state == "proposed":
        raise ProposalNotApplied()
    return row["undo_outcome"] if state == "undone" else None


def _event(
    conn: Conn, principal: Principal, act: Act, result: str, detail: str | None = None
) -> dict[str, Any]:
    now = conn.execute("SELECT statement_timestamp() AS at").fetchone()
    assert now is not None
    by = principal.owner_identity[1] if principal.owner_identity else str(principal.connection_id)
    return {
        "action": act,
        "result": result,
        "by": by,
        "at": now["at"].isoformat(),
        "detail": detail,
    }


def _outcome(row: dict[str, Any], result: dict[str, Any]) -> ProposalOutcome:
    return ProposalOutcome(
        proposal=Proposal.model_validate(row["resource"]),
        notes=[ProposalNoteResult.model_validate(n) for n in result["notes"]],
        notebooks=[UUID(n) for n in result["notebooks"]],
    )


def _row_scope(row: dict[str, Any]) -> Scope:
    given = [UUID(s["noteId"]) for s in row["sources"]]
    return scope_of(row, row["context"], given)


def _apply(
    conn: Conn, store: Store, principal: Principal, row: dict[str, Any], change: Change
) -> Written:
    """Fence on the preview, then write the change."""
    scope = _row_scope(row)
    now, notes = _preview(conn, principal, scope, change)
    _fence_preview(ProposalPreview.model_validate(row["preview"]), now)
    written = Written()
    origin = f"conversation:{row['conversation_id']}"
    if isinstance(change, EditChange):
        _apply_edit(conn, store, principal, notes[change.noteId], change, written)
    elif isinstance(change, CreateChange):
        values = _new_note(change.content, change.kind, change.projectId, origin)
        _create(conn, store, principal, values, written)
    elif isinstance(change, MergeChange):
        _apply_merge(conn, store, principal, notes, change, origin, written)
    elif isinstance(change, OrganizeChange):
        _apply_organize(conn, store, principal, notes, change, written)
    else:
        _apply_lifecycle(conn, principal, notes, change, written)
    return written


def _fence_preview(then: ProposalPreview, now: ProposalPreview) -> None:
    """Every note and subtree is as the preview showed it, or ``ProposalStale``."""
    problems = []
    current = {n.id: n for n in now.notes}
    for note in then.notes:
        seen = current[note.id]
        if (seen.version, seen.archived, seen.projectId) != (
            note.version,
            note.archived,
            note.projectId,
        ):
            problems.append(_moved(note.id, note.version, seen.version))
    trees = {t.id: t for t in now.notebooks}
    for tree in then.notebooks:
        if trees[tree.id].fingerprint != tree.fingerprint:
            problems.append(f"notebook {tree.id}: something in its subtree changed")
    if problems:
        raise ProposalStale(problems)


def _moved(note_id: UUID, then: int, now: int) -> str:
    if then != now:
        return f"note {note_id}: now at version {now}, proposed at version {then}"
    return f"note {note_id}: archived, restored or moved since"


def _snapshot(row: dict[str, Any]) -> dict[str, Any]:
    """A note's saved fields (and expiry) as JSON, to put back on undo."""
    values = {name: row[name] for name in NOTE_FIELDS}
    values["project_id"] = None if row["project_id"] is None else str(row["project_id"])
    values["expires_at"] = None if row["expires_at"] is None else row["expires_at"].isoformat()
    return values


def _after(row: dict[str, Any]) -> dict[str, Any]:
    """What the undo's fence expects of a note the apply wrote."""
    return {
        "version": row["version"],
        "archived": row["archived_at"] is not None,
        "projectId": None if row["project_id"] is None else str(row["project_id"]),
    }


def _note_row(conn: Conn, principal: Principal, note_id: UUID) -> dict[str, Any]:
    row = conn.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memories m"
        " WHERE m.account_id = %(account_id)s AND m.id = %(id)s",
        {"account_id": principal.account_id, "id": note_id},
    )
    found = row.fetchone()
    assert found is not None
    return found


def _save(
    conn: Conn,
    store: Store,
    principal: Principal,
    current: dict[str, Any],
    values: dict[str, Any],
    restart: bool,
) -> dict[str, Any]:
    """Write ``values`` as the note's next version and its revision; the new row."""
    row = write_correction(conn, store, current, values, retention_supplied=restart, by=principal)
    record_revision(conn, store, row, None)
    return row


def _written(
    written: Written,
    row: dict[str, Any],
    outcome: str,
    before: dict[str, Any] | None,
    undo_as: str | None = None,
) -> None:
    """Note that the apply wrote ``row`` (and how the undo puts it back)."""
    written.notes.append(_result(row["id"], outcome, row["version"]))
    written.undo["notes"].append(
        {"id": str(row["id"]), "after": _after(row), "before": before, "undo": undo_as or outcome}
    )


def _result(note_id: UUID, outcome: str, version: int) -> ProposalNoteResult:
    return ProposalNoteResult.model_validate(
        {"id": note_id, "outcome": outcome, "version": version}
    )


def _apply_edit(
    conn: Conn,
    store: Store,
    principal: Principal,
    current: dict[str, Any],
    change: EditChange,
    written: Written,
) -> None:
    values = {name: current[name] for name in NOTE_FIELDS}
    for name, value in (
        ("content", change.content),
        ("kind", change.kind),
        ("retention_days", change.retentionDays),
    ):
        if value is not None:
            values[name] = value
    if change.moveTo is not None:
        values["project_id"] = change.moveTo.projectId
    row = _save(conn, store, principal, current, values, restart=change.retentionDays is not None)
    _written(written, row, "updated", _snapshot(current))


def _new_note(content: str, kind: str, project_id: UUID | None, origin: str) -> dict[str, Any]:
    return {
        "content": content,
        "kind": kind,
        "project_id": project_id,
        "task_id": None,
        "capture": "explicit",
        "source_agent": SOURCE_AGENT,
        "source_ref": origin,
        "retention_days": None,
    }


def _create(
    conn: Conn, store: Store, principal: Principal, values: dict[str, Any], written: Written
) -> None:
    created = conn.execute(
        INSERT_NOTE,
        {
            **values,
            **saver(principal),
            "account_id": principal.account_id,
            "id": uuid4(),
            "indexing": store.indexing,
        },
    ).fetchone()
    assert created is not None  # proposals never create handoffs, the only conflict
    record_revision(conn, store, created, None)
    _written(written, created, "created", None, undo_as="archived")


#: Archive notes, or bring them back: two statements, not a ``CASE`` around
#: ``statement_timestamp()``, which Citus refuses in an ``UPDATE`` (docs/scaling.md).
ARCHIVE_NOTES = """
    UPDATE memories SET archived_at = statement_timestamp()
    WHERE account_id = %s AND id = ANY(%s::uuid[])
"""
UNARCHIVE_NOTES = """
    UPDATE memories SET archived_at = NULL WHERE account_id = %s AND id = ANY(%s::uuid[])
"""


def _archive(conn: Conn, principal: Principal, ids: list[UUID], archive: bool) -> None:
    conn.execute(ARCHIVE_NOTES if archive else UNARCHIVE_NOTES, (principal.account_id, ids))


def _apply_merge(
    conn: Conn,
    store: Store,
    principal: Principal,
    notes: dict[UUID, dict[str, Any]],
    change: MergeChange,
    origin: str,
    written: Written,
) -> None:
    originals = [i for i in change.noteIds if i != change.into]
    _archive(conn, principal, originals, True)
    if change.into is not None:
        current = notes[change.into]
        values = {name: current[name] for name in NOTE_FIELDS}
        values.update(content=change.content, kind=change.kind or current["kind"])
        row = _save(conn, store, principal, current, values, False)
        _written(written, row, "updated", _snapshot(current))
    else:
        first = notes[change.noteIds[0]]
        kind = change.kind or ("fact" if first["kind"] == "handoff" else first["kind"])
        _create(
            conn,
            store,
            principal,
            _new_note(change.content, kind, first["project_id"], origin),
            written,
        )
    for note_id in originals:
        _written(written, _note_row(conn, principal, note_id), "archived", None, undo_as="restored")


def _apply_organize(
    conn: Conn,
    store: Store,
    principal: Principal,
    notes: dict[UUID, dict[str, Any]],
    change: OrganizeChange,
    written: Written,
) -> None:
    destination = change.destination.projectId
    new = change.destination.newNotebook
    if new is not None:
        created = write_notebook(
            conn,
            "INSERT INTO projects AS p (account_id, id, name, parent_id)"
            f" VALUES (%s, %s, %s, %s) RETURNING {NOTEBOOK_COLUMNS}",
            (principal.account_id, uuid4(), new.name, new.parentId),
        )
        destination = created["id"]
        written.notebooks.append(destination)
    for note_id in change.noteIds:
        current = notes[note_id]
        if current["project_id"] != destination:
            values = {name: current[name] for name in NOTE_FIELDS}
            values["project_id"] = destination
            row = _save(conn, store, principal, current, values, False)
            _written(written, row, "moved", _snapshot(current))
    moved = []
    for notebook_id in change.notebookIds:
        before = _move_notebook(conn, principal, notebook_id, destination)
        moved.append({"id": str(notebook_id), "parent": None if before is None else str(before)})
        written.notebooks.append(notebook_id)
    for entry in moved:
        moved_tree = subtrees.state(conn, principal.account_id, UUID(entry["id"]))
        entry["fingerprint"] = moved_tree.fingerprint
    written.undo["moved"] = moved
    if new is not None:
        tree = subtrees.state(conn, principal.account_id, destination)  # type: ignore[arg-type]
        written.undo["trees"].append({"id": str(destination), "fingerprint": tree.fingerprint})
        written.undo["created"] = str(destination)


MOVE_NOTEBOOK = f"""
    UPDATE projects AS p SET parent_id = %(parent)s, updated_at = statement_timestamp()
    WHERE p.account_id = %(account_id)s AND p.id = %(id)s RETURNING {NOTEBOOK_COLUMNS}
"""
PARENT = "SELECT parent_id FROM projects WHERE account_id = %(account_id)s AND id = %(id)s"


def _move_notebook(
    conn: Conn, principal: Principal, notebook_id: UUID, parent: UUID | None
) -> UUID | None:
    """Move a notebook under ``parent`` (no cycles); its parent before."""
    values = {"account_id": principal.account_id, "parent": parent, "id": notebook_id}
    row = conn.execute(PARENT, values).fetchone()
    assert row is not None
    if parent is not None and conn.execute(CYCLE, values).fetchone():
        raise NotebookCycle()
    write_notebook(conn, MOVE_NOTEBOOK, values)
    return row["parent_id"]  # type: ignore[no-any-return]


def _apply_lifecycle(
    conn: Conn,
    principal: Principal,
    notes: dict[UUID, dict[str, Any]],
    change: LifecycleChange,
    written: Written,
) -> None:
    action = change.action
    if action == "delete":
        conn.execute(
            "UPDATE memories SET deleted_at = statement_timestamp()"
            " WHERE account_id = %s AND id = ANY(%s::uuid[])",
            (principal.account_id, change.noteIds),
        )
        for note_id in change.noteIds:
            written.notes.append(_result(note_id, "deleted", notes[note_id]["version"]))
    else:
        _archive(conn, principal, change.noteIds, action == "archive")
        undo_as = "restored" if action == "archive" else "archived"
        for note_id in change.noteIds:
            outcome = "archived" if action == "archive" else "restored"
            _written(written, _note_row(conn, principal, note_id), outcome, None, undo_as=undo_as)
    for root in change.notebookIds:
        changed = subtrees.change(conn, principal.account_id, root, action)
        written.notebooks.append(root)
        if action != "delete":
            written.undo["trees"].append(
                {
                    "id": str(root),
                    "fingerprint": subtrees.state(conn, principal.account_id, root).fingerprint,
                    "notebooks": [str(i) for i in changed["n"]],
                    "notes": [str(i) for i in changed["m"]],
                    "files": [str(i) for i in changed["f"]],
                    "undo": "restored" if action == "archive" else "archived",
                }
            )


def _undo(
    conn: Conn, store: Store, principal: Principal, row: dict[str, Any], change: Change
) -> Written:
    """Fence on what the apply left, then put back what it changed."""
    applied = row["applied"]
    scope = _row_scope(row)
    current = _fence_applied(conn, principal, scope, applied)
    written = Written()
    for note in applied["notes"]:
        note_id = UUID(note["id"])
        if note["before"] is not None:
            row_now = _put_back(conn, store, principal, current[note_id], note["before"])
            outcome = "moved" if isinstance(change, OrganizeChange) else "updated"
            written.notes.append(_result(note_id, outcome, row_now["version"]))
        else:
            _archive(conn, principal, [note_id], note["undo"] == "archived")
            written.notes.append(_result(note_id, note["undo"], current[note_id]["version"]))
    for entry in reversed(applied.get("moved", [])):
        _move_notebook(conn, principal, UUID(entry["id"]), _uuid(entry["parent"]))
        written.notebooks.append(UUID(entry["id"]))
    for tree in applied["trees"]:
        if "undo" in tree:
            _set_archived_subtree(conn, principal, tree, archive=tree["undo"] == "archived")
            written.notebooks.append(UUID(tree["id"]))
    if "created" in applied:
        conn.execute(
            "UPDATE projects SET deleted_at = statement_timestamp(),"
            " updated_at = statement_timestamp() WHERE account_id = %s AND id = %s",
            (principal.account_id, UUID(applied["created"])),
        )
        written.notebooks.append(UUID(applied["created"]))
    return written


def _fence_applied(
    conn: Conn, principal: Principal, scope: Scope, applied: dict[str, Any]
) -> dict[UUID, dict[str, Any]]:
    """Every note and subtree the apply wrote is as it left them, or ``ProposalStale``;
    the notes' rows, locked."""
    ids = [UUID(n["id"]) for n in applied["notes"]]
    rows = {r["id"]: r for r in conn.execute(READ_NOTES, params(principal, ids=ids)).fetchall()}
    problems = []
    for note in applied["notes"]:
        note_id = UUID(note["id"])
        row = rows.get(note_id)
        if row is None:
            problems.append(f"note {note_id}: deleted or expired since")
        elif _after(row) != note["after"]:
            problems.append(_moved(note_id, note["after"]["version"], row["version"]))
        else:
            # Where the undo leaves the note must still be in the conversation's scope.
            before = note["before"]
            place = row["project_id"] if before is None else _uuid(before["project_id"])
            if not scope.covers_place(place):
                raise OutOfScope(f"note {note_id} is outside this conversation's scope")
    for tree in applied["trees"] + applied.get("moved", []):
        try:
            fingerprint = subtrees.state(conn, principal.account_id, UUID(tree["id"])).fingerprint
        except NotFound:
            fingerprint = None
        if fingerprint != tree["fingerprint"]:
            problems.append(f"notebook {tree['id']}: something in its subtree changed")
    if problems:
        raise ProposalStale(problems)
    return rows


def _uuid(value: str | None) -> UUID | None:
    return None if value is None else UUID(value)


SET_EXPIRY = "UPDATE memories SET expires_at = %s WHERE account_id = %s AND id = %s"


def _put_back(
    conn: Conn, store: Store, principal: Principal, current: dict[str, Any], before: dict[str, Any]
) -> dict[str, Any]:
    """Save the note's earlier fields (and exact expiry, which its revision copies) as its
    next version; the new row (its version, notebook and archive state)."""
    values = {name: before[name] for name in NOTE_FIELDS}
    values["project_id"] = _uuid(before["project_id"])
    row = write_correction(conn, store, current, values, retention_supplied=True, by=principal)
    expires = before["expires_at"]
    at = None if expires is None else datetime.fromisoformat(expires)
    conn.execute(SET_EXPIRY, (at, principal.account_id, row["id"]))
    record_revision(conn, store, row, None)
    return row


def _set_archived_subtree(
    conn: Conn, principal: Principal, tree: dict[str, Any], archive: bool
) -> None:
    """Archive (or un-archive) exactly the notebooks, notes and files an apply changed
    (an apply recorded before files were archived with notebooks has no ``files``)."""
    stamp = "now()" if archive else "NULL"
    account = principal.account_id
    conn.execute(
        f"UPDATE projects SET archived_at = {stamp}, updated_at = statement_timestamp()"
        " WHERE account_id = %s AND id = ANY(%s::uuid[])",
        (account, [UUID(i) for i in tree["notebooks"]]),
    )
    conn.execute(
        f"UPDATE memories SET archived_at = {stamp} WHERE account_id = %s AND id = ANY(%s::uuid[])",
        (account, [UUID(i) for i in tree["notes"]]),
    )
    conn.execute(
        f"UPDATE files SET archived_at = {stamp}, updated_at = statement_timestamp()"
        " WHERE account_id = %s AND id = ANY(%s::uuid[])",
        (account, [UUID(i) for i in tree.get("files", [])]),
    )
