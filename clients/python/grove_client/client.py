"""``Grove``: the synchronous client of the REST API.

Each method is one route of ``grove_client.endpoints``: ``grove_client.calls`` builds
its request and reads its answer (the rules ``AsyncGrove`` shares), and this class sends
it. An error answer raises the ``grove_client.errors`` class of its status. Requests
that the API refuses for now (429, 503) or that lose their connection are resent within
``RetryPolicy``; a mutation carries one idempotency key, made once per call, across all
of its attempts, so a resent save is replayed, never saved twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal, TypeVar, Unpack

import httpx
from pydantic import BaseModel

from grove_client import calls, models
from grove_client.calls import USER_AGENT, VERSION, Call, Id

__all__ = ["USER_AGENT", "VERSION", "Grove", "Id"]

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


class Grove:
    """A client of one Grove API with one credential (an API key or owner session).

    ``timeout`` bounds each attempt (seconds); ``max_retries``, ``backoff`` and
    ``max_retry_wait`` bound the resends of one call. ``transport`` replaces the network
    (an ``httpx.MockTransport`` in tests). Use it as a context manager, or call
    ``close()``, to release its connections.
    """

    def __init__(self, url: str, api_key: str, **options: Unpack[calls.SyncOptions]) -> None:
        self.retries = calls.retry_policy(options)
        config = calls.connection(url, api_key, options)
        self._http = httpx.Client(transport=options.get("transport"), **config)

    def __enter__(self) -> Grove:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the client's connections."""
        self._http.close()

    # Notes

    def remember(
        self, content: str, kind: str = "fact", **options: Unpack[calls.NoteOptions]
    ) -> models.SavedMemory:
        """Save a note (a handoff for a known ``task_id`` corrects it instead).

        ``operation_id`` names the save for idempotency; one is made if not given.
        """
        return self._run(calls.remember(content, kind, options))

    def save(self, note: models.NewNote, *, operation_id: Id | None = None) -> models.SavedMemory:
        """Save a ``models.NewNote`` as ``POST /v1/memories`` (``remember`` builds one)."""
        return self._run(calls.save(note, operation_id))

    def get(self, memory_id: Id) -> models.Memory:
        """One note."""
        return self._run(calls.get(memory_id))

    def update(self, memory_id: Id, **correction: Unpack[calls.Correction]) -> models.Memory:
        """Correct part of a note; the fields left out keep their values (``calls.Correction``)."""
        return self._run(calls.update(memory_id, correction))

    def list_notes_page(
        self, *, cursor: str | None = None, **filters: Unpack[calls.ListFilters]
    ) -> models.MemoryPage:
        """One page of notes (``next_cursor`` asks for the next one)."""
        return self._run(calls.list_notes(filters, cursor))

    def list_notes(
        self, *, cursor: str | None = None, **filters: Unpack[calls.ListFilters]
    ) -> Iterator[models.Memory]:
        """Every note matching the filters, fetching a page when the last is used up."""
        return self._pages(lambda after: calls.list_notes(filters, after), cursor)

    def revisions(
        self, memory_id: Id, *, after_version: int = 0, limit: int = 100
    ) -> models.RevisionPage:
        """A note's revisions, oldest first, after ``after_version``."""
        return self._run(calls.revisions(memory_id, after_version, limit))

    def activity(
        self, *, connection_id: Id | None = None, limit: int | None = None
    ) -> Iterator[models.Revision]:
        """Every revision saved in what the caller may read, newest first, each with its
        ``saved_by`` (only ``connection_id``'s if given), fetching a page when the last is
        used up."""
        return self._pages(lambda after: calls.activity(connection_id, limit, after))

    def duplicates(self) -> models.DuplicateList:
        """The near-duplicate groups among the notes the caller may read (the 2,000 most
        recently updated), each with the merge a conversation would propose for it."""
        return self._run(calls.duplicates())

    def forget(
        self, ids: Iterable[Id], *, expected_versions: Mapping[str, int] | None = None
    ) -> models.ForgetResponse:
        """Forget (soft-delete) up to 100 notes; each answers ``deleted``, ``not_found``
        or ``version_conflict`` (with ``expected_versions``, by note ID)."""
        return self._run(calls.forget(ids, expected_versions))

    def restore(
        self,
        memory_id: Id,
        *,
        version: int | None = None,
        durable: bool = False,
        operation_id: Id | None = None,
    ) -> models.Memory:
        """Un-archive a note (its lifetime starts again), bring back its revision
        ``version`` as a new one, and/or make a handoff ``durable`` (a permanent fact); a
        note that expired comes back within its restoration window (owner session only)."""
        return self._run(calls.restore(memory_id, version, durable, operation_id))

    def save_batch(self, notes: Sequence[models.NewNote]) -> models.BatchResult:
        """Save 1 to 100 notes in one request, each on its own (not atomically)."""
        return self._run(calls.save_batch(notes))

    def export(self) -> Iterator[dict[str, Any]]:
        """Everything the credential may read, one NDJSON line (an object) at a time,
        read from the network as it is used; close the iterator to stop early."""
        for line in self._streamed(calls.EXPORT, httpx.Response.iter_lines):
            item = calls.export_line(line)
            if item is not None:
                yield item

    # Finding notes and answers

    def search(self, query: str, **options: Unpack[calls.SearchOptions]) -> models.SearchPage:
        """One page of hybrid search results (``next_cursor`` continues the query)."""
        return self._run(calls.search(query, options))

    def search_all(
        self, query: str, **options: Unpack[calls.SearchOptions]
    ) -> Iterator[models.SearchItem]:
        """Every result of the query, best first, fetching a page (of ``limit``) when the
        last is used up (from ``cursor``, if given)."""
        cursor = options.get("cursor")
        return self._pages(lambda after: calls.search(query, options, after), cursor)

    def recall(
        self, query: str | None = None, **options: Unpack[calls.RecallOptions]
    ) -> models.RecallResult:
        """The notes most relevant to ``query`` within a budget, and the task's handoff."""
        return self._run(calls.recall(query, options))

    def ask(self, question: str, **options: Unpack[calls.AskOptions]) -> models.AskResult:
        """An answer from the notes in scope, each sentence cited (``status`` says if)."""
        return self._run(calls.ask(question, options))

    # Notebooks

    def create_notebook(self, name: str, *, parent_id: Id | None = None) -> models.Notebook:
        """Create a notebook (inside ``parent_id`` if given)."""
        return self._run(calls.create_notebook(name, parent_id))

    def notebooks(
        self, *, parent_id: Id | None = None, root: bool = False
    ) -> Iterator[models.Notebook]:
        """Every notebook this credential may use (children of ``parent_id``, or only
        top-level ones with ``root``), a page at a time."""
        return self._pages(lambda after: calls.notebooks(parent_id, root, after))

    def archived_notebooks(self) -> list[models.Notebook]:
        """The archived notebooks (owner session)."""
        listing: models.ArchivedNotebookList = self._run(calls.archived_notebooks())
        return listing.items

    def notebook_brief(self, notebook_id: Id) -> models.NotebookBrief:
        """The notebook's cited brief (``status`` says whether it is current)."""
        return self._run(calls.brief(notebook_id))

    def suggestions_page(
        self, *, cursor: str | None = None, limit: int | None = None
    ) -> models.SuggestionPage:
        """One page of suggestions for notes saved without a notebook, newest first."""
        return self._run(calls.suggestions(limit, cursor))

    def list_suggestions(self, *, limit: int | None = None) -> Iterator[models.Suggestion]:
        """Every suggestion, newest first, fetching a page (of ``limit``) when one is used up."""
        return self._pages(lambda after: calls.suggestions(limit, after))

    def notebook_subtree(self, notebook_id: Id) -> models.SubtreePreview:
        """What a whole-notebook operation would touch, and its ``fingerprint``."""
        return self._run(calls.subtree(notebook_id))

    def apply_to_notebook(
        self, notebook_id: Id, action: calls.SubtreeAction, fingerprint: str
    ) -> models.SubtreeResult:
        """Archive, restore or delete a notebook's subtree as previewed (owner session);
        ``Conflict`` (``subtree_changed``) if it changed since the preview."""
        return self._run(calls.apply_subtree(notebook_id, action, fingerprint))

    # Conversations (owner session)

    def create_conversation(
        self, conversation_id: Id | None = None, **scope: Unpack[calls.ConversationScope]
    ) -> models.Conversation:
        """Start a conversation (its ID made if not given; a resend returns it again)."""
        return self._run(calls.create_conversation(conversation_id, scope))

    def conversations(self) -> Iterator[models.Conversation]:
        """Every conversation, newest first, a page at a time."""
        return self._pages(calls.conversations)

    def conversation(self, conversation_id: Id) -> models.ConversationDetail:
        """One conversation with all of its turns."""
        return self._run(calls.conversation(conversation_id))

    def add_turn(
        self, conversation_id: Id, question: str, **turn: Unpack[calls.TurnOptions]
    ) -> models.TurnReply:
        """Ask a conversation's next question (``TurnOptions``)."""
        return self._run(calls.add_turn(conversation_id, question, turn))

    def search_conversations(self, query: str | None = None) -> Iterator[models.ConversationHit]:
        """Every conversation whose title or questions contain ``query``, newest first."""
        return self._pages(lambda after: calls.search_conversations(query, after))

    def delete_conversation(self, conversation_id: Id) -> models.DeletedConversation:
        """Hide a conversation for good (its history is retained)."""
        return self._run(calls.delete_conversation(conversation_id))

    def apply_proposal(self, conversation_id: Id, proposal_id: Id) -> models.ProposalOutcome:
        """Apply a turn's proposal as its ``preview`` shows (``Conflict``
        ``proposal_stale`` if anything moved since; applying again answers the first
        result, so a lost answer is resent)."""
        return self._run(calls.proposal(conversation_id, proposal_id, "apply"))

    def undo_proposal(self, conversation_id: Id, proposal_id: Id) -> models.ProposalOutcome:
        """Undo an applied proposal with new revisions (``Conflict``: ``proposal_stale``,
        ``not_undoable``, ``proposal_not_applied``; undoing again answers the first)."""
        return self._run(calls.proposal(conversation_id, proposal_id, "undo"))

    # Import (owner session)

    def import_export(
        self, export: calls.Body, *, import_id: Id | None = None
    ) -> models.ImportStatus:
        """Restore an export (``GET /v1/export``'s NDJSON: bytes, an iterable of byte
        chunks, or a binary file) into the account, streamed, and answer when it is done.

        ``import_id`` names the import (made if not given): sending the same export under
        it again resumes it. A lost connection is resent only when the body can be sent
        again (bytes, a list, a seekable file; not a generator)."""
        return self._run(calls.import_export(export, import_id))

    def import_status(self, import_id: Id) -> models.ImportStatus:
        """An import's state and counts, also while it runs."""
        return self._run(calls.import_status(import_id))

    # Files

    def upload_file(
        self,
        content: calls.Body,
        name: str,
        *,
        project_id: Id | None = None,
        **options: Unpack[calls.FileOptions],
    ) -> models.StoredFile:
        """Upload a file (bytes, an iterable of byte chunks, or a binary file; at most
        10 MiB by default) into a notebook, or personal notes' scope without one.

        ``media_type`` is its ``Content-Type`` (guessed from ``name`` if not given);
        ``operation_id`` (made if not given) is kept across resends, so a resent upload
        returns the first result. A body that cannot be sent again (a generator) is not
        resent after a lost connection."""
        return self._run(calls.upload_file(content, name, project_id, options))

    def upload_file_version(
        self,
        file_id: Id,
        content: calls.Body,
        *,
        name: str | None = None,
        **options: Unpack[calls.FileOptions],
    ) -> models.StoredFile:
        """Upload a new version of a file (``version`` + 1), renamed if ``name`` is given;
        ``media_type`` is needed unless ``name`` tells it."""
        return self._run(calls.upload_file_version(file_id, content, name, options))

    def update_file(
        self,
        file_id: Id,
        *,
        operation_id: Id | None = None,
        **changes: Unpack[calls.FileChanges],
    ) -> models.StoredFile:
        """Rename, move (``project_id``; None: personal notes' scope) or archive a file;
        the fields left out keep their values (``calls.FileChanges``)."""
        return self._run(calls.update_file(file_id, changes, operation_id))

    def list_files_page(
        self, *, cursor: str | None = None, limit: int | None = None
    ) -> models.FilePage:
        """One page of files, newest first (``next_cursor`` asks for the next one)."""
        return self._run(calls.files(limit, cursor))

    def list_files(self, *, limit: int | None = None) -> Iterator[models.StoredFile]:
        """Every file, newest first, fetching a page (of ``limit``) when one is used up."""
        return self._pages(lambda after: calls.files(limit, after))

    def get_file(self, file_id: Id) -> models.StoredFile:
        """A file's metadata at its current version."""
        return self._run(calls.get_file(file_id))

    def download_file(self, file_id: Id) -> Iterator[bytes]:
        """The current version's bytes, read from the network as they are used (close
        the iterator to stop early); an error (``NotFound``) is raised at the first read."""
        yield from self._streamed(calls.file_original(file_id), httpx.Response.iter_bytes)

    def delete_file(self, file_id: Id) -> models.DeletedFile:
        """Hide a file for good (its bytes stay counted in ``storage``; not resent after
        a lost answer)."""
        return self._run(calls.delete_file(file_id))

    def storage(self) -> models.Storage:
        """The account's storage per kind (owner session)."""
        return self._run(calls.storage())

    # models.Share links (owner session)

    def create_share(
        self,
        target: Literal["note", "notebook"],
        target_id: Id,
        **options: Unpack[calls.ShareOptions],
    ) -> models.CreatedShare:
        """Publish a read-only link to a note or notebook (``token`` is shown only here)."""
        return self._run(calls.create_share(target, target_id, options))

    def shares(self) -> Iterator[models.Share]:
        """Every share link, newest first, a page at a time."""
        return self._pages(calls.shares)

    def revoke_share(self, share_id: Id) -> models.Share:
        """Revoke a share link."""
        return self._run(calls.revoke_share(share_id))

    # Connections and API keys (owner session)

    def connections(self) -> list[models.Connection]:
        """Every connection (API keys and OAuth clients) of the account, newest first."""
        return self._run(calls.connections()).items

    def update_connection(
        self, connection_id: Id, grants: models.Grants, *, expected_state: str | None = None
    ) -> models.Connection:
        """Replace a connection's grants; with the ``state`` read as ``expected_state``,
        ``Conflict`` if it changed since."""
        return self._run(calls.update_connection(connection_id, grants, expected_state))

    def revoke_connection(self, connection_id: Id) -> models.Connection:
        """Revoke a connection and its keys, effective on their next request."""
        return self._run(calls.revoke_connection(connection_id))

    def connection_request(self, request_id: Id) -> models.ConnectionRequest:
        """An OAuth client's request to connect (the ``request`` of its approval link)."""
        return self._run(calls.connection_request(request_id))

    def approve_connection_request(
        self, request_id: Id, grants: models.Grants
    ) -> models.Connection:
        """Approve a pending OAuth client with ``grants``; the answer is its connection."""
        return self._run(calls.approve_request(request_id, grants))

    def deny_connection_request(self, request_id: Id) -> models.Connection:
        """Refuse a pending OAuth client; the answer is its connection."""
        return self._run(calls.deny_request(request_id))

    def create_api_key(
        self, name: str, *, grants: models.Grants | None = None
    ) -> models.CreatedKey:
        """Create an API key (``key``, its secret, is shown only in this answer)."""
        return self._run(calls.create_key(name, grants))

    def api_keys(self) -> list[models.ApiKey]:
        """Every API key of the account (never their secrets), newest first."""
        return self._run(calls.keys()).items

    def revoke_api_key(self, key_id: Id) -> models.Connection:
        """Revoke an API key; the answer is its connection, now revoked."""
        return self._run(calls.revoke_key(key_id))

    def delete_account(self, confirmation: str) -> models.DeletedAccount:
        """Delete the account for good: ``confirmation`` must be exactly ``"delete my
        Grove account"``. Every credential of the account, this one included, stops
        working."""
        return self._run(calls.delete_account(confirmation))

    # Orgs, projects and project keys (owner session)

    def orgs(self) -> list[models.Org]:
        """The orgs the account belongs to, with its ``role`` in each."""
        return self._run(calls.orgs()).items

    def create_org(self, name: str) -> models.Org:
        """Create an org (the account becomes its owner; not resent after a lost answer)."""
        return self._run(calls.create_org(name))

    def org(self, org_id: Id) -> models.Org:
        """One org the account belongs to."""
        return self._run(calls.org(org_id))

    def set_org_entitlements(self, org_id: Id, *, project_memory: bool) -> models.Org:
        """Turn the org's project memory on or off (org owners)."""
        return self._run(calls.update_org(org_id, project_memory))

    def projects(self, org_id: Id) -> list[models.Project]:
        """The org's projects the account is in (an org owner: all of them)."""
        return self._run(calls.projects(org_id)).items

    def create_project(self, org_id: Id, name: str) -> models.Project:
        """Create a project (org owners; the account becomes its admin)."""
        return self._run(calls.create_project(org_id, name))

    def project_keys(self, org_id: Id, project_id: Id) -> list[models.ProjectKey]:
        """The project's keys, never their secrets (admins)."""
        return self._run(calls.project_keys(org_id, project_id)).items

    def create_project_key(
        self,
        org_id: Id,
        project_id: Id,
        name: str,
        scopes: Sequence[calls.ProjectScope] = ("project_memory:read",),
    ) -> models.CreatedProjectKey:
        """Create a project key for agents (admins; ``key``, its secret, is shown only in
        this answer); add ``project_memory:write`` to ``scopes`` to let it write."""
        return self._run(calls.create_project_key(org_id, project_id, name, scopes))

    def revoke_project_key(
        self, org_id: Id, project_id: Id, key_id: Id
    ) -> models.RevokedProjectKey:
        """Revoke a project key (admins)."""
        return self._run(calls.revoke_project_key(org_id, project_id, key_id))

    def members(self, org_id: Id, project_id: Id) -> list[models.Member]:
        """The project's members and their roles."""
        return self._run(calls.members(org_id, project_id)).items

    def add_member(
        self, org_id: Id, project_id: Id, account_id: Id, role: calls.Role
    ) -> models.Member:
        """Add a person (their Grove account ID) with ``role``, or change their role
        (admins)."""
        return self._run(calls.add_member(org_id, project_id, account_id, role))

    def set_member_role(
        self, org_id: Id, project_id: Id, account_id: Id, role: calls.Role
    ) -> models.Member:
        """Change a member's role (admins; the last admin: ``Conflict``)."""
        return self._run(calls.update_member(org_id, project_id, account_id, role))

    def remove_member(self, org_id: Id, project_id: Id, account_id: Id) -> models.RemovedMember:
        """Remove a member (admins); their project keys stop working at once."""
        return self._run(calls.remove_member(org_id, project_id, account_id))

    # A project's shared pool (a project key, or an owner session of a member)

    def pool_status(self, org_id: Id, project_id: Id) -> models.PoolStatus:
        """Whether the project's pool is on, and what this credential may do in it."""
        return self._run(calls.pool_status(org_id, project_id))

    def write_record(
        self, org_id: Id, project_id: Id, record: models.NewRecord
    ) -> models.RecordReply:
        """Write a record, or replace the one with its key (``version`` + 1); not resent
        after a lost answer, as the API keeps no idempotency record of it."""
        return self._run(calls.write_record(org_id, project_id, record))

    def get_record(self, org_id: Id, project_id: Id, key: str) -> models.RecordReply:
        """One record by its exact key (missing or expired: ``NotFound``)."""
        return self._run(calls.get_record(org_id, project_id, key))

    def list_records_page(
        self,
        org_id: Id,
        project_id: Id,
        *,
        kind: str | None = None,
        limit: int | None = None,
        after: str | None = None,
    ) -> models.RecordPage:
        """One page of records in key order (``next_cursor`` goes back as ``after``)."""
        return self._run(calls.records(org_id, project_id, kind, limit, after))

    def list_records(
        self, org_id: Id, project_id: Id, *, kind: str | None = None, limit: int | None = None
    ) -> Iterator[models.Record]:
        """Every record in key order, fetching a page (of ``limit``) when one is used up."""
        return self._pages(lambda after: calls.records(org_id, project_id, kind, limit, after))

    def retrieve_records(
        self,
        org_id: Id,
        project_id: Id,
        query: str,
        *,
        limit: int | None = None,
        embedding: models.RecordEmbedding | None = None,
    ) -> models.RetrieveResult:
        """Records ranked for ``query`` (full text, fused with ``embedding``'s cosine)."""
        return self._run(calls.retrieve_records(org_id, project_id, query, limit, embedding))

    def delete_record(self, org_id: Id, project_id: Id, key: str) -> models.DeletedRecord:
        """Delete a record by its exact key (not resent after a lost answer)."""
        return self._run(calls.delete_record(org_id, project_id, key))

    # The agent tool registry

    def tools(self) -> list[models.ToolDescription]:
        """The agent tool registry (what MCP clients list), in registry order."""
        return self._run(calls.tools()).items

    def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Run one registry tool with its arguments (wire names, JSON values) and answer
        its output (not resent after a lost answer: a tool may write)."""
        return self._run(calls.call_tool(name, arguments or {})).model_dump()

    # The requests

    def _pages(
        self, page: Callable[[str | None], Call[models.Page[T]]], cursor: str | None = None
    ) -> Iterator[T]:
        """The items of ``page(cursor)``, then of the pages after it, fetched lazily."""
        while True:
            current = self._run(page(cursor))
            yield from current.items
            cursor = current.cursor()
            if cursor is None:
                return

    def _streamed(
        self, request: calls.Request, read: Callable[[httpx.Response], Iterator[T]]
    ) -> Iterator[T]:
        """``read`` of a streamed answer, or its error raised; closed when done."""
        response = self._send(request, stream=True)
        try:
            if not response.is_success:
                response.read()
                calls.data(response)
            yield from read(response)
        finally:
            response.close()

    def _run(self, call: Call[M]) -> M:
        """Send ``call`` (resent as ``RetryPolicy`` allows) and parse its answer."""
        return call.parse(self._send(call.request))

    def _send(self, request: calls.Request, *, stream: bool = False) -> httpx.Response:
        built = request.build(self._http)
        attempt = 0
        while True:
            try:
                response = self._http.send(built, stream=stream)
            except httpx.TransportError as ex:
                again = request.again(self._http, built)  # None: its body cannot be resent
                resend = request.endpoint.resend and again is not None
                wait = self.retries.after_failure(ex, attempt, resend)
            else:
                later = self.retries.after_status(response, attempt)
                again = None if later is None else request.again(self._http, built)
                if later is None or again is None:
                    return response
                response.close()
                wait = later
            time.sleep(wait)
            attempt += 1
            built = again if again is not None else built
