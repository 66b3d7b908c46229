"""Each line of an export checked on its own, before anything of it is written.

No database: a line is parsed and checked with the API's own request models, so a limit
breaks with the API's message, and what the API never takes from a caller (versions,
times: ``grove_contracts.imports``) is bounded too; a line nested too deeply for the JSON
reader is refused like any other bad line. ``read_ahead`` runs the checks in a thread,
a little ahead of the restorer (``grove_memory.portability.restore``), which writes what they pass.
"""

from __future__ import annotations

import base64
import binascii
import json
import queue as queues
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from pydantic import ValidationError

from grove_contracts.conversations import (
    MAX_TURNS,
    ConversationDetail,
    CreateConversationRequest,
    Turn,
    TurnContext,
    TurnRequest,
)
from grove_contracts.errors import validation_details
from grove_contracts.files import FileUpdate, StoredFile, media_type_of
from grove_contracts.imports import (
    EARLIEST_IMPORTED_TIME,
    IMPORT_CLOCK_SKEW,
    MAX_IMPORTED_VERSION,
)
from grove_contracts.notebooks import CreateNotebookRequest, Notebook
from grove_contracts.notes import MAX_RETENTION_DAYS, Memory, RememberRequest, Revision
from grove_memory.errors import ServiceError
from grove_memory.files.blobs import CHUNK_BYTES
from grove_memory.portability.export import FORMAT_VERSION


class RestoreError(ServiceError):
    """The export cannot be restored from this line on; the lines before it are."""

    code = "import_refused"
    status = 400

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(f"line {line}: {message}" if line is not None else message)
        self.line = line
        where = "body" if line is None else f"line {line}"
        self.details = [{"field": where, "message": self.message}]


@dataclass
class CheckedLine:
    """A line read and checked on its own (no database): its ``type`` (None if it is not
    a JSON object) and what it holds, or the ``error`` that stops the restore there."""

    number: int
    kind: object
    item: Notebook | CheckedNote | CheckedConversation | CheckedFile | CheckedChunk | None = None
    error: RestoreError | None = None


def check_line(number: int, raw: bytes) -> CheckedLine:
    """Line ``number`` parsed and checked; a bad line carries its error, raised by the
    restorer when it reaches it (the lines before it are restored first)."""
    try:
        data = _parse(number, raw)
    except RestoreError as ex:
        return CheckedLine(number, None, error=ex)
    kind = data.get("type")
    try:
        if kind == "notebook":
            return CheckedLine(number, kind, _notebook(number, data))
        if kind == "memory":
            return CheckedLine(number, kind, CheckedNote(number, *_memory(number, data)))
        if kind == "conversation":
            return CheckedLine(number, kind, _conversation(number, data))
        if kind == "file":
            return CheckedLine(number, kind, _file(number, data))
        if kind == "file_chunk":
            return CheckedLine(number, kind, _chunk(number, data))
    except RestoreError as ex:
        return CheckedLine(number, kind, error=ex)
    except RecursionError:  # a value nested past what the models' checks can follow
        return CheckedLine(number, kind, error=RestoreError(NESTED_TOO_DEEPLY, number))
    return CheckedLine(number, kind)


