"""``Grove``: the synchronous client of the REST API.

Each method is one route of ``grove_client.endpoints`` and answers the client's own
model of its ``data``; an error answer raises the ``grove_client.errors`` class of its
status. Requests that the API refuses for now (429, 503) or that lose their connection
are resent within ``RetryPolicy``; a mutation carries one idempotency key, made once per
call, across all of its attempts, so a resent save is replayed, never saved twice.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Literal, TypeVar
from uuid import UUID, uuid4

import httpx
from pydantic import BaseModel

from grove_client import endpoints
from grove_client.endpoints import Endpoint
from grove_client.errors import GroveError, Unavailable, error_for
from grove_client.models import (
    BatchResult,
    ForgetResponse,
    Memory,
    MemoryPage,
    NewNote,
    Notebook,
    NotebookList,
    Provenance,
    RecallResult,
    RevisionPage,
    SearchPage,
)
from grove_client.retries import RetryPolicy, retry_after

VERSION = "0.1.0"
USER_AGENT = f"grove-client/{VERSION}"
DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_RETRIES = 3

M = TypeVar("M", bound=BaseModel)
Id = UUID | str


class Unset(enum.Enum):
    """A field left out of a correction (``None`` would set it to null)."""

    UNSET = enum.auto()


UNSET = Unset.UNSET


class Grove:
    """A client of one Grove API with one credential (an API key or owner session).

    ``timeout`` bounds each attempt (seconds); ``max_retries`` bounds the resends of one
    call. ``transport`` replaces the network (an ``httpx.MockTransport`` in tests). Use
    it as a context manager, or call ``close()``, to release its connections.
    """

    def __init__(
        self,
        url: str,
        api_key: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        backoff: float = 0.5,
        max_retry_wait: float = 60.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.retries = RetryPolicy(max_retries, backoff, max(backoff, 8.0), max_retry_wait)
        self._http = httpx.Client(
            base_url=url.rstrip("/"),
            timeout=timeout,
            transport=transport,
            headers={"Authorization": f"Bearer {api_key}", "User-Agent": USER_AGENT},
        )

    def __enter__(self) -> Grove:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the client's connections."""
        self._http.close()

    # Notes

    def remember(
        self,
        content: str,
        kind: str = "fact",
        *,
        project_id: Id | None = None,
        task_id: str | None = None,
        source_agent: str | None = None,
        source_ref: str | None = None,
        retention_days: int | None = None,
        operation_id: Id | None = None,
    ) -> Memory:
        """Save a note (a handoff for a known ``task_id`` corrects it instead).

        ``operation_id`` names the save for idempotency; one is made if not given.
        """
        fields: dict[str, Any] = {"content": content, "kind": kind}
        optional = {"project_id": project_id, "task_id": task_id, "retention_days": retention_days}
        fields.update({name: value for name, value in optional.items() if value is not None})
        if source_agent is not None or source_ref is not None:
            fields["provenance"] = Provenance(source_agent=source_agent, source_ref=source_ref)
        return self.save(NewNote(**fields), operation_id=operation_id)

    def save(self, note: NewNote, *, operation_id: Id | None = None) -> Memory:
        """Save a ``NewNote`` as ``POST /v1/memories`` (``remember`` builds one)."""
        key = operation_id or note.operation_id
        body = note.body()
        body.pop("operationId", None)  # sent as the Idempotency-Key header instead
        return self._call(endpoints.REMEMBER, Memory, json=body, key=key)

    def get(self, memory_id: Id) -> Memory:
        """One note."""
        return self._call(endpoints.GET, Memory, path={"memory_id": memory_id})

    def update(
        self,
        memory_id: Id,
        *,
        content: str | None = None,
        kind: str | None = None,
        project_id: Id | Unset | None = UNSET,
        task_id: str | Unset | None = UNSET,
        retention_days: int | Unset | None = UNSET,
        expected_version: int | None = None,
    ) -> Memory:
        """Correct part of a note; fields left out keep their values.

        ``project_id=None`` moves it to personal notes; ``retention_days=None`` keeps it
        until removed. With ``expected_version``, a stale version raises ``Conflict``.
        """
        given = {
            "content": content,
            "kind": kind,
            "expectedVersion": expected_version,
        }
        body: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
        nullable = {"projectId": project_id, "taskId": task_id, "retentionDays": retention_days}
        for name, value in nullable.items():
            if value is not UNSET:
                body[name] = str(value) if isinstance(value, UUID) else value
        return self._call(endpoints.UPDATE, Memory, path={"memory_id": memory_id}, json=body)

    def list_notes_page(
        self,
        *,
        kind: str | None = None,
        project_id: Id | Literal["personal"] | None = None,
        source_agent: str | None = None,
        updated_after: datetime | None = None,
        lifetime: Literal["permanent", "ephemeral"] | None = None,
        archived: bool | None = None,
        sort: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> MemoryPage:
        """One page of notes (``next_cursor`` asks for the next one)."""
        params = _query(
            kind=kind,
            projectId=project_id,
            sourceAgent=source_agent,
            updatedAfter=updated_after.isoformat() if updated_after else None,
            lifetime=lifetime,
            archived=archived,
            sort=sort,
            limit=limit,
            cursor=cursor,
        )
        return self._call(endpoints.LIST, MemoryPage, params=params)

    def list_notes(self, **filters: Any) -> Iterator[Memory]:
        """Every note matching the filters of ``list_notes_page``, a page at a time."""
        cursor: str | None = filters.pop("cursor", None)
        while True:
            page = self.list_notes_page(**filters, cursor=cursor)
            yield from page.items
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def revisions(self, memory_id: Id, *, after_version: int = 0, limit: int = 100) -> RevisionPage:
        """A note's revisions, oldest first, after ``after_version``."""
        params = _query(afterVersion=after_version, limit=limit)
        path = {"memory_id": memory_id}
        return self._call(endpoints.REVISIONS, RevisionPage, path=path, params=params)

    def forget(
        self, ids: Iterable[Id], *, expected_versions: Mapping[str, int] | None = None
    ) -> ForgetResponse:
        """Forget (soft-delete) up to 100 notes; each answers ``deleted``, ``not_found``
        or ``version_conflict`` (with ``expected_versions``, by note ID)."""
        targets = [str(i) for i in ids]
        if expected_versions is None:
            body: dict[str, Any] = {"ids": targets}
        else:
            items = [{"id": i, "expectedVersion": expected_versions.get(i)} for i in targets]
            body = {"items": [{k: v for k, v in i.items() if v is not None} for i in items]}
        return self._call(endpoints.FORGET, ForgetResponse, json=body)

    def restore(self, memory_id: Id) -> Memory:
        """Bring back a note that expired, within its restoration window (owner session)."""
        return self._call(endpoints.RESTORE, Memory, path={"memory_id": memory_id}, json={})

    def save_batch(self, notes: Sequence[NewNote]) -> BatchResult:
        """Save 1 to 100 notes in one request, each on its own (not atomically).

        Every note without an ``operation_id`` gets one, kept across resends, so a batch
        resent after a lost answer replays its saved items instead of duplicating them.
        """
        items = [n.body() | {"operationId": str(n.operation_id or uuid4())} for n in notes]
        return self._call(endpoints.BATCH, BatchResult, json={"items": items})

    # Finding notes

    def search(
        self,
        query: str,
        *,
        project_id: Id | None = None,
        kind: str | None = None,
        limit: int | None = None,
        sort: str | None = None,
        cursor: str | None = None,
        matches: bool | None = None,
        mode: str | None = None,
    ) -> SearchPage:
        """One page of hybrid search results (``next_cursor`` continues the query)."""
        body = _query(
            query=query,
            projectId=project_id,
            kind=kind,
            limit=limit,
            sort=sort,
            cursor=cursor,
            matches=matches,
            mode=mode,
        )
        return self._call(endpoints.SEARCH, SearchPage, json=body)

    def recall(
        self,
        query: str | None = None,
        *,
        project_id: Id | None = None,
        include_personal: bool | None = None,
        task_id: str | None = None,
        limit: int | None = None,
        max_chars: int | None = None,
    ) -> RecallResult:
        """The notes most relevant to ``query`` within a budget, and the task's handoff."""
        body = _query(
            query=query,
            projectId=project_id,
            includePersonal=include_personal,
            taskId=task_id,
            limit=limit,
            maxChars=max_chars,
        )
        return self._call(endpoints.RECALL, RecallResult, json=body)

    # Notebooks

    def create_notebook(self, name: str, *, parent_id: Id | None = None) -> Notebook:
        """Create a notebook (inside ``parent_id`` if given)."""
        body = _query(name=name, parentId=parent_id)
        return self._call(endpoints.CREATE_NOTEBOOK, Notebook, json=body)

    def notebooks(self, *, parent_id: Id | None = None, root: bool = False) -> Iterator[Notebook]:
        """Every notebook this credential may use (children of ``parent_id``, or only
        top-level ones with ``root``), a page at a time."""
        cursor: str | None = None
        while True:
            params = _query(parentId=parent_id, root=root or None, cursor=cursor)
            page = self._call(endpoints.NOTEBOOKS, NotebookList, params=params)
            yield from page.items
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    # The requests

    def _call(
        self,
        endpoint: Endpoint,
        model: type[M],
        *,
        path: Mapping[str, object] | None = None,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        key: Id | None = None,
    ) -> M:
        """Send one call (resending as ``RetryPolicy`` allows) and parse its ``data``."""
        headers = {}
        if endpoint.idempotency == "header":
            headers["Idempotency-Key"] = str(key or uuid4())
        request = self._http.build_request(
            endpoint.method,
            endpoint.url(**(path or {})),
            params=params,
            json=json,
            headers=headers,
        )
        response = self._send(request, endpoint.resend)
        return model.model_validate(_data(response))

    def _send(self, request: httpx.Request, resend: bool) -> httpx.Response:
        attempt = 0
        while True:
            try:
                response = self._http.send(request)
            except httpx.TransportError as ex:
                if not resend or attempt >= self.retries.max_retries:
                    raise Unavailable(f"no answer from Grove: {ex}", code="connection") from ex
                time.sleep(self.retries.after_connection_error(attempt))
            else:
                wait = self.retries.after_status(response, attempt)
                if wait is None:
                    return response
                response.close()
                time.sleep(wait)
            attempt += 1


def _data(response: httpx.Response) -> Any:
    """The ``data`` of a success envelope, or the error of a failure raised."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.is_success and isinstance(body, dict) and body.get("success") is True:
        return body.get("data")
    request_id = response.headers.get("X-Request-Id")
    if response.is_success:
        raise GroveError(
            "the answer is not a Grove envelope",
            code="invalid_response",
            status=response.status_code,
            request_id=request_id,
        )
    raise error_for(response.status_code, body, request_id, retry_after(response))


def _query(**values: Any) -> dict[str, Any]:
    """The given values (``None`` left out), UUIDs and booleans as the API spells them."""
    spelled: dict[str, Any] = {}
    for name, value in values.items():
        if value is None:
            continue
        spelled[name] = str(value) if isinstance(value, UUID) else value
    return spelled
