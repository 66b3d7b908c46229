"""Restoring a Grove export (format v1) into an account: ``grove import`` and
``POST /v1/import`` (``grove_memory.portability.imports``).

``grove import`` runs with the migration role's credentials, like the other ``grove``
commands; the api with the runtime role. Both are subject to (forced) row-level
security, so every write happens in a transaction scoped to the target account
(``set_tenant``) and cannot land in another account.

What is restored: notebooks (names, tree, archive state, times) and notes with every
revision (content, kind, scope, task, capture, provenance, retention and expiry,
operation IDs, times, archive state), conversations with their turns, and files (each
held until its last chunk line, checked against its size and SHA-256, then written in
one transaction with its extraction queued). Connection lines are skipped: they are
credentials, and a restore never grants access. Each line is checked on its own first,
with the API's own request models (``grove_memory.portability.restore_checks``).

IDs (``grove import``): an item keeps its ID unless another account holds it; then it
becomes ``uuid5(target account, original ID)``. ``POST /v1/import`` (``keep_ids`` false)
always maps: the runtime role cannot see other accounts' IDs, and must not learn of them.
The rule is deterministic, so references (notebook parents, a note's notebook,
revisions) follow the same mapping and a re-run maps the same way. An item whose (kept
or mapped) ID the target account already holds is skipped: that makes a re-run after a
crash create nothing twice. The notebooks are restored in one transaction, then the
notes in groups of ``GROUP_NOTES``, a group in one transaction (one ID probe, then one
statement each for the notes, their revisions and their jobs). A group that fails (a
quota, a duplicate, a notebook not in the export) is rolled back and written again one
note a transaction, so the notes before the failing one are restored and nothing of it
is written. Lines are read and checked a little ahead, in a thread, while the database
writes the group before. ``Progress`` says how far a restore got
(``grove_memory.portability.restore_progress``): the command prints it, the api records it.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import IO, Any, LiteralString
from uuid import UUID, uuid5

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from grove_contracts.files import media_type_of
from grove_contracts.notebooks import Notebook
from grove_contracts.notes import Memory, Revision
from grove_db import queue
from grove_db.errors import QUOTA_SQLSTATE
from grove_db.inserts import insert_values
from grove_db.pool import fan_out, hold_live_account, set_locally, set_tenant
from grove_memory.files.blobs import BlobKey, PostgresBlobs
from grove_memory.portability.restore_checks import (
    CheckedChunk,
    CheckedConversation,
    CheckedFile,
    CheckedLine,
    CheckedNote,
    RestoreError,
    check_header,
    read_ahead,
)
from grove_memory.portability.restore_progress import Counts, Progress

#: Notes restored in one transaction (when none is refused).
GROUP_NOTES = 100
#: Lines read and checked ahead of the writes (bounds the memory they hold).
READ_AHEAD = 2 * GROUP_NOTES

Conn = psycopg.Connection[dict[str, Any]]

#: Which of the candidate IDs exist in the account (``HERE``), or in any account
#: (``ANYWHERE``, with ``grove.id_probe`` on: ``grove import`` keeps an ID no other
#: account holds, so it asks every shard; docs/scaling.md lists it).
PROBE_HERE: dict[str, LiteralString] = {
    table: f"SELECT account_id, id FROM {table} WHERE account_id = %s AND id = ANY(%s::uuid[])"
    for table in ("projects", "memories")
}
PROBE_ANYWHERE: dict[str, LiteralString] = {
    "projects": "SELECT account_id, id FROM projects WHERE id = ANY(%s::uuid[])",
    "memories": "SELECT account_id, id FROM memories WHERE id = ANY(%s::uuid[])",
}

INSERT_NOTEBOOK = """
    INSERT INTO projects (account_id, id, parent_id, name, archived_at, created_at, updated_at)
    VALUES (%(account)s, %(id)s, %(parent)s, %(name)s,
            CASE WHEN %(archived)s THEN %(updated)s::timestamptz END, %(created)s, %(updated)s)
