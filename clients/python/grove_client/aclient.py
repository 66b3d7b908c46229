"""``AsyncGrove``: the asyncio client, with the methods of ``Grove`` to await.

Requests are built and answers read by ``grove_client.calls``, and resends decided by
``RetryPolicy``, exactly as for ``Grove``; only the sending (``httpx.AsyncClient``, and
``asyncio.sleep`` between attempts) is this module's. Listings are async iterators.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, TypeVar, Unpack

import httpx
from pydantic import BaseModel

from grove_client import calls, models
from grove_client.calls import Call, Id

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


class AsyncGrove:
    """``Grove`` for asyncio: the same constructor, methods and errors, awaited.

    Each method is documented on ``Grove``; those that list (``list_notes``,
    ``notebooks``, ``conversations``, ``search_conversations``, ``shares``,
    ``list_records``, ``list_files``, ``export``, ``download_file``) are async iterators
    here. Use it as an async context manager, or await ``aclose()``.
    """

    def __init__(self, url: str, api_key: str, **options: Unpack[calls.AsyncOptions]) -> None:
        self.retries = calls.retry_policy(options)
        config = calls.connection(url, api_key, options)
        self._http = httpx.AsyncClient(transport=options.get("transport"), **config)

    async def __aenter__(self) -> AsyncGrove:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the client's connections."""
        await self._http.aclose()

    # Notes

    async def remember(
        self, content: str, kind: str = "fact", **options: Unpack[calls.NoteOptions]
    ) -> models.SavedMemory:
        return await self._run(calls.remember(content, kind, options))

    async def save(
        self, note: models.NewNote, *, operation_id: Id | None = None
    ) -> models.SavedMemory:
        return await self._run(calls.save(note, operation_id))

    async def get(self, memory_id: Id) -> models.Memory:
        return await self._run(calls.get(memory_id))

    async def update(self, memory_id: Id, **correction: Unpack[calls.Correction]) -> models.Memory:
        return await self._run(calls.update(memory_id, correction))

    async def list_notes_page(
        self, *, cursor: str | None = None, **filters: Unpack[calls.ListFilters]
    ) -> models.MemoryPage:
        return await self._run(calls.list_notes(filters, cursor))

    def list_notes(
        self, *, cursor: str | None = None, **filters: Unpack[calls.ListFilters]
    ) -> AsyncIterator[models.Memory]:
        return self._pages(lambda after: calls.list_notes(filters, after), cursor)

    async def revisions(
        self, memory_id: Id, *, after_version: int = 0, limit: int = 100
    ) -> models.RevisionPage:
        return await self._run(calls.revisions(memory_id, after_version, limit))

    def activity(
        self, *, connection_id: Id | None = None, limit: int | None = None
    ) -> AsyncIterator[models.Revision]:
        return self._pages(lambda after: calls.activity(connection_id, limit, after))

    async def duplicates(self) -> models.DuplicateList:
        return await self._run(calls.duplicates())

    async def forget(
        self, ids: Iterable[Id], *, expected_versions: Mapping[str, int] | None = None
    ) -> models.ForgetResponse:
        return await self._run(calls.forget(ids, expected_versions))

    async def restore(
        self,
        memory_id: Id,
        *,
        version: int | None = None,
        durable: bool = False,
        operation_id: Id | None = None,
    ) -> models.Memory:
        return await self._run(calls.restore(memory_id, version, durable, operation_id))

    async def save_batch(self, notes: Sequence[models.NewNote]) -> models.BatchResult:
        return await self._run(calls.save_batch(notes))

    async def export(self) -> AsyncIterator[dict[str, Any]]:
        async for line in self._streamed(calls.EXPORT, httpx.Response.aiter_lines):
            item = calls.export_line(line)
            if item is not None:
                yield item

    # Finding notes and answers

    async def search(self, query: str, **options: Unpack[calls.SearchOptions]) -> models.SearchPage:
        return await self._run(calls.search(query, options))

    def search_all(
        self, query: str, **options: Unpack[calls.SearchOptions]
    ) -> AsyncIterator[models.SearchItem]:
        cursor = options.get("cursor")
        return self._pages(lambda after: calls.search(query, options, after), cursor)

    async def recall(
        self, query: str | None = None, **options: Unpack[calls.RecallOptions]
    ) -> models.RecallResult:
        return await self._run(calls.recall(query, options))

    async def ask(self, question: str, **options: Unpack[calls.AskOptions]) -> models.AskResult:
        return await self._run(calls.ask(question, options))

    # Notebooks

    async def create_notebook(self, name: str, *, parent_id: Id | None = None) -> models.Notebook:
        return await self._run(calls.create_notebook(name, parent_id))

    def notebooks(
        self, *, parent_id: Id | None = None, root: bool = False
    ) -> AsyncIterator[models.Notebook]:
        return self._pages(lambda after: calls.notebooks(parent_id, root, after))

    async def archived_notebooks(self) -> list[models.Notebook]:
        listing: models.ArchivedNotebookList = await self._run(calls.archived_notebooks())
        return listing.items

    async def notebook_brief(self, notebook_id: Id) -> models.NotebookBrief:
        return await self._run(calls.brief(notebook_id))

    async def suggestions_page(
        self, *, cursor: str | None = None, limit: int | None = None
    ) -> models.SuggestionPage:
        return await self._run(calls.suggestions(limit, cursor))

    def list_suggestions(self, *, limit: int | None = None) -> AsyncIterator[models.Suggestion]:
        return self._pages(lambda after: calls.suggestions(limit, after))

    async def notebook_subtree(self, notebook_id: Id) -> models.SubtreePreview:
        return await self._run(calls.subtree(notebook_id))

    async def apply_to_notebook(
        self, notebook_id: Id, action: calls.SubtreeAction, fingerprint: str
    ) -> models.SubtreeResult:
        return await self._run(calls.apply_subtree(notebook_id, action, fingerprint))

    # Conversations (owner session)

    async def create_conversation(
        self, conversation_id: Id | None = None, **scope: Unpack[calls.ConversationScope]
    ) -> models.Conversation:
        return await self._run(calls.create_conversation(conversation_id, scope))

    def conversations(self) -> AsyncIterator[models.Conversation]:
        return self._pages(calls.conversations)

    async def conversation(self, conversation_id: Id) -> models.ConversationDetail:
        return await self._run(calls.conversation(conversation_id))

    async def add_turn(
        self, conversation_id: Id, question: str, **turn: Unpack[calls.TurnOptions]
    ) -> models.TurnReply:
        return await self._run(calls.add_turn(conversation_id, question, turn))

    def search_conversations(
        self, query: str | None = None
    ) -> AsyncIterator[models.ConversationHit]:
        return self._pages(lambda after: calls.search_conversations(query, after))

    async def delete_conversation(self, conversation_id: Id) -> models.DeletedConversation:
        return await self._run(calls.delete_conversation(conversation_id))

    async def apply_proposal(self, conversation_id: Id, proposal_id: Id) -> models.ProposalOutcome:
        return await self._run(calls.proposal(conversation_id, proposal_id, "apply"))

    async def undo_proposal(self, conversation_id: Id, proposal_id: Id) -> models.ProposalOutcome:
        return await self._run(calls.proposal(conversation_id, proposal_id, "undo"))

    # Import (owner session)

    async def import_export(
        self, export: calls.AsyncBody, *, import_id: Id | None = None
    ) -> models.ImportStatus:
        return await self._run(calls.import_export(export, import_id))

    async def import_status(self, import_id: Id) -> models.ImportStatus:
        return await self._run(calls.import_status(import_id))

    # Files

    async def upload_file(
        self,
        content: calls.AsyncBody,
        name: str,
        *,
        project_id: Id | None = None,
        **options: Unpack[calls.FileOptions],
    ) -> models.StoredFile:
        return await self._run(calls.upload_file(content, name, project_id, options))

    async def upload_file_version(
        self,
        file_id: Id,
        content: calls.AsyncBody,
        *,
        name: str | None = None,
        **options: Unpack[calls.FileOptions],
    ) -> models.StoredFile:
        return await self._run(calls.upload_file_version(file_id, content, name, options))

    async def update_file(
        self,
        file_id: Id,
        *,
        operation_id: Id | None = None,
        **changes: Unpack[calls.FileChanges],
    ) -> models.StoredFile:
        return await self._run(calls.update_file(file_id, changes, operation_id))

    async def list_files_page(
        self, *, cursor: str | None = None, limit: int | None = None
    ) -> models.FilePage:
        return await self._run(calls.files(limit, cursor))

    def list_files(self, *, limit: int | None = None) -> AsyncIterator[models.StoredFile]:
        return self._pages(lambda after: calls.files(limit, after))

    async def get_file(self, file_id: Id) -> models.StoredFile:
        return await self._run(calls.get_file(file_id))

    async def download_file(self, file_id: Id) -> AsyncIterator[bytes]:
        request = calls.file_original(file_id)
        async for chunk in self._streamed(request, httpx.Response.aiter_bytes):
            yield chunk

    async def delete_file(self, file_id: Id) -> models.DeletedFile:
        return await self._run(calls.delete_file(file_id))

    async def storage(self) -> models.Storage:
        return await self._run(calls.storage())

    # models.Share links (owner session)

    async def create_share(
        self,
        target: Literal["note", "notebook"],
        target_id: Id,
        **options: Unpack[calls.ShareOptions],
    ) -> models.CreatedShare:
        return await self._run(calls.create_share(target, target_id, options))

    def shares(self) -> AsyncIterator[models.Share]:
        return self._pages(calls.shares)

    async def revoke_share(self, share_id: Id) -> models.Share:
        return await self._run(calls.revoke_share(share_id))

    # Connections and API keys (owner session)

    async def connections(self) -> list[models.Connection]:
        return (await self._run(calls.connections())).items

    async def update_connection(
        self, connection_id: Id, grants: models.Grants, *, expected_state: str | None = None
    ) -> models.Connection:
        return await self._run(calls.update_connection(connection_id, grants, expected_state))

    async def revoke_connection(self, connection_id: Id) -> models.Connection:
        return await self._run(calls.revoke_connection(connection_id))

    async def connection_request(self, request_id: Id) -> models.ConnectionRequest:
        return await self._run(calls.connection_request(request_id))

    async def approve_connection_request(
        self, request_id: Id, grants: models.Grants
    ) -> models.Connection:
        return await self._run(calls.approve_request(request_id, grants))

    async def deny_connection_request(self, request_id: Id) -> models.Connection:
        return await self._run(calls.deny_request(request_id))

    async def create_api_key(
        self, name: str, *, grants: models.Grants | None = None
    ) -> models.CreatedKey:
        return await self._run(calls.create_key(name, grants))

    async def api_keys(self) -> list[models.ApiKey]:
        return (await self._run(calls.keys())).items

    async def revoke_api_key(self, key_id: Id) -> models.Connection:
        return await self._run(calls.revoke_key(key_id))

    async def delete_account(self, confirmation: str) -> models.DeletedAccount:
        return await self._run(calls.delete_account(confirmation))

    # Orgs, projects and project keys (owner session)

    async def orgs(self) -> list[models.Org]:
        return (await self._run(calls.orgs())).items

    async def create_org(self, name: str) -> models.Org:
        return await self._run(calls.create_org(name))

    async def org(self, org_id: Id) -> models.Org:
        return await self._run(calls.org(org_id))

    async def set_org_entitlements(self, org_id: Id, *, project_memory: bool) -> models.Org:
        return await self._run(calls.update_org(org_id, project_memory))

    async def projects(self, org_id: Id) -> list[models.Project]:
        return (await self._run(calls.projects(org_id))).items

    async def create_project(self, org_id: Id, name: str) -> models.Project:
        return await self._run(calls.create_project(org_id, name))

    async def project_keys(self, org_id: Id, project_id: Id) -> list[models.ProjectKey]:
        return (await self._run(calls.project_keys(org_id, project_id))).items

    async def create_project_key(
        self,
        org_id: Id,
        project_id: Id,
        name: str,
        scopes: Sequence[calls.ProjectScope] = ("project_memory:read",),
    ) -> models.CreatedProjectKey:
        return await self._run(calls.create_project_key(org_id, project_id, name, scopes))

    async def revoke_project_key(
        self, org_id: Id, project_id: Id, key_id: Id
    ) -> models.RevokedProjectKey:
        return await self._run(calls.revoke_project_key(org_id, project_id, key_id))

    async def members(self, org_id: Id, project_id: Id) -> list[models.Member]:
        return (await self._run(calls.members(org_id, project_id))).items

    async def add_member(
        self, org_id: Id, project_id: Id, account_id: Id, role: calls.Role
    ) -> models.Member:
        return await self._run(calls.add_member(org_id, project_id, account_id, role))

    async def set_member_role(
        self, org_id: Id, project_id: Id, account_id: Id, role: calls.Role
    ) -> models.Member:
        return await self._run(calls.update_member(org_id, project_id, account_id, role))

    async def remove_member(
        self, org_id: Id, project_id: Id, account_id: Id
    ) -> models.RemovedMember:
        return await self._run(calls.remove_member(org_id, project_id, account_id))

    # A project's shared pool

    async def pool_status(self, org_id: Id, project_id: Id) -> models.PoolStatus:
        return await self._run(calls.pool_status(org_id, project_id))

    async def write_record(
        self, org_id: Id, project_id: Id, record: models.NewRecord
    ) -> models.RecordReply:
        return await self._run(calls.write_record(org_id, project_id, record))

    async def get_record(self, org_id: Id, project_id: Id, key: str) -> models.RecordReply:
        return await self._run(calls.get_record(org_id, project_id, key))

    async def list_records_page(
        self,
        org_id: Id,
        project_id: Id,
        *,
        kind: str | None = None,
        limit: int | None = None,
        after: str | None = None,
    ) -> models.RecordPage:
        return await self._run(calls.records(org_id, project_id, kind, limit, after))

    def list_records(
        self, org_id: Id, project_id: Id, *, kind: str | None = None, limit: int | None = None
    ) -> AsyncIterator[models.Record]:
        return self._pages(lambda after: calls.records(org_id, project_id, kind, limit, after))

    async def retrieve_records(
        self,
        org_id: Id,
        project_id: Id,
        query: str,
        *,
        limit: int | None = None,
        embedding: models.RecordEmbedding | None = None,
    ) -> models.RetrieveResult:
        return await self._run(calls.retrieve_records(org_id, project_id, query, limit, embedding))

    async def delete_record(self, org_id: Id, project_id: Id, key: str) -> models.DeletedRecord:
        return await self._run(calls.delete_record(org_id, project_id, key))

    # The agent tool registry

    async def tools(self) -> list[models.ToolDescription]:
        return (await self._run(calls.tools())).items

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        return (await self._run(calls.call_tool(name, arguments or {}))).model_dump()

    # The requests

    async def _pages(
        self, page: Callable[[str | None], Call[models.Page[T]]], cursor: str | None = None
    ) -> AsyncIterator[T]:
        while True:
            current = await self._run(page(cursor))
            for item in current.items:
                yield item
            cursor = current.cursor()
            if cursor is None:
                return

    async def _streamed(
        self, request: calls.Request, read: Callable[[httpx.Response], AsyncIterator[T]]
    ) -> AsyncIterator[T]:
        response = await self._send(request, stream=True)
        try:
            if not response.is_success:
                await response.aread()
                calls.data(response)
            async for item in read(response):
                yield item
        finally:
            await response.aclose()

    async def _run(self, call: Call[M]) -> M:
        return call.parse(await self._send(call.request))

    async def _send(self, request: calls.Request, *, stream: bool = False) -> httpx.Response:
        built = request.build(self._http)
        attempt = 0
        while True:
            try:
                response = await self._http.send(built, stream=stream)
            except httpx.TransportError as ex:
                again = request.again(self._http, built)
                resend = request.endpoint.resend and again is not None
                wait = self.retries.after_failure(ex, attempt, resend)
            else:
                later = self.retries.after_status(response, attempt)
                again = None if later is None else request.again(self._http, built)
                if later is None or again is None:
                    return response
                await response.aclose()
                wait = later
            await asyncio.sleep(wait)
            attempt += 1
            built = again if again is not None else built