@contextmanager
def read_ahead(
    numbered: Iterator[tuple[int, bytes]], ahead: int
) -> Iterator[Iterator[CheckedLine]]:
    """The lines checked (JSON, the API's models) in a thread, up to ``ahead`` ahead of
    the caller, in order; reading stops when the caller leaves."""
    ready: queues.Queue[CheckedLine | BaseException | None] = queues.Queue(ahead)
    stop = threading.Event()

    def put(item: CheckedLine | BaseException | None) -> bool:
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.1)
            except queues.Full:
                continue
            return True
        return False

    def read() -> None:
        try:
            for number, raw in numbered:
                if raw.strip() and not put(check_line(number, raw)):
                    return
        except BaseException as ex:  # handed to the caller, raised there
            put(ex)
            return
        put(None)

    def lines() -> Iterator[CheckedLine]:
        while (item := ready.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item

    reader = threading.Thread(target=read, name="grove-import-read", daemon=True)
    reader.start()
    try:
        yield lines()
    finally:
        stop.set()
        reader.join(timeout=1.0)  # a read blocked on a pipe must not hold up an error


def check_header(first: tuple[int, bytes]) -> None:
    """Refuse anything but a Grove export of the format version this grove reads."""
    number, raw = first
    try:
        header = json.loads(raw)
    except (ValueError, RecursionError):
        header = None
    if not isinstance(header, dict) or header.get("type") != "export":
        raise RestoreError("not a Grove export: the first line must be its header", number)
    if header.get("version") != FORMAT_VERSION:
        raise RestoreError(
            f"export format version {header.get('version')!r} is not supported"
            f" (this grove reads version {FORMAT_VERSION})",
            number,
        )


@dataclass
class CheckedNote:
    """A checked memory line waiting for its group."""

    number: int
    memory: Memory
    revisions: list[Revision]


@dataclass
class CheckedFile:
    """A checked file line and the chunks read of it so far."""

    number: int
    file: StoredFile
    chunks: int
    data: list[bytes] = field(default_factory=list)
    size: int = 0


@dataclass
class CheckedChunk:
    """A checked file chunk line: its file, its place and its bytes."""

    number: int
    file_id: UUID
    index: int
    data: bytes


def _file(number: int, data: dict[str, Any]) -> CheckedFile:
    try:
        file = StoredFile.model_validate(data.get("file"))
        FileUpdate(name=file.name, projectId=file.projectId)  # the API's rules for a name
    except ValidationError as ex:
        raise _invalid(number, "file", ex) from None
    _check_times(number, "file", createdAt=file.createdAt, updatedAt=file.updatedAt)
    chunks = data.get("chunks")
    if not isinstance(chunks, int) or isinstance(chunks, bool) or chunks < 0:
        raise RestoreError("a file line's chunks must be a count", number)
    if media_type_of(file.mediaType) is None or (chunks == 0) != (file.sizeBytes == 0):
        raise RestoreError(f"file {file.id}: not a file Grove takes", number)
    return CheckedFile(number, file, chunks)


def _chunk(number: int, data: dict[str, Any]) -> CheckedChunk:
    try:
        file_id = UUID(str(data.get("fileId")))
        index = data.get("index")
        raw = base64.b64decode(str(data.get("data")), validate=True)
    except (ValueError, binascii.Error):
        raise RestoreError("a file chunk needs fileId, index and base64 data", number) from None
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise RestoreError("a file chunk's index must be a count", number)
    if not 1 <= len(raw) <= CHUNK_BYTES:
        raise RestoreError(f"a file chunk holds 1 to {CHUNK_BYTES} bytes", number)
    return CheckedChunk(number, file_id, index, raw)


@dataclass
class CheckedConversation:
    """A checked conversation line (its JSON, checked with the API's models)."""

    number: int
    data: dict[str, Any]


def _conversation(number: int, data: dict[str, Any]) -> CheckedConversation:
    """A conversation line, checked as the API reads conversations and turns, and as it
    takes them: title, questions and selections by the API's own request models."""
    try:
        detail = ConversationDetail.model_validate(
            {**data.get("conversation", {}), "turns": data.get("turns")}
        )
        if detail.title is not None:
            CreateConversationRequest(id=detail.id, title=detail.title)
    except (ValidationError, TypeError) as ex:
        if isinstance(ex, ValidationError):
            raise _invalid(number, "conversation", ex) from ex
        raise RestoreError("conversation: not an object", number) from ex
    _check_version(number, "conversation", detail.version)
    _check_times(number, "conversation", createdAt=detail.createdAt, updatedAt=detail.updatedAt)
    if len(detail.turns) > MAX_TURNS:
        raise RestoreError(f"conversation: at most {MAX_TURNS} turns", number)
    turns = data["turns"]
    for index, turn in enumerate(detail.turns):
        turns[index]["context"] = _check_turn(number, f"turns.{index}", turn)
    return CheckedConversation(number, data)


def _check_turn(number: int, where: str, turn: Turn) -> dict[str, Any] | None:
    """A turn's bounds, its question and selection as ``TurnRequest`` takes them; the
    selection as the API stores it."""
    try:
        request = TurnRequest(
            id=turn.id,
            query=turn.query,
            format=turn.format,
            expectedVersion=1,
            context=None if turn.context is None else TurnContext.model_validate(turn.context),
        )
    except ValidationError as ex:
        raise _invalid(number, where, ex) from ex
    if not 1 <= turn.ordinal <= MAX_TURNS:
        raise RestoreError(f"{where}: ordinal: must be 1 to {MAX_TURNS}", number)
    if not 0 <= turn.attempts <= MAX_IMPORTED_VERSION:
        raise RestoreError(f"{where}: attempts: must be 0 to {MAX_IMPORTED_VERSION}", number)
    _check_times(number, where, createdAt=turn.createdAt, completedAt=turn.completedAt)
    return None if request.context is None else request.context.model_dump(mode="json")


#: A line whose JSON nests deeper than Python's reader follows (no export does).
NESTED_TOO_DEEPLY = "nested too deeply: not a line of a Grove export"


def _parse(number: int, raw: bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except ValueError as ex:
        raise RestoreError(f"not valid JSON ({ex})", number) from ex
    except RecursionError:
        raise RestoreError(NESTED_TOO_DEEPLY, number) from None
    if not isinstance(data, dict):
        raise RestoreError("not a JSON object", number)
    return data


def _invalid(number: int, where: str, ex: ValidationError) -> RestoreError:
    details = "; ".join(f"{d.field}: {d.message}" for d in validation_details(ex))
    return RestoreError(f"{where}: {details}", number)


def _notebook(number: int, data: dict[str, Any]) -> Notebook:
    try:
        notebook = Notebook.model_validate(data.get("notebook"))
        CreateNotebookRequest(name=notebook.name, parentId=notebook.parentId)
    except ValidationError as ex:
        raise _invalid(number, "notebook", ex) from ex
    _check_times(number, "notebook", createdAt=notebook.createdAt, updatedAt=notebook.updatedAt)
    return notebook


def _memory(number: int, data: dict[str, Any]) -> tuple[Memory, list[Revision]]:
    """A memory line's note and revisions, checked as the API checks a save."""
    try:
        memory = Memory.model_validate(data.get("memory"))
        _check_save(memory)
    except ValidationError as ex:
        raise _invalid(number, "memory", ex) from ex
    _check_state(number, "memory", memory)
    _check_times(number, "memory", updatedAt=memory.updatedAt)
    raw = data.get("revisions")
    if not isinstance(raw, list) or not raw:
        raise RestoreError("revisions: a note needs its revisions", number)
    revisions = []
    for index, item in enumerate(raw):
        try:
            revision = Revision.model_validate(item)
            _check_save(revision)
        except ValidationError as ex:
            raise _invalid(number, f"revisions.{index}", ex) from ex
        if revision.memoryId != memory.id:
            raise RestoreError(f"revisions.{index}: memoryId is not the note's id", number)
        _check_state(number, f"revisions.{index}", revision)
        revisions.append(revision)
    versions = [r.version for r in revisions]
    if versions != sorted(set(versions)) or versions[-1] != memory.version:
        raise RestoreError(
            "revisions: versions must ascend, without repeats, to the note's version", number
        )
    return memory, revisions


def _check_save(state: Memory | Revision) -> None:
    """The API's limits on a saved state (content, kind, task, provenance, retention)."""
    RememberRequest(
        content=state.content,
        # Refused for a passage, like any kind a caller cannot save: passages come from
        # files, which the export does not carry.
        kind=state.kind,  # type: ignore[arg-type]
        projectId=state.projectId,
        taskId=state.taskId,
        capture=state.capture,
        provenance=state.provenance,
        retentionDays=state.retentionDays,
    )


def _check_state(number: int, where: str, state: Memory | Revision) -> None:
    """What a save never takes from its caller but a restore keeps: the version, within
    ``MAX_IMPORTED_VERSION``, and the times."""
    _check_version(number, where, state.version)
    _check_times(number, where, createdAt=state.createdAt)
    _check_times(number, where, EXPIRY_AHEAD, expiresAt=state.expiresAt)


#: How far ahead an expiry may be: the longest retention from a change made now.
EXPIRY_AHEAD = timedelta(days=MAX_RETENTION_DAYS)


def _check_version(number: int, where: str, version: int) -> None:
    if not 1 <= version <= MAX_IMPORTED_VERSION:
        raise RestoreError(f"{where}: version: must be 1 to {MAX_IMPORTED_VERSION}", number)


def _check_times(
    number: int, where: str, ahead: timedelta = IMPORT_CLOCK_SKEW, **times: datetime | None
) -> None:
    """Each of ``times`` (unset ones aside) from ``EARLIEST_IMPORTED_TIME`` to ``ahead``
    of now; a time without a zone is UTC, as the database takes it."""
    latest = datetime.now(UTC) + ahead
    for name, value in times.items():
        if value is None:
            continue
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        if not EARLIEST_IMPORTED_TIME <= value <= latest:
            limit = "now" if ahead <= IMPORT_CLOCK_SKEW else f"{ahead.days} days from now"
            raise RestoreError(
                f"{where}: {name}: must be from {EARLIEST_IMPORTED_TIME:%Y-%m-%d} to {limit}",
                number,
            )