"""

# Notes and revisions are written a group at a time, one statement each (rows of
# ``VALUES``: ``grove_db.inserts``): statement triggers (the account's usage and quota)
# run once per group.
#: A restored note's columns after ``account_id``, each with its key in ``_note_row``.
NOTE_COLUMNS = {
    "id": "id",
    "project_id": "project",
    "kind": "kind",
    "content": "content",
    "task_id": "task",
    "capture": "capture",
    "source_agent": "agent",
    "source_ref": "ref",
    "retention_days": "retention",
    "expires_at": "expires",
    "archived_at": "archived",
    "version": "version",
    "indexing": "indexing",
    "created_at": "created",
    "updated_at": "updated",
}
#: A restored revision's columns after ``account_id``, keyed as ``_revision_rows``.
REVISION_COLUMNS = {
    "memory_id": "id",
    "version": "version",
    "content": "content",
    "kind": "kind",
    "project_id": "project",
    "task_id": "task",
    "capture": "capture",
    "source_agent": "agent",
    "source_ref": "ref",
    "retention_days": "retention",
    "expires_at": "expires",
    "operation_id": "operation",
    "created_at": "created",
}

CONVERSATION_HERE = "SELECT 1 FROM conversations WHERE account_id = %s AND id = %s"
FILES_HERE = "SELECT id FROM files WHERE account_id = %s AND id = ANY(%s::uuid[])"
#: A restored file: version 1 of its exported current version, extraction pending.
INSERT_FILE = """
    INSERT INTO files (account_id, id, project_id, name, media_type, size_bytes, sha256,
                       archived_at, created_at, updated_at)
    VALUES (%(account)s, %(id)s, %(project)s, %(name)s, %(media_type)s, %(size)s,
            %(sha256)s, CASE WHEN %(archived)s THEN %(updated)s::timestamptz END,
            %(created)s, %(updated)s)
"""
# Restored conversations and turns carry no request digest: a retry of their creation
# under the same ID (with any body) is a conflict, never a replay.
INSERT_CONVERSATION = """
    INSERT INTO conversations (account_id, id, request_hash, all_scopes, project_id,
                               include_personal, title, version, created_at, updated_at)
    VALUES (%(account)s, %(id)s, 'restored', %(all_scopes)s, %(project)s, %(personal)s,
            %(title)s, %(version)s, %(created)s, %(updated)s)
"""
INSERT_TURN = """
    INSERT INTO conversation_turns (account_id, conversation_id, id, ordinal, query, format,
        context, request_hash, status, attempts, outcome, answer_text, answer_format,
        generator, citations, sources, context_coverage, error, created_at, completed_at)
    VALUES (%(account)s, %(conversation)s, %(id)s, %(ordinal)s, %(query)s, %(format)s,
        %(context)s, 'restored', %(status)s, %(attempts)s, %(outcome)s, %(text)s,
        %(answer_format)s, %(generator)s, %(citations)s, %(sources)s, %(coverage)s,
        %(error)s, %(created)s, %(completed)s)
"""


def mapped_id(account_id: UUID, original: UUID) -> UUID:
    """The ID an item takes in ``account_id`` when another account holds ``original``."""
    return uuid5(account_id, str(original))


def restore(
    migration_url: str,
    account_id: UUID,
    lines: Iterable[bytes],
    *,
    profile: str | None,
    progress: IO[str] = sys.stderr,
    total_bytes: int | None = None,
) -> Counts:
    """Restore the export ``lines`` into the account; the counts of what was done.

    ``profile``: the deployment's embedding profile (None: embeddings disabled); each
    restored note's current revision gets an embedding job for it, as a save does.
    Raises ``RestoreError`` (with the line number) at the first line that cannot be
    restored; everything before it stays restored, nothing of that line is written.
    """
    shown = Progress(Counts(), progress, total_bytes=total_bytes)
    with psycopg.connect(migration_url, row_factory=dict_row, autocommit=True) as conn:
        restorer = Restorer(lambda: nullcontext(conn), account_id, profile, shown)
        restorer.run(shown.counted(lines), READ_AHEAD)
    return restorer.progress.counts


class Restorer:
    """Restores one export's lines, in order, into one account."""

    def __init__(
        self,
        connect: Callable[[], AbstractContextManager[Conn]],
        account_id: UUID,
        profile: str | None,
        progress: Progress,
        *,
        keep_ids: bool = True,
        max_file_bytes: int | None = None,
    ) -> None:
        #: A connection for each transaction (the api's pool lends one per group, so a
        #: slow client holds none while it sends the next lines).
        self.connect = connect
        self.conn: Conn | None = None
        self.account_id = account_id
        self.profile = profile
        self.progress = progress
        #: Keep an item's ID when no other account holds it (else always map it).
        self.keep_ids = keep_ids
        self.counts = progress.counts
        #: Notebook lines wait until the tree is complete (a parent may come after its
        #: child), then are restored together; original ID -> ID in the account.
        self.pending: list[tuple[int, Notebook]] = []
        self.notebooks: dict[UUID, UUID] | None = None
        #: Checked notes waiting to be written together.
        self.group: list[CheckedNote] = []
        #: The file whose chunks are being read (written once the last one arrives), and
        #: the largest one taken (it is held in memory until then).
        self.file: CheckedFile | None = None
        self.max_file_bytes = max_file_bytes

    def run(self, lines: Iterable[bytes], ahead: int) -> None:
        """Restore the export ``lines``, read and checked up to ``ahead`` lines ahead."""
        numbered = enumerate(lines, start=1)
        check_header(next(numbered, (1, b"")))
        self.check_account()
        with read_ahead(numbered, ahead) as checked:
            for line in checked:
                self.line(line)
        self.finish()

    def check_account(self) -> None:
        """Refuse before anything is written if the account is missing or deleted."""
        with self._transaction():
            pass

    def line(self, line: CheckedLine) -> None:
        """Restore one checked line; notes are written by the group."""
        try:
            self._line(line)
        except RestoreError:
            self._flush()  # the lines before this one are restored, as the docs promise
            raise
        self.progress.tick()

    def _line(self, line: CheckedLine) -> None:
        number, kind = line.number, line.kind
        if kind == "notebook" and self.notebooks is not None:
            raise RestoreError("a notebook line after the conversations or notes", number)
        if kind in ("memory", "conversation", "file"):
            self._notebooks_done()
        if line.error is not None:
            raise line.error
        if self.file is not None and not isinstance(line.item, CheckedChunk):
            raise RestoreError(
                f"file {self.file.file.id} ends after {len(self.file.data)} of its"
                f" {self.file.chunks} chunk(s)",
                number,
            )
        if isinstance(line.item, Notebook):
            self.pending.append((number, line.item))
        elif isinstance(line.item, CheckedNote):
            self._queue_note(line.item)
        elif isinstance(line.item, CheckedConversation):
            self._restore_conversation(line.item)
        elif isinstance(line.item, CheckedFile):
            limit = self.max_file_bytes
            if limit is not None and line.item.file.sizeBytes > limit:
                raise RestoreError(
                    f"file {line.item.file.id} is larger than the {limit} bytes a file may"
                    " have here",
                    number,
                )
            self.file = line.item
            if not line.item.chunks:
                self._restore_file()
        elif isinstance(line.item, CheckedChunk):
            self._add_chunk(line.item)
        elif kind == "connection":
            self.counts.connections += 1
        else:
            raise RestoreError(f"unknown line type {kind!r}", number)

    def finish(self) -> None:
        """Restore what is still pending and report the final counts."""
        self._notebooks_done()
        self._flush()
        if self.file is not None:
            raise RestoreError(f"the export ends inside file {self.file.file.id}", self.file.number)
        self.progress.tick(force=True)

    def _add_chunk(self, chunk: CheckedChunk) -> None:
        """The next chunk of the file being read; the file is written after its last."""
        file = self.file
        if file is None or chunk.file_id != file.file.id or chunk.index != len(file.data):
            raise RestoreError(
                "a file chunk out of place: each follows its file, in order", chunk.number
            )
        file.data.append(chunk.data)
        file.size += len(chunk.data)
        if file.size > file.file.sizeBytes:
            raise RestoreError(
                f"file {file.file.id} has more bytes than its sizeBytes", chunk.number
            )
        if len(file.data) == file.chunks:
            self._restore_file()

    def _restore_file(self) -> None:
        """Write the file read (its bytes checked against its size and sha256) as version 1
        under the ID it maps to, in its notebook, and queue its extraction; skipped if the
        account already holds it. Files always take the mapped ID (no account's other
        files are visible to probe), unless this account holds the original."""
        file, self.file = self.file, None
        assert file is not None and self.notebooks is not None
        data = b"".join(file.data)
        meta = file.file
        if len(data) != meta.sizeBytes or hashlib.sha256(data).hexdigest() != meta.sha256:
            raise RestoreError(
                f"file {meta.id}'s bytes do not match its size and sha256", file.number
            )
        project = meta.projectId
        if project is not None and project not in self.notebooks:
            self.progress.warning(
                f"line {file.number}: file {meta.id}'s notebook is not in the export;"
                " restored among personal notes"
            )
        project = None if project is None else self.notebooks.get(project)
        mapped = mapped_id(self.account_id, meta.id)
        with self._transaction():
            here = self._conn.execute(FILES_HERE, (self.account_id, [meta.id, mapped])).fetchall()
            if here:
                self.counts.skipped_files += 1
                return
            values = {
                "account": self.account_id,
                "id": mapped,
                "project": project,
                "name": meta.name,
                "media_type": media_type_of(meta.mediaType),
                "size": meta.sizeBytes,
                "sha256": bytes.fromhex(meta.sha256),
                "archived": meta.archived,
                "created": meta.createdAt,
                "updated": meta.updatedAt,
            }
            _execute(self._conn, file.number, INSERT_FILE, values)
            with _refusals(file.number):  # the bytes count against the file quota
                PostgresBlobs().write(self._conn, BlobKey(self.account_id, mapped, 1), [data])
            queue.enqueue_extraction(self._conn, mapped, 1, self.profile)
        self.counts.files += 1

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One transaction in the account, which must be live (held against deletion)."""
        with self.connect() as conn, conn.transaction():
            self.conn = conn
            try:
                set_tenant(conn, self.account_id)
                if not hold_live_account(conn, self.account_id):
                    raise RestoreError(f"no live account {self.account_id}")
                yield
            finally:
                self.conn = None

    def _restore_conversation(self, line: CheckedConversation) -> None:
        """One conversation with its turns, in one transaction: its ID and its turns'
        are kept (a conversation's ID is its account's own) unless every ID is mapped;
        the notes and notebooks its turns name map as theirs do. Proposals are not
        restored (what an undo needs is not in the export); a turn that was being
        answered is restored ``failed``."""
        conversation = line.data["conversation"]
        original = UUID(conversation["id"])
        final = original if self.keep_ids else mapped_id(self.account_id, original)
        with self._transaction():
            if self._conn.execute(CONVERSATION_HERE, (self.account_id, final)).fetchone():
                self.counts.skipped_conversations += 1
                return
            refs = _note_references(line.data["turns"])
            taken = self._probe("memories", refs)
            notes = {str(n): str(self._choose(n, taken)) for n in refs}
            values = self._conversation_row(line, final)
            _execute(self._conn, line.number, INSERT_CONVERSATION, values)
            for turn in line.data["turns"]:
                row = self._turn_row(turn, final, notes)
                _execute(self._conn, line.number, INSERT_TURN, row)
        self.counts.conversations += 1
        self.counts.turns += len(line.data["turns"])

    def _conversation_row(self, line: CheckedConversation, final: UUID) -> dict[str, Any]:
        conversation = line.data["conversation"]
        project = None if conversation["projectId"] is None else UUID(conversation["projectId"])
        if project is not None:
            assert self.notebooks is not None
            if project not in self.notebooks:
                self.progress.warning(
                    f"line {line.number}: conversation {conversation['id']}'s notebook is not"
                    " in the export; restored over personal notes only"
                )
            project = self.notebooks.get(project)
        return {
            "account": self.account_id,
            "id": final,
            "all_scopes": conversation["allScopes"],
            "project": project,
            "personal": conversation["includePersonal"] or project is None,
            "title": conversation["title"],
            "version": conversation["version"],
            "created": conversation["createdAt"],
            "updated": conversation["updatedAt"],
        }

    def _turn_row(
        self, turn: dict[str, Any], conversation: UUID, notes: dict[str, str]
    ) -> dict[str, Any]:
        assert self.notebooks is not None
        books = {str(k): str(v) for k, v in self.notebooks.items()}
        context = turn["context"]
        if context is not None:  # as the API stores it (_check_turn): IDs in lower case
            context = {
                **context,
                "notes": [notes[n] for n in context.get("notes", [])],
                "notebooks": [books.get(n, n) for n in context.get("notebooks", [])],
            }
        answer = turn["answer"] or {}
        citations = [
            {
                **c,
                "noteId": notes[_id(c["noteId"])],
                "revisionId": f"{notes[_id(c['noteId'])]}:{c['version']}",
            }
            for c in answer.get("citations", [])
        ]
        sources = [
            {
                **s,
                "noteId": notes[_id(s["noteId"])],
                "projectId": None if s["projectId"] is None else books.get(_id(s["projectId"])),
            }
            for s in turn["sources"]
        ]
        answering = turn["status"] == "in_progress"
        turn_id = UUID(turn["id"])
        return {
            "account": self.account_id,
            "conversation": conversation,
            "id": turn_id if self.keep_ids else mapped_id(self.account_id, turn_id),
            "ordinal": turn["ordinal"],
            "query": turn["query"],
            "format": turn["format"],
            "context": None if context is None else Jsonb(context),
            "status": "failed" if answering else turn["status"],
            "attempts": turn["attempts"],
            "outcome": turn["outcome"],
            "text": answer.get("text"),
            "answer_format": answer.get("format"),
            "generator": answer.get("generator"),
            "citations": Jsonb(citations),
            "sources": Jsonb(sources),
            "coverage": None if turn["contextCoverage"] is None else Jsonb(turn["contextCoverage"]),
            "error": "abandoned" if answering else turn["error"],
            "created": turn["createdAt"],
            "completed": turn["completedAt"],
        }

    @property
    def _conn(self) -> Conn:
        """The connection of the transaction in progress."""
        assert self.conn is not None, "outside a transaction"
        return self.conn

    def _notebooks_done(self) -> None:
        if self.notebooks is not None:
            return
        ordered = _tree_order(self.pending)
        with self._transaction():
            originals = [notebook.id for _, notebook in ordered]
            taken = self._probe("projects", originals)
            self.notebooks = {o: self._choose(o, taken) for o in originals}
            for number, notebook in ordered:
                self._write_notebook(number, notebook, taken)
        self.pending = []

    def _write_notebook(self, number: int, notebook: Notebook, taken: _Taken) -> None:
        assert self.notebooks is not None
        final = self.notebooks[notebook.id]
        if final in taken.here:
            self.counts.skipped_notebooks += 1
            return
        parent = None if notebook.parentId is None else self.notebooks.get(notebook.parentId)
        if notebook.parentId is not None and parent is None:
            self.progress.warning(
                f"line {number}: notebook {notebook.id}'s parent is not in the export;"
                " restored at the top level"
            )
        values = {
            "account": self.account_id,
            "id": final,
            "parent": parent,
            "name": notebook.name,
            "archived": notebook.archived,
            "created": notebook.createdAt,
            "updated": notebook.updatedAt,
        }
        _execute(self._conn, number, INSERT_NOTEBOOK, values)
        self.counts.notebooks += 1

    def _queue_note(self, note: CheckedNote) -> None:
        """Hold a checked note for its group."""
        self.group.append(note)
        if len(self.group) >= GROUP_NOTES:
            self._flush()

    def _flush(self) -> None:
        """Write the waiting notes."""
        group, self.group = self.group, []
        if group:
            self._write(group)

    def _write(self, group: list[CheckedNote]) -> None:
        """Write ``group`` in one transaction; if the database refuses any of it, write
        it again one note a transaction, so the notes before the refused one are
        restored and that one stops the restore with its own line number."""
        try:
            with self._transaction():
                written = self._write_group(group)
        except (psycopg.Error, RestoreError):
            if len(group) == 1:
                raise
            for note in group:
                self._write([note])
            return
        self.counts.notes += len(written)
        self.counts.revisions += sum(len(note.revisions) for note in written)
        self.counts.skipped_notes += len(group) - len(written)

    def _write_group(self, group: list[CheckedNote]) -> list[CheckedNote]:
        """Write the notes the account does not hold yet, in the caller's transaction; the
        notes written. A refusal names the group's first line."""
        taken = self._probe("memories", [note.memory.id for note in group])
        new, finals = [], []
        for note in group:
            final = self._choose(note.memory.id, taken)
            if final not in taken.here:
                new.append(note)
                finals.append(final)
        if not new:
            return new
        pairs = list(zip(new, finals, strict=True))
        notes = [self._note_row(note, final) for note, final in pairs]
        revisions = [row for note, final in pairs for row in self._revision_rows(note, final)]
        number = group[0].number
        self._insert(number, "memories", NOTE_COLUMNS, notes)
        self._insert(number, "memory_revisions", REVISION_COLUMNS, revisions)
        queue.enqueue_expiries(self._conn, self.account_id, finals)
        if self.profile:
            queue.enqueue_embeddings(self._conn, self.account_id, finals, self.profile)
        return new

    def _insert(
        self, number: int, table: str, columns: dict[str, str], rows: list[dict[str, Any]]
    ) -> None:
        """Write ``rows`` (keyed as ``columns`` says) into ``table`` in the account."""
        values = [[self.account_id, *map(row.get, columns.values())] for row in rows]
        with _refusals(number):
            insert_values(self._conn, table, ["account_id", *columns], values)

    def _note_row(self, note: CheckedNote, final: UUID) -> dict[str, Any]:
        memory = note.memory
        return _note_values(memory) | {
            "id": final,
            "project": self._scope(note.number, memory.projectId, required=True),
            "archived": memory.updatedAt if memory.archived else None,
            "version": memory.version,
            "indexing": "pending" if self.profile else "disabled",
            "updated": memory.updatedAt,
        }

    def _revision_rows(self, note: CheckedNote, final: UUID) -> list[dict[str, Any]]:
        return [
            _note_values(revision)
            | {
                "id": final,
                "project": self._scope(note.number, revision.projectId, required=False),
                "version": revision.version,
                "operation": revision.operationId,
            }
            for revision in note.revisions
        ]

    def _scope(self, number: int, notebook: UUID | None, *, required: bool) -> UUID | None:
        """The account's ID for a notebook a note or revision names.

        A note's notebook must be in the export; an old revision may name a notebook
        deleted since (not exported), which maps by the same rule.
        """
        assert self.notebooks is not None
        if notebook is None:
            return None
        if notebook in self.notebooks:
            return self.notebooks[notebook]
        if required:
            raise RestoreError(f"notebook {notebook} is not in the export", number)
        return self._choose(notebook, self._probe("projects", [notebook]))

    def _probe(self, table: str, originals: list[UUID]) -> _Taken:
        """Which of ``originals`` (and their mapped IDs) exist, here and elsewhere."""
        candidates = originals + [mapped_id(self.account_id, o) for o in originals]
        if not self.keep_ids:  # this account's rows only
            here = (self.account_id, candidates)
            rows = self._conn.execute(PROBE_HERE[table], here).fetchall()
        else:
            fan_out(self._conn)
            set_locally(self._conn, {"grove.id_probe": "on"})
            try:
                rows = self._conn.execute(PROBE_ANYWHERE[table], (candidates,)).fetchall()
            finally:
                # Everything after sees this account only again.
                set_locally(self._conn, {"grove.id_probe": "off"})
        taken = _Taken()
        for row in rows:
            (taken.here if row["account_id"] == self.account_id else taken.elsewhere).add(row["id"])
        return taken

    def _choose(self, original: UUID, taken: _Taken) -> UUID:
        mapped = mapped_id(self.account_id, original)
        if not self.keep_ids:
            return mapped
        if original in taken.here:
            return original
        if mapped in taken.here or original in taken.elsewhere:
            return mapped
        return original


def _id(text: str) -> str:
    """An ID checked as a UUID, in the form the maps above are keyed by."""
    return str(UUID(text))


def _note_references(turns: list[dict[str, Any]]) -> list[UUID]:
    """Every note a conversation's turns name (selected, cited, given as evidence)."""
    found: dict[UUID, None] = {}
    for turn in turns:
        for note in (turn["context"] or {}).get("notes", []):
            found[UUID(note)] = None
        for citation in (turn["answer"] or {}).get("citations", []):
            found[UUID(citation["noteId"])] = None
        for source in turn["sources"]:
            found[UUID(source["noteId"])] = None
    return list(found)


@dataclass
class _Taken:
    here: set[UUID] = field(default_factory=set)
    elsewhere: set[UUID] = field(default_factory=set)


def _note_values(state: Memory | Revision) -> dict[str, Any]:
    return {
        "content": state.content,
        "kind": state.kind,
        "task": state.taskId,
        "capture": state.capture,
        "agent": state.provenance.sourceAgent,
        "ref": state.provenance.sourceRef,
        "retention": state.retentionDays,
        "expires": state.expiresAt,
        "created": state.createdAt,
    }


def _tree_order(notebooks: list[tuple[int, Notebook]]) -> list[tuple[int, Notebook]]:
    """Parents before children (a parent missing from the export counts as a root)."""
    known = {notebook.id for _, notebook in notebooks}
    placed: set[UUID] = set()
    ordered: list[tuple[int, Notebook]] = []
    remaining = notebooks
    while remaining:
        ready = [
            item
            for item in remaining
            if item[1].parentId is None
            or item[1].parentId in placed
            or item[1].parentId not in known
        ]
        if not ready:
            raise RestoreError("the notebooks' parents form a cycle", remaining[0][0])
        ordered += ready
        placed |= {notebook.id for _, notebook in ready}
        remaining = [item for item in remaining if item[1].id not in placed]
    return ordered


def _execute(conn: Conn, number: int, statement: LiteralString, values: dict[str, Any]) -> None:
    """Run one write; a refusal of the database (a quota, a duplicate name or handoff)
    becomes a ``RestoreError`` naming the line."""
    with _refusals(number):
        conn.execute(statement, values)


@contextmanager
def _refusals(number: int) -> Iterator[None]:
    """A refusal of the database inside (a quota, a duplicate) as a ``RestoreError``
    naming the line."""
    try:
        yield
    except psycopg.errors.UniqueViolation as ex:
        raise RestoreError(_unique_message(ex), number) from ex
    except psycopg.Error as ex:
        if ex.sqlstate == QUOTA_SQLSTATE:
            raise RestoreError(
                ex.diag.message_primary or "over the account's quota", number
            ) from ex
        if isinstance(ex, psycopg.DataError | psycopg.IntegrityError):
            # A value the checks let through but the schema refuses: still this line's
            # error (a 400 naming it), never the whole request's.
            raise RestoreError("a value of this line is outside what Grove stores", number) from ex
        raise


def _unique_message(ex: psycopg.errors.UniqueViolation) -> str:
    constraint = ex.diag.constraint_name or ""
    if constraint == "projects_sibling_name":
        return "the account already has a notebook of that name in the same place"
    if constraint == "memories_handoff_task":
        return "the account already has a live handoff with this taskId in that scope"
    return "the account already holds this item"
