"""grove-client (clients/python) against the real api: every method, paging, errors,
retries, and its routes and models checked against the api's own OpenAPI document."""

from __future__ import annotations

import asyncio
import copy
import hashlib
import io
import json
import time
import types
import typing
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import httpx
import pytest
from pydantic import BaseModel

from grove_auth.oauth import AgentConfig, agent_principal
from grove_client import (
    USER_AGENT,
    AsyncGrove,
    AuthError,
    Conflict,
    Gone,
    Grants,
    Grove,
    GroveError,
    NewNote,
    NewRecord,
    NotFound,
    PayloadTooLarge,
    PermissionDenied,
    RateLimited,
    RecordProvenance,
    Unavailable,
    UnsupportedMediaType,
    ValidationError,
)
from grove_client.endpoints import ENDPOINTS, EXCLUDED, Endpoint
from grove_client.models import StoredFile
from grove_db import embedded
from grove_db.pool import open_pool
from tests.support.conversations import start_answering_api
from tests.support.databases import superuser_sql
from tests.support.owners import AUDIENCE, ISSUER, WEBSITE, OwnerStack, Provider, owned_tenant
from tests.support.processes import free_port, start_api, start_ask
from tests.support.proxy import Fault, FaultyProxy
from tests.support.teams import Team, new_team
from tests.support.tenants import Tenant, new_tenant

T = TypeVar("T")
DEPLOY = "We deploy the billing service with Argo CD every Tuesday."


def connect(url: str, key: str | None, **options: Any) -> Grove:
    assert key is not None
    return Grove(url, key, **{"max_retries": 2, "backoff": 0.05, **options})


def connect_async(url: str, key: str | None, **options: Any) -> AsyncGrove:
    assert key is not None
    return AsyncGrove(url, key, **{"max_retries": 2, "backoff": 0.05, **options})


def unextracted(file: StoredFile) -> dict[str, Any]:
    """A file's metadata but its extraction's state, which the suite's workers change
    while a test runs."""
    return file.model_dump(exclude={"indexing", "indexing_error", "passages"})


async def collect(items: AsyncIterator[T]) -> list[T]:
    return [item async for item in items]


@pytest.fixture
def grove(tenant: Tenant) -> Iterator[Grove]:
    with connect(tenant.client.base, tenant.client.key) as client:
        yield client


@pytest.fixture
def proxied(tenant: Tenant) -> Iterator[tuple[Grove, FaultyProxy]]:
    """The tenant's client through a ``FaultyProxy``; the test sets ``proxy.faults``."""
    proxy = FaultyProxy(tenant.client.base)
    with connect(proxy.url, tenant.client.key) as client:
        yield client, proxy
    proxy.close()


def faults(proxy: FaultyProxy, *planned: Fault) -> None:
    proxy.faults = list(planned)


# Every method once


def test_notes_round_trip_through_every_method(grove: Grove) -> None:
    notebook = grove.create_notebook("work")
    assert [n.id for n in grove.notebooks()] == [notebook.id]
    note = grove.remember(
        "we deploy on tuesdays", "decision", project_id=notebook.id, source_agent="agent-1"
    )
    assert (note.kind, note.version, note.project_id) == ("decision", 1, notebook.id)
    assert note.provenance is not None and note.provenance.source_agent == "agent-1"
    assert note.similar == []
    assert grove.get(note.id).model_dump() == note.model_dump(exclude={"similar"})

    updated = grove.update(note.id, content="we deploy on wednesdays", expected_version=1)
    assert (updated.content, updated.version) == ("we deploy on wednesdays", 2)
    revisions = grove.revisions(note.id)
    assert [r.version for r in revisions.items] == [1, 2]
    assert revisions.items[0].content == "we deploy on tuesdays"
    moved = grove.update(note.id, project_id=None)
    assert (moved.project_id, moved.version) == (None, 3)

    assert [i.memory.id for i in grove.search("wednesdays").items] == [note.id]
    assert [i.memory.id for i in grove.recall("deploy wednesdays").items] == [note.id]
    assert [n.id for n in grove.list_notes(project_id="personal")] == [note.id]
    assert [n.id for n in grove.list_notes(project_id=notebook.id)] == []
    saver = note.saved_by
    assert saver is not None and saver.kind == "connection" and saver.connection_id
    assert [r.saved_by for r in grove.revisions(note.id).items] == [saver] * 3
    assert [n.id for n in grove.list_notes(connection_id=saver.connection_id)] == [note.id]
    assert [n.id for n in grove.list_notes(connection_id=uuid.uuid4())] == []
    found = grove.search("wednesdays", connection_id=saver.connection_id)
    assert [i.memory.id for i in found.items] == [note.id]
    assert grove.search("wednesdays", connection_id=uuid.uuid4()).items == []
    recent = grove.activity(connection_id=saver.connection_id, limit=2)  # two pages
    assert [(r.memory_id, r.version) for r in recent] == [(note.id, v) for v in (3, 2, 1)]

    forgotten = grove.forget([note.id])
    assert [(r.id, r.outcome) for r in forgotten.results] == [(note.id, "deleted")]
    with pytest.raises(NotFound):
        grove.get(note.id)


def test_a_batch_answers_each_item(grove: Grove) -> None:
    result = grove.save_batch(
        [NewNote(content="tea, not coffee", kind="preference"), NewNote(content=" ")]
    )
    assert [i.status for i in result.items] == ["created", "failed"]
    assert result.items[0].memory is not None
    assert result.items[0].memory.content == "tea, not coffee"
    assert result.items[1].error is not None and result.items[1].error.code == "validation_error"


@pytest.fixture(scope="module")
def owner_api(database: embedded.EmbeddedDatabase) -> Iterator[OwnerStack]:
    """An api that accepts owner sessions from a fake provider and answers questions
    (grove-ask, extractive and lexical only), with its provider and database."""
    provider = Provider()
    ask = start_ask({"GROVE_EMBEDDING_PROFILE": "disabled"})
    api = start_answering_api(database, provider, ask, workers=1)
    yield OwnerStack(provider, api, database)
    api.stop()
    ask.stop()
    provider.close()


@dataclass
class Account:
    """A fresh account on ``owner_api``: a client with its API key and one as its owner."""

    key: Grove
    owner: Grove
    url: str
    owner_token: str
    account_id: uuid.UUID
    subject: str


@pytest.fixture
def account(database: embedded.EmbeddedDatabase, owner_api: OwnerStack) -> Iterator[Account]:
    url, provider = owner_api.api.url, owner_api.provider
    tenant, subject = owned_tenant(database, url)
    session = provider.token(subject)
    with connect(url, tenant.client.key) as key, connect(url, session) as owner:
        yield Account(key, owner, url, session, tenant.account_id, subject)


def test_the_owner_restores_an_expired_note_and_a_key_is_refused(
    database: embedded.EmbeddedDatabase, account: Account
) -> None:
    key, owner = account.key, account.owner
    note = key.remember("short-lived", retention_days=1)
    superuser_sql(
        database,
        "UPDATE memories SET expires_at = now() - interval '1 second' WHERE id = %s",
        note.id,
    )
    with pytest.raises(NotFound):
        key.get(note.id)
    with pytest.raises(PermissionDenied) as refused:
        key.restore(note.id)
    assert refused.value.code == "owner_session_required"
    restored = owner.restore(note.id)
    assert (restored.id, restored.retention_days) == (note.id, 1)
    assert key.get(note.id).content == "short-lived"


def test_ask_answers_with_citations_of_the_exact_revision(account: Account) -> None:
    note = account.key.remember(DEPLOY)
    account.key.remember("Priya maintains the billing service.")
    result = account.key.ask("When do we deploy the billing service?")
    assert result.status == "answered" and result.answer is not None
    assert result.answer.citations and result.answer.generator == "extractive"
    for citation in result.answer.citations:
        assert citation.revision_id == f"{citation.note_id}:{citation.version}"
        source = account.key.get(citation.note_id).content
        assert source[citation.start : citation.end] == citation.quote
    assert note.id in {c.note_id for c in result.answer.citations}
    searched = account.key.ask("billing", mode="search", project_id=None)
    assert (searched.status, searched.answer) == ("searched", None)
    assert {s.note_id for s in searched.sources} >= {note.id}
    nothing = account.key.ask("xylophone quarterly?")
    assert (nothing.status, nothing.answer) == ("no_evidence", None)


def test_ask_without_grove_ask_raises_unavailable_after_the_retries(
    database: embedded.EmbeddedDatabase,
) -> None:
    api = start_api(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_API_WORKERS": "1",
            "GROVE_EMBEDDING_PROFILE": "disabled",
            "GROVE_ASK_ADDRESS": f"127.0.0.1:{free_port()}",
        }
    )
    proxy = FaultyProxy(api.url)
    try:
        tenant = new_tenant(database, api.url)
        with connect(proxy.url, tenant.client.key) as grove, pytest.raises(Unavailable) as down:
            grove.remember(DEPLOY)
            grove.ask("When do we deploy?")
    finally:
        proxy.close()
        api.stop()
    assert (down.value.status, down.value.code) == (503, "inference_unavailable")
    assert down.value.request_id
    assert [s.path for s in proxy.seen].count("/v1/ask") == 3  # resent twice after a 503


def test_a_conversation_through_every_method_and_a_key_is_refused(account: Account) -> None:
    account.key.remember(DEPLOY)
    with pytest.raises(PermissionDenied) as refused:
        account.key.create_conversation()
    assert refused.value.code == "owner_session_required"
    owner = account.owner
    started = owner.create_conversation(title="Deploys")
    assert owner.create_conversation(started.id, title="Deploys") == started  # replayed
    assert (started.title, started.version, started.turn_count) == ("Deploys", 1, 0)
    reply = owner.add_turn(
        started.id, "When do we deploy the billing service?", expected_version=started.version
    )
    assert (reply.turn.status, reply.turn.outcome) == ("completed", "answered")
    assert reply.turn.answer is not None and reply.turn.answer.citations
    assert (reply.conversation.version, reply.conversation.turn_count) == (2, 1)
    with pytest.raises(Conflict) as stale:
        owner.add_turn(started.id, "And staging?", expected_version=1)
    assert stale.value.code == "version_conflict"
    detail = owner.conversation(started.id)
    assert [t.id for t in detail.turns] == [reply.turn.id]
    other = owner.create_conversation(project_id=None)
    assert [c.id for c in owner.conversations()] == [other.id, started.id]
    assert [c.id for c in owner.search_conversations("billing")] == [started.id]
    assert owner.delete_conversation(started.id).deleted is True
    assert [c.id for c in owner.conversations()] == [other.id]
    with pytest.raises(NotFound):
        owner.conversation(started.id)


def test_the_near_duplicate_groups_are_listed_with_their_merge(account: Account) -> None:
    first = account.key.remember(DEPLOY)
    second = account.key.remember("Every Tuesday we deploy the billing service with Argo CD.")
    account.key.remember("The office plants are watered on Fridays.")
    listed = account.key.duplicates()
    assert listed.scanned == 3
    [group] = listed.groups
    assert [n.id for n in group.notes] == [second.id, first.id]  # the freshest first
    assert group.merge.change.action == "merge"
    assert (group.merge.change.into, set(group.merge.change.note_ids)) == (
        second.id,
        {first.id, second.id},
    )


def test_a_turns_merge_proposal_is_applied_and_undone(account: Account) -> None:
    first = account.key.remember(DEPLOY)
    second = account.key.remember("Every Tuesday we deploy the billing service with Argo CD.")
    owner = account.owner
    started = owner.create_conversation()
    reply = owner.add_turn(started.id, "When do we deploy the billing service?", expected_version=1)
    [proposal] = [p for p in reply.turn.proposals if p.change.action == "merge"]
    assert (proposal.source, proposal.state, proposal.events) == ("deterministic", "proposed", [])
    assert set(proposal.change.note_ids) == {first.id, second.id}
    assert proposal.change.into in {first.id, second.id} and proposal.change.content
    assert {(n.id, n.version) for n in proposal.preview.notes} == {(first.id, 1), (second.id, 1)}
    assert proposal.preview.undoable is True
    with pytest.raises(PermissionDenied) as refused:
        account.key.apply_proposal(started.id, proposal.id)
    assert refused.value.code == "owner_session_required"

    applied = owner.apply_proposal(started.id, proposal.id)
    kept = proposal.change.into
    other = second.id if kept == first.id else first.id
    assert applied.proposal.state == "applied"
    assert {(n.id, n.outcome, n.version) for n in applied.notes} == {
        (kept, "updated", 2),
        (other, "archived", 1),  # archiving keeps the version
    }
    assert account.key.get(kept).content == proposal.change.content
    undone = owner.undo_proposal(started.id, proposal.id)
    assert undone.proposal.state == "undone"
    assert [(e.action, e.result) for e in undone.proposal.events] == [
        ("apply", "applied"),
        ("undo", "undone"),
    ]
    assert {(n.id, n.outcome) for n in undone.notes} == {(kept, "updated"), (other, "restored")}
    assert owner.undo_proposal(started.id, proposal.id) == undone  # the first result again
    assert account.key.get(kept).content in {DEPLOY, second.content}
    with pytest.raises(Conflict) as again:
        owner.apply_proposal(started.id, proposal.id)
    assert again.value.code == "proposal_undone"
    [turn] = owner.conversation(started.id).turns
    assert [(p.id, p.state) for p in turn.proposals if p.id == proposal.id] == [
        (proposal.id, "undone")
    ]


def test_share_links_are_created_listed_and_revoked(account: Account) -> None:
    note = account.key.remember("a note worth sharing")
    with pytest.raises(PermissionDenied):
        account.key.create_share("note", note.id)
    created = account.owner.create_share("note", note.id, title="Worth sharing")
    assert (created.target.type, created.target.id) == ("note", note.id)
    assert created.token and created.token in created.url
    assert (created.status, created.title) == ("active", "Worth sharing")
    assert [s.id for s in account.owner.shares()] == [created.id]
    revoked = account.owner.revoke_share(created.id)
    assert (revoked.id, revoked.status) == (created.id, "revoked")
    assert [s.status for s in account.owner.shares()] == ["revoked"]


def test_a_notebook_subtree_is_previewed_archived_and_restored(account: Account) -> None:
    notebook = account.key.create_notebook("old project")
    account.key.remember("from the old project", project_id=notebook.id)
    preview = account.owner.notebook_subtree(notebook.id)
    assert (preview.notebooks, preview.notes) == (1, 1)
    done = account.owner.apply_to_notebook(notebook.id, "archive", preview.fingerprint)
    assert (done.action, done.notebooks, done.notes) == ("archive", 1, 1)
    assert [n.id for n in account.owner.archived_notebooks()] == [notebook.id]
    assert list(account.key.notebooks()) == []
    with pytest.raises(Conflict) as changed:
        account.owner.apply_to_notebook(notebook.id, "restore", preview.fingerprint)
    assert changed.value.code == "subtree_changed"
    again = account.owner.notebook_subtree(notebook.id)
    account.owner.apply_to_notebook(notebook.id, "restore", again.fingerprint)
    assert [n.id for n in account.key.notebooks()] == [notebook.id]


def test_a_notebook_brief_and_the_suggestions_are_read(account: Account) -> None:
    """No worker runs here: the brief is pending, and nothing is suggested yet."""
    notebook = account.key.create_notebook("briefed")
    empty = account.key.create_notebook("empty")
    account.key.remember("Invoices go out on the first.", project_id=notebook.id)
    brief = account.key.notebook_brief(notebook.id)
    assert (brief.notebook_id, brief.status, brief.notes, brief.text) == (
        notebook.id,
        "pending",
        1,
        None,
    )
    assert account.owner.notebook_brief(empty.id).status == "empty"
    with pytest.raises(NotFound):
        account.key.notebook_brief(uuid.uuid4())
    assert account.key.suggestions_page(limit=5).items == []
    assert list(account.owner.list_suggestions()) == []


def test_the_export_streams_its_lines_as_objects(account: Account) -> None:
    notes = [account.key.remember(f"exported {i}") for i in range(3)]
    account.key.update(notes[0].id, content="exported again")
    lines = list(account.key.export())
    assert lines[0]["type"] == "export" and lines[0]["version"] == 1
    memories = {line["memory"]["id"]: line for line in lines if line["type"] == "memory"}
    assert set(memories) == {str(n.id) for n in notes}
    assert len(memories[str(notes[0].id)]["revisions"]) == 2
    owner_lines = list(account.owner.export())
    assert {line["type"] for line in owner_lines} >= {"export", "memory"}


def export_of(grove: Grove) -> list[bytes]:
    """Everything ``grove`` may read, as the NDJSON lines of an export."""
    return [json.dumps(line).encode() + b"\n" for line in grove.export()]


@pytest.fixture
def newcomer_token(database: embedded.EmbeddedDatabase, owner_api: OwnerStack) -> str:
    """An owner session of another fresh account on ``owner_api``."""
    _, subject = owned_tenant(database, owner_api.api.url)
    return owner_api.provider.token(subject)


@pytest.fixture
def newcomer(owner_api: OwnerStack, newcomer_token: str) -> Iterator[Grove]:
    """A client of ``newcomer_token``."""
    with connect(owner_api.api.url, newcomer_token) as owner:
        yield owner


def test_an_export_is_imported_into_another_account(account: Account, newcomer: Grove) -> None:
    notebook = account.key.create_notebook("carried over")
    notes = [account.key.remember(f"carried over {i}", project_id=notebook.id) for i in range(2)]
    notes.append(account.key.remember("a personal note"))
    account.key.update(notes[0].id, content="carried over, corrected")
    lines = export_of(account.key)
    with pytest.raises(PermissionDenied):
        account.key.import_export(lines)

    status = newcomer.import_export(line for line in lines)  # a generator, streamed once
    assert (status.state, status.error, status.line) == ("done", None, None)
    counts = status.counts
    assert (counts.notebooks, counts.notes, counts.revisions) == (1, 3, 4)
    assert (counts.skipped_notes, counts.connections, counts.conversations) == (0, 0, 0)
    assert newcomer.import_status(status.id) == status
    contents = sorted(n.content for n in newcomer.list_notes())
    assert contents == ["a personal note", "carried over 1", "carried over, corrected"]
    [copied] = [n for n in newcomer.list_notes() if n.content == "carried over, corrected"]
    assert [r.version for r in newcomer.revisions(copied.id).items] == [1, 2]

    resumed = newcomer.import_export(b"".join(lines), import_id=status.id)
    assert (resumed.id, resumed.state) == (status.id, "done")
    assert (resumed.counts.notes, resumed.counts.skipped_notes) == (0, 3)
    with pytest.raises(NotFound):
        newcomer.import_status(uuid.uuid4())


def test_an_import_whose_answer_is_lost_is_resent_under_its_id(
    account: Account, owner_api: OwnerStack, database: embedded.EmbeddedDatabase
) -> None:
    account.key.remember(DEPLOY)
    export = b"".join(export_of(account.key))
    _, subject = owned_tenant(database, owner_api.api.url)
    proxy = FaultyProxy(owner_api.api.url, ["drop"])
    try:
        with connect(proxy.url, owner_api.provider.token(subject)) as owner:
            status = owner.import_export(io.BytesIO(export))  # a seekable file: rewound
            assert [n.content for n in owner.list_notes()] == [DEPLOY]
    finally:
        proxy.close()
    posts = [s for s in proxy.seen if s.method == "POST"]
    assert len(posts) == 2 and posts[0].path == posts[1].path == f"/v1/import?id={status.id}"
    assert posts[0].body == posts[1].body == export
    assert posts[0].headers["content-type"] == "application/x-ndjson"
    assert (status.state, status.counts.notes, status.counts.skipped_notes) == ("done", 0, 1)


# Connections and API keys


def test_api_keys_and_connections_are_created_granted_and_revoked(account: Account) -> None:
    owner = account.owner
    with pytest.raises(PermissionDenied) as refused:
        account.key.api_keys()
    assert refused.value.code == "owner_session_required"
    created = owner.create_api_key("ci", grants=Grants(capabilities=["memory:read"]))
    assert created.key and created.connection.key_prefix
    assert created.key.startswith(created.connection.key_prefix)
    assert created.connection.grants == Grants(capabilities=["memory:read"])
    assert created.id in {k.id for k in owner.api_keys()}
    assert "key" not in (owner.api_keys()[0].model_extra or {})
    connection = created.connection
    assert connection.id in {c.id for c in owner.connections()}
    with connect(account.url, created.key) as ci:
        with pytest.raises(PermissionDenied):
            ci.remember("refused: read only")
        granted = owner.update_connection(connection.id, Grants(), expected_state=connection.state)
        assert granted.grants is not None and "memory:write" in granted.grants.capabilities
        with pytest.raises(Conflict):
            owner.update_connection(connection.id, Grants(), expected_state=connection.state)
        assert ci.remember("written once granted").version == 1
        revoked = owner.revoke_api_key(created.id)
        assert (revoked.id, revoked.status) == (connection.id, "revoked")
        with pytest.raises(AuthError):
            ci.list_notes_page()
    other = owner.create_api_key("other")
    gone = owner.revoke_connection(other.connection.id)
    assert (gone.id, gone.status) == (other.connection.id, "revoked")
    statuses = {c.id: c.status for c in owner.connections()}
    assert statuses[other.connection.id] == "revoked"


def pending_request(database: embedded.EmbeddedDatabase, subject: str) -> uuid.UUID:
    """A new OAuth client's pending request to connect to ``subject``'s account, made as
    the MCP server makes it when a client the owner has not approved calls it."""
    pool = open_pool(database.runtime_url)
    try:
        config = AgentConfig(issuer=ISSUER, audience=AUDIENCE, website_origin=WEBSITE)
        claims = {"sub": subject, "client_id": f"agent-{uuid.uuid4().hex[:8]}", "scope": "mcp"}
        principal = agent_principal(pool, config, claims)
    finally:
        pool.close()
    assert principal.approval_url is not None
    return uuid.UUID(principal.approval_url.split("request=")[1])


def test_oauth_connection_requests_are_read_approved_and_denied(
    database: embedded.EmbeddedDatabase, account: Account
) -> None:
    owner = account.owner
    asked = pending_request(database, account.subject)
    with pytest.raises(PermissionDenied):
        account.key.connection_request(asked)
    shown = owner.connection_request(asked)
    assert (shown.id, shown.status, shown.scopes) == (asked, "pending", ["mcp"])
    assert shown.client_id and shown.client_id.startswith("agent-")
    assert (shown.connection.status, shown.connection.grants) == ("pending", None)
    grants = Grants(capabilities=["memory:read"])
    approved = owner.approve_connection_request(asked, grants)
    assert (approved.id, approved.status, approved.grants) == (
        shown.connection.id,
        "active",
        grants,
    )
    assert owner.connection_request(asked).status == "approved"
    with pytest.raises(NotFound):
        owner.deny_connection_request(asked)  # answered already
    refused = pending_request(database, account.subject)
    denied = owner.deny_connection_request(refused)
    assert owner.connection_request(refused).status == "denied"
    assert denied.id != approved.id
    with pytest.raises(NotFound):
        owner.connection_request(uuid.uuid4())


def test_an_account_is_deleted_only_with_its_phrase_and_by_its_owner(account: Account) -> None:
    phrase = "delete my Grove account"
    with pytest.raises(PermissionDenied):
        account.key.delete_account(phrase)
    with pytest.raises(ValidationError):
        account.owner.delete_account("delete it")
    deleted = account.owner.delete_account(phrase)
    assert (deleted.deleted, deleted.account_id) == (True, account.account_id)
    with pytest.raises(AuthError):
        account.key.list_notes_page()


# Files


def test_files_are_uploaded_versioned_listed_downloaded_and_deleted(
    database: embedded.EmbeddedDatabase, account: Account
) -> None:
    key, owner = account.key, account.owner
    notebook = key.create_notebook("docs")
    text = b"# Deploys\nTuesdays.\n"
    first = key.upload_file(text, "deploys.md", project_id=notebook.id)
    assert (first.name, first.media_type, first.project_id) == (
        "deploys.md",
        "text/markdown",
        notebook.id,
    )
    assert (first.version, first.size_bytes) == (1, len(text))
    assert first.sha256 == hashlib.sha256(text).hexdigest()
    operation = uuid.uuid4()
    plain = key.upload_file(io.BytesIO(b"plain"), "notes.txt", operation_id=operation)
    assert (plain.media_type, plain.project_id) == ("text/plain", None)
    assert key.upload_file(b"plain", "notes.txt", operation_id=operation) == plain  # replayed

    second = key.upload_file_version(first.id, b"Wednesdays", media_type="text/plain")
    assert (second.id, second.version, second.name) == (first.id, 2, "deploys.md")
    renamed = key.upload_file_version(first.id, [b"# Deploys", b" on Fridays"], name="v3.md")
    assert (renamed.version, renamed.name, renamed.media_type) == (3, "v3.md", "text/markdown")
    assert unextracted(key.get_file(first.id)) == unextracted(renamed)
    assert b"".join(key.download_file(first.id)) == b"# Deploys on Fridays"
    moved = key.update_file(first.id, project_id=None, name="deploys.md")
    assert (moved.project_id, moved.name, moved.version) == (None, "deploys.md", 3)
    archived = key.update_file(first.id, archived=True)
    assert (archived.archived, archived.name) == (True, "deploys.md")
    renamed = key.update_file(first.id, archived=False, project_id=notebook.id, name="v3.md")
    assert (renamed.archived, renamed.project_id) == (False, notebook.id)
    with pytest.raises(ValueError):
        key.upload_file_version(first.id, b"no name, no type")
    with pytest.raises(UnsupportedMediaType) as unsupported:
        key.upload_file(b"\x00", "blob.bin", media_type="application/octet-stream")
    assert (unsupported.value.status, unsupported.value.code) == (415, "unsupported_media_type")

    assert {f.id for f in key.list_files(limit=1)} == {first.id, plain.id}  # over two pages
    page = key.list_files_page(limit=1)
    assert len(page.items) == 1 and page.next_cursor
    with pytest.raises(PermissionDenied):
        key.storage()
    usage = owner.storage()
    assert usage.files.items >= 2 and usage.files.bytes >= renamed.size_bytes + plain.size_bytes

    stranger = new_tenant(database, account.url)
    with connect(account.url, stranger.client.key) as other:
        assert list(other.list_files()) == []
        for call in (
            lambda: other.get_file(first.id),
            lambda: b"".join(other.download_file(first.id)),
            lambda: other.upload_file_version(first.id, b"mine now", media_type="text/plain"),
            lambda: other.delete_file(first.id),
        ):
            with pytest.raises(NotFound):
                call()
    assert unextracted(key.get_file(first.id)) == unextracted(renamed)

    assert (key.delete_file(plain.id).id, key.delete_file(first.id).deleted) == (plain.id, True)
    with pytest.raises(NotFound):
        key.get_file(plain.id)
    with pytest.raises(NotFound):
        b"".join(key.download_file(first.id))
    assert list(key.list_files()) == []


# The agent tool registry


def test_the_tool_registry_is_listed_and_a_tool_is_called(grove: Grove) -> None:
    tools = {tool.name: tool for tool in grove.tools()}
    assert {"remember", "search_memories"} <= set(tools)
    assert tools["remember"].input_schema["properties"]["content"]
    saved = grove.call_tool("remember", {"content": "saved through the registry", "kind": "fact"})
    assert saved["content"] == "saved through the registry" and saved["version"] == 1
    assert grove.get(saved["id"]).content == "saved through the registry"
    with pytest.raises(ValidationError):
        grove.call_tool("remember", {"content": "   ", "kind": "fact"})


# Orgs, projects and project keys


def test_orgs_projects_and_project_keys_are_created_listed_and_revoked(account: Account) -> None:
    owner = account.owner
    with pytest.raises(PermissionDenied):
        account.key.orgs()
    assert owner.orgs() == []
    org = owner.create_org("Acme")
    assert (org.name, org.role) == ("Acme", "owner")
    assert owner.orgs() == [org] and owner.org(org.id) == org
    project = owner.create_project(org.id, "Rocket")
    assert (project.org_id, project.name, project.role) == (org.id, "Rocket", "admin")
    assert owner.projects(org.id) == [project]
    created = owner.create_project_key(
        org.id, project.id, "ci", ["project_memory:read", "project_memory:write"]
    )
    assert created.key.startswith(created.prefix) and created.revoked_at is None
    assert created.scopes == ["project_memory:read", "project_memory:write"]
    assert [k.id for k in owner.project_keys(org.id, project.id)] == [created.id]
    assert "key" not in (owner.project_keys(org.id, project.id)[0].model_extra or {})
    with connect(account.url, created.key) as agent:
        assert agent.pool_status(org.id, project.id).access["role"] is not None
        revoked = owner.revoke_project_key(org.id, project.id, created.id)
        assert (revoked.id, revoked.revoked) == (created.id, True)
        with pytest.raises(AuthError):
            agent.pool_status(org.id, project.id)
    [listed] = owner.project_keys(org.id, project.id)
    assert listed.revoked_at is not None


def test_project_members_and_org_entitlements_are_managed_by_admins(team: Team) -> None:
    url, org, project = team.stack.api.url, team.org, team.project
    alice, bob, carol = (uuid.UUID(p.id) for p in (team.alice, team.bob, team.carol))
    with connect(url, team.alice.session.key) as admin, connect(url, team.bob.session.key) as other:
        roles = {m.account_id: m.role for m in admin.members(org, project)}
        assert roles == {alice: "admin", bob: "contributor", carol: "viewer"}
        promoted = admin.set_member_role(org, project, carol, "contributor")
        assert (promoted.account_id, promoted.role) == (carol, "contributor")
        with pytest.raises(PermissionDenied):
            other.remove_member(org, project, carol)
        removed = admin.remove_member(org, project, carol)
        assert (removed.account_id, removed.removed) == (carol, True)
        with pytest.raises(NotFound):
            admin.remove_member(org, project, carol)
        added = admin.add_member(org, project, carol, "viewer")
        assert (added.account_id, added.role) == (carol, "viewer")
        assert {m.account_id for m in other.members(org, project)} == {alice, bob, carol}

        off = admin.set_org_entitlements(org, project_memory=False)
        assert off.entitlements["projectMemory"]["enabled"] is False
        assert admin.org(org) == off
        with pytest.raises(NotFound):  # the pool is off: its projects answer 404
            admin.pool_status(org, project)
        on = admin.set_org_entitlements(org, project_memory=True)
        assert on.entitlements["projectMemory"]["enabled"] is True
        assert admin.pool_status(org, project).enabled is True
        with pytest.raises(PermissionDenied):
            other.set_org_entitlements(org, project_memory=False)


# A project's shared pool


def record(key: str, body: str, **fields: Any) -> NewRecord:
    provenance = RecordProvenance(
        source="chat", ref="thread-1", observed_at=datetime(2026, 11, 30, tzinfo=UTC)
    )
    return NewRecord(key=key, title=key, body=body, provenance=provenance, **fields)


@pytest.fixture
def team(owner_api: OwnerStack) -> Team:
    """An org with one project, and project keys that read and write, or only read."""
    return new_team(owner_api)


def test_a_project_key_uses_the_pool_through_every_method(team: Team) -> None:
    url, org, project = team.stack.api.url, team.org, team.project
    with connect(url, team.writer.key) as pool, connect(url, team.reader.key) as reader:
        status = pool.pool_status(org, project)
        assert status.enabled and status.access["write"] is True
        assert reader.pool_status(org, project).access["write"] is False
        written = pool.write_record(org, project, record("deploy/day", "Tuesdays", kind="decision"))
        assert (written.record.version, written.record.authority) == (1, "observed")
        assert written.data_trust == "untrusted_memory"
        replaced = pool.write_record(org, project, record("deploy/day", "Wednesdays"))
        assert (replaced.record.version, replaced.record.body) == (2, "Wednesdays")
        with pytest.raises(PermissionDenied):
            reader.write_record(org, project, record("other", "refused"))
        assert reader.get_record(org, project, "deploy/day").record == replaced.record
        for key in ("a+b c%", "z.ü/é"):
            pool.write_record(org, project, record(key, f"the {key} record"))
        keys = [r.key for r in reader.list_records(org, project, limit=2)]
        assert keys == ["a+b c%", "deploy/day", "z.ü/é"]  # over two pages
        first = reader.list_records_page(org, project, limit=1)
        assert [r.key for r in first.items] == ["a+b c%"] and first.next_cursor
        assert [r.key for r in reader.list_records(org, project, kind="decision")] == []
        hits = reader.retrieve_records(org, project, "wednesdays", limit=5)
        assert [r.key for r in hits.records] == ["deploy/day"]
        assert hits.records[0].score > 0 and hits.semantic.applied is False
        deleted = pool.delete_record(org, project, "deploy/day")
        assert (deleted.key, deleted.deleted) == ("deploy/day", True)
        with pytest.raises(NotFound):
            reader.get_record(org, project, "deploy/day")


def test_async_the_pool_round_trips_a_record(team: Team) -> None:
    async def flow() -> None:
        url, org, project = team.stack.api.url, team.org, team.project
        async with connect_async(url, team.writer.key) as pool:
            assert (await pool.pool_status(org, project)).access["read"] is True
            written = await pool.write_record(org, project, record("k", "hello pool"))
            assert (await pool.get_record(org, project, "k")).record == written.record
            assert [r.key async for r in pool.list_records(org, project)] == ["k"]
            page = await pool.list_records_page(org, project, after="k")
            assert (page.items, page.next_cursor) == ([], None)
            hits = await pool.retrieve_records(org, project, "hello")
            assert [r.key for r in hits.records] == ["k"]
            assert (await pool.delete_record(org, project, "k")).deleted is True
            with pytest.raises(NotFound):
                await pool.get_record(org, project, "k")

    asyncio.run(flow())


def test_async_files_members_requests_tools_and_account_reach_their_routes(
    database: embedded.EmbeddedDatabase, account: Account, team: Team
) -> None:
    asked = pending_request(database, account.subject)
    refused = pending_request(database, account.subject)

    async def chunks() -> AsyncIterator[bytes]:
        yield b"streamed "
        yield b"from asyncio"

    async def flow() -> None:
        async with connect_async(account.url, account.owner_token) as owner:
            stored = await owner.upload_file(chunks(), "async.txt")
            assert (stored.version, stored.size_bytes) == (1, 21)
            again = await owner.upload_file_version(stored.id, b"v2", media_type="text/plain")
            again = await owner.update_file(again.id, name="renamed.txt")
            assert again.version == 2
            assert unextracted(await owner.get_file(stored.id)) == unextracted(again)
            assert [f.id async for f in owner.list_files()] == [stored.id]
            (listed,) = (await owner.list_files_page(limit=1)).items
            assert unextracted(listed) == unextracted(again)
            assert b"".join(await collect(owner.download_file(stored.id))) == b"v2"
            assert (await owner.storage()).files.items >= 1
            assert (await owner.delete_file(stored.id)).deleted is True
            with pytest.raises(NotFound):
                await collect(owner.download_file(stored.id))

            assert "remember" in {t.name for t in await owner.tools()}
            saved = await owner.call_tool("remember", {"content": "async registry", "kind": "fact"})
            assert saved["content"] == "async registry"

            assert (await owner.connection_request(asked)).status == "pending"
            approved = await owner.approve_connection_request(asked, Grants())
            assert approved.status == "active"
            assert (await owner.deny_connection_request(refused)).id != approved.id

        url, org, project, carol = team.stack.api.url, team.org, team.project, team.carol.id
        async with connect_async(url, team.alice.session.key) as admin:
            assert len(await admin.members(org, project)) == 3
            assert (await admin.set_member_role(org, project, carol, "contributor")).role == (
                "contributor"
            )
            assert (await admin.remove_member(org, project, carol)).removed is True
            assert (await admin.add_member(org, project, carol, "viewer")).role == "viewer"
            org_now = await admin.set_org_entitlements(org, project_memory=True)
            assert org_now.entitlements["projectMemory"]["enabled"] is True

        async with connect_async(account.url, account.owner_token) as owner:
            deleted = await owner.delete_account("delete my Grove account")
            assert deleted.account_id == account.account_id

    asyncio.run(flow())


# The asyncio client


def test_async_notes_round_trip_and_list_over_pages(tenant: Tenant) -> None:
    async def flow() -> None:
        async with connect_async(tenant.client.base, tenant.client.key) as grove:
            saved = [await grove.remember(f"async note {i}") for i in range(5)]
            note = await grove.update(saved[0].id, content="deploy on tuesdays")
            assert (note.version, (await grove.get(note.id)).content) == (2, note.content)
            listed = [n.id async for n in grove.list_notes(limit=2)]
            assert sorted(map(str, listed)) == sorted(str(n.id) for n in saved)
            page = await grove.list_notes_page(limit=2)
            assert len(page.items) == 2 and page.next_cursor
            assert [i.memory.id for i in (await grove.search("tuesdays")).items] == [note.id]
            recalled = await grove.recall("tuesdays deploy")
            assert [i.memory.id for i in recalled.items] == [note.id]
            batch = await grove.save_batch([NewNote(content="batched")])
            assert [i.status for i in batch.items] == ["created"]
            forgotten = await grove.forget([note.id])
            assert [r.outcome for r in forgotten.results] == ["deleted"]
            exported = await collect(grove.export())
            assert sum(line["type"] == "memory" for line in exported) == 5

    asyncio.run(flow())


def test_async_errors_map_to_their_family(tenant: Tenant) -> None:
    async def flow() -> None:
        async with connect_async(tenant.client.base, tenant.client.key) as grove:
            with pytest.raises(NotFound) as missing:
                await grove.get(uuid.uuid4())
            assert (missing.value.status, missing.value.code) == (404, "not_found")
            assert missing.value.request_id
            with pytest.raises(ValidationError) as invalid:
                await grove.remember("   ")
            assert [d["field"] for d in invalid.value.details] == ["content"]
            with pytest.raises(PermissionDenied) as refused:
                await collect(grove.conversations())
            assert refused.value.code == "owner_session_required"

    asyncio.run(flow())


def test_async_a_429_is_waited_out_and_the_save_happens_once(tenant: Tenant) -> None:
    proxy = FaultyProxy(tenant.client.base, ["429"])

    async def flow() -> None:
        async with connect_async(proxy.url, tenant.client.key) as grove:
            started = time.monotonic()
            note = await grove.remember("after the wait")
            assert time.monotonic() - started >= 1.0  # the proxy's Retry-After: 1
            assert [n.id async for n in grove.list_notes()] == [note.id]

    try:
        asyncio.run(flow())
    finally:
        proxy.close()
    keys = [s.headers["idempotency-key"] for s in proxy.seen if s.method == "POST"]
    assert len(keys) == 2 and keys[0] == keys[1]
    assert {s.headers["user-agent"] for s in proxy.seen} == {USER_AGENT}


def test_async_owner_methods_reach_their_routes(account: Account) -> None:
    async def flow() -> None:
        async with connect_async(account.url, account.owner_token) as grove:
            note = await grove.remember(DEPLOY)
            answer = await grove.ask("When do we deploy the billing service?")
            assert answer.status == "answered"
            started = await grove.create_conversation()
            reply = await grove.add_turn(started.id, "When do we deploy?", expected_version=1)
            assert reply.turn.outcome == "answered"
            assert [c.id async for c in grove.search_conversations("deploy")] == [started.id]
            share = await grove.create_share("note", note.id)
            assert [s.id async for s in grove.shares()] == [share.id]

    asyncio.run(flow())


def test_async_proposals_imports_search_and_orgs_reach_their_routes(
    account: Account, newcomer_token: str
) -> None:
    again = "Every Tuesday we deploy the billing service with Argo CD."
    account.key.remember(DEPLOY)
    account.key.remember(again)
    lines = export_of(account.key)

    async def streamed() -> AsyncIterator[bytes]:
        for line in lines:
            yield line

    async def flow() -> None:
        async with connect_async(account.url, account.owner_token) as grove:
            hits = [i.memory.content async for i in grove.search_all("billing", limit=1)]
            assert sorted(hits) == sorted([DEPLOY, again])  # over two pages
            started = await grove.create_conversation()
            reply = await grove.add_turn(
                started.id, "When do we deploy the billing service?", expected_version=1
            )
            [proposal] = [p for p in reply.turn.proposals if p.change.action == "merge"]
            applied = await grove.apply_proposal(started.id, proposal.id)
            assert applied.proposal.state == "applied"
            assert await grove.apply_proposal(started.id, proposal.id) == applied
            undone = await grove.undo_proposal(started.id, proposal.id)
            assert undone.proposal.state == "undone"
            org = await grove.create_org("Acme")
            assert [o.id for o in await grove.orgs()] == [org.id]
            assert (await grove.org(org.id)).name == "Acme"
            project = await grove.create_project(org.id, "Rocket")
            assert [p.id for p in await grove.projects(org.id)] == [project.id]
            key = await grove.create_project_key(org.id, project.id, "reader")
            assert key.scopes == ["project_memory:read"]
            assert [k.id for k in await grove.project_keys(org.id, project.id)] == [key.id]
            assert (await grove.revoke_project_key(org.id, project.id, key.id)).revoked
        async with connect_async(account.url, newcomer_token) as other:
            status = await other.import_export(streamed())
            assert (status.state, status.counts.notes) == ("done", 2)
            assert await other.import_status(status.id) == status

    asyncio.run(flow())


# Paging


def test_listing_follows_next_cursor_over_250_notes(
    proxied: tuple[Grove, FaultyProxy],
) -> None:
    grove, proxy = proxied
    saved = set()
    for start in range(0, 250, 100):
        batch = [NewNote(content=f"note {i}") for i in range(start, min(start + 100, 250))]
        result = grove.save_batch(batch)
        assert {i.status for i in result.items} == {"created"}
        saved |= {i.memory.id for i in result.items if i.memory is not None}
    listed = [n.id for n in grove.list_notes(limit=100)]
    assert len(listed) == 250 and set(listed) == saved
    assert [s.method for s in proxy.seen].count("GET") == 3  # three pages, cursors followed


def test_search_all_follows_next_cursor_over_30_results(
    proxied: tuple[Grove, FaultyProxy],
) -> None:
    grove, proxy = proxied
    batch = grove.save_batch([NewNote(content=f"release checklist step {i}") for i in range(30)])
    saved = {i.memory.id for i in batch.items if i.memory is not None}
    found = [item.memory.id for item in grove.search_all("release checklist", limit=10)]
    assert len(found) == 30 and set(found) == saved
    assert [s.path for s in proxy.seen].count("/v1/memories/search") == 3


# Errors


def test_errors_map_to_their_family_with_code_and_request_id(tenant: Tenant, grove: Grove) -> None:
    note = grove.remember("a note")
    reader = tenant.key("reader", personal=True, all_notebooks=True, read_only=True)
    with connect(tenant.client.base, reader.key) as read_only:
        cases: list[tuple[Any, type[GroveError], int, str]] = [
            (lambda: grove.remember("   "), ValidationError, 400, "validation_error"),
            (lambda: read_only.remember("not mine to write"), PermissionDenied, 403, "forbidden"),
            (lambda: grove.get(uuid.uuid4()), NotFound, 404, "not_found"),
            (
                lambda: grove.update(note.id, content="b", expected_version=7),
                Conflict,
                409,
                "version_conflict",
            ),
            (lambda: grove.remember("x" * 70_000), PayloadTooLarge, 413, "payload_too_large"),
        ]
        for call, family, status, code in cases:
            with pytest.raises(family) as raised:
                call()
            assert (raised.value.status, raised.value.code) == (status, code)
            assert raised.value.request_id and raised.value.message
    with pytest.raises(ValidationError) as invalid:
        grove.remember("   ")
    assert [d["field"] for d in invalid.value.details] == ["content"]
    with connect(tenant.client.base, "grv_not_a_key") as stranger, pytest.raises(AuthError) as ex:
        stranger.get(note.id)
    assert (ex.value.status, ex.value.code) == (401, "unauthorized")


def test_replaying_a_save_of_a_forgotten_note_is_gone(grove: Grove) -> None:
    operation = uuid.uuid4()
    note = grove.remember("soon forgotten", operation_id=operation)
    assert grove.remember("soon forgotten", operation_id=operation).id == note.id  # replayed
    grove.forget([note.id])
    with pytest.raises(Gone) as gone:
        grove.remember("soon forgotten", operation_id=operation)
    assert (gone.value.status, gone.value.code) == (410, "gone")


# Retries


def test_a_429_is_waited_out_and_the_save_happens_once(
    proxied: tuple[Grove, FaultyProxy],
) -> None:
    grove, proxy = proxied
    faults(proxy, "429")
    started = time.monotonic()
    note = grove.remember("after the wait")
    assert time.monotonic() - started >= 1.0  # the proxy's Retry-After: 1
    keys = [s.headers["idempotency-key"] for s in proxy.seen]
    assert len(keys) == 2 and keys[0] == keys[1] == str(uuid.UUID(keys[0]))
    assert {s.headers["user-agent"] for s in proxy.seen} == {USER_AGENT}
    assert [n.id for n in grove.list_notes()] == [note.id]


def test_a_429_beyond_the_retries_or_the_longest_wait_is_raised(tenant: Tenant) -> None:
    proxy = FaultyProxy(tenant.client.base, ["429", "429"])
    try:
        with connect(proxy.url, tenant.client.key, max_retries=0) as once:
            with pytest.raises(RateLimited) as limited:
                once.remember("not now")
            assert (limited.value.retry_after, limited.value.code) == (1.0, "rate_limited")
        started = time.monotonic()
        with connect(proxy.url, tenant.client.key, max_retry_wait=0.5) as impatient:
            with pytest.raises(RateLimited):
                impatient.remember("not now either")
        assert time.monotonic() - started < 0.9
    finally:
        proxy.close()
    assert len(proxy.seen) == 2


def test_a_save_whose_answer_is_lost_is_resent_and_saved_once(
    proxied: tuple[Grove, FaultyProxy],
) -> None:
    grove, proxy = proxied
    faults(proxy, "drop")
    note = grove.remember("saved despite the reset")
    assert note.version == 1
    keys = [s.headers["idempotency-key"] for s in proxy.seen]
    assert len(keys) == 2 and keys[0] == keys[1]
    assert [n.id for n in grove.list_notes()] == [note.id]
    assert [r.version for r in grove.revisions(note.id).items] == [1]


def test_a_batch_whose_answer_is_lost_replays_its_items(
    proxied: tuple[Grove, FaultyProxy],
) -> None:
    grove, proxy = proxied
    faults(proxy, "drop")
    result = grove.save_batch([NewNote(content=f"batched {i}") for i in range(3)])
    assert [i.status for i in result.items] == ["replayed"] * 3
    assert proxy.seen[0].body == proxy.seen[1].body  # the same operationIds, resent
    assert "idempotency-key" not in proxy.seen[0].headers
    assert len(list(grove.list_notes())) == 3


def test_a_restore_whose_answer_is_lost_is_resent_and_done_once(
    proxied: tuple[Grove, FaultyProxy],
) -> None:
    grove, proxy = proxied
    note = grove.remember("first wording")
    grove.update(note.id, content="second wording")
    faults(proxy, "drop")
    restored = grove.restore(note.id, version=1)
    assert (restored.content, restored.version) == ("first wording", 3)
    keys = [s.headers["idempotency-key"] for s in proxy.seen[-2:]]
    assert len(keys) == 2 and keys[0] == keys[1]
    assert [r.version for r in grove.revisions(note.id).items] == [1, 2, 3]


def test_a_handoff_is_made_durable_through_restore(account: Account) -> None:
    handoff = account.key.remember("refunds next", kind="handoff", task_id="t-1")
    durable = account.key.restore(handoff.id, durable=True)
    assert (durable.kind, durable.retention_days, durable.expires_at) == ("fact", None, None)


# Drift from the api's document


def test_every_operation_of_the_apis_document_is_a_method_or_excluded(api_url: str) -> None:
    document = httpx.get(f"{api_url}/v1/openapi.json", timeout=30).json()
    assert uncovered(document) == []
    assert {(e.method, e.path) for e in ENDPOINTS} & set(EXCLUDED) == set()
    assert all(reason.strip() for reason in EXCLUDED.values())


def test_a_new_route_neither_called_nor_excluded_is_found(api_url: str) -> None:
    document = httpx.get(f"{api_url}/v1/openapi.json", timeout=30).json()
    grown = copy.deepcopy(document)
    grown["paths"]["/v1/widgets"] = {"get": {}, "parameters": []}
    grown["paths"]["/v1/files"]["put"] = {}
    assert uncovered(grown) == [
        "PUT /v1/files: neither a client method nor in EXCLUDED",
        "GET /v1/widgets: neither a client method nor in EXCLUDED",
    ]


#: The keys of an OpenAPI path item that are operations (the others are shared fields).
OPERATIONS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def uncovered(document: dict[str, Any]) -> list[str]:
    """Each operation of the document that no endpoint calls and ``EXCLUDED`` omits."""
    covered = {(e.method, e.path) for e in ENDPOINTS} | set(EXCLUDED)
    return [
        f"{method.upper()} {path}: neither a client method nor in EXCLUDED"
        for path, item in sorted(document["paths"].items())
        for method in item
        if method in OPERATIONS and (method.upper(), path) not in covered
    ]


def test_every_route_and_model_of_the_client_is_in_the_apis_document(api_url: str) -> None:
    document = httpx.get(f"{api_url}/v1/openapi.json", timeout=30).json()
    assert drift(document) == []


def test_drift_is_found_when_a_path_or_a_field_changes(api_url: str) -> None:
    document = httpx.get(f"{api_url}/v1/openapi.json", timeout=30).json()
    renamed = copy.deepcopy(document)
    paths = renamed["paths"]
    paths["/v1/memories/{memory_id}/history"] = paths.pop("/v1/memories/{memory_id}/revisions")
    del renamed["components"]["schemas"]["Memory"]["properties"]["version"]
    renamed["components"]["schemas"]["Memory"]["required"].remove("version")
    problems = drift(renamed)
    assert "GET /v1/memories/{memory_id}/revisions: not in the document" in problems
    assert "GET /v1/memories: Memory.version is not documented" in problems
    optional = copy.deepcopy(document)
    optional["components"]["schemas"]["Notebook"]["required"].remove("name")
    assert drift(optional) == [
        "POST /v1/notebooks: Notebook.name may be absent but the client requires it",
        "GET /v1/notebooks: Notebook.name may be absent but the client requires it",
        "GET /v1/notebooks/archived: Notebook.name may be absent but the client requires it",
    ]
    enveloped = copy.deepcopy(document)
    export = enveloped["paths"]["/v1/export"]["get"]["responses"]["200"]
    export["content"] = {"application/json": export["content"].popitem()[1]}
    del enveloped["paths"]["/v1/conversations/{conversation_id}/turns"]
    assert drift(enveloped) == [
        "GET /v1/export: answers an envelope but the client reads lines",
        "POST /v1/conversations/{conversation_id}/turns: not in the document",
    ]


def drift(document: dict[str, Any], endpoints: tuple[Endpoint, ...] = ENDPOINTS) -> list[str]:
    """What in the client's endpoints and models the document does not back."""
    problems = []
    for endpoint in endpoints:
        where = f"{endpoint.method} {endpoint.path}"
        operation = document["paths"].get(endpoint.path, {}).get(endpoint.method.lower())
        if operation is None:
            problems.append(f"{where}: not in the document")
            continue
        if endpoint.response is None:  # not an envelope: the route must say so too
            if "application/json" in operation["responses"]["200"]["content"]:
                problems.append(f"{where}: answers an envelope but the client reads lines")
            continue
        data = success_data(operation)
        problems += model_drift(endpoint.response, data, document, where)
    return problems


def success_data(operation: dict[str, Any]) -> dict[str, Any]:
    """The schema of ``data`` in the operation's first 2xx envelope."""
    status = min(code for code in operation["responses"] if code.startswith("2"))
    envelope = operation["responses"][status]["content"]["application/json"]["schema"]
    return envelope["properties"]["data"]  # type: ignore[no-any-return]


def model_drift(
    model: type[BaseModel], schema: dict[str, Any], document: dict[str, Any], where: str
) -> list[str]:
    """Each field of ``model`` must be documented, and required where the client needs it;
    fields holding models are compared with their own schemas."""
    schema = object_schema(schema, document)
    properties, required = schema.get("properties", {}), set(schema.get("required", []))
    problems = []
    for name, field in model.model_fields.items():
        wire = field.alias or name
        label = f"{where}: {model.__name__}.{wire}"
        if wire not in properties:
            problems.append(f"{label} is not documented")
            continue
        if field.is_required() and wire not in required:
            problems.append(f"{label} may be absent but the client requires it")
        nested = nested_model(field.annotation)
        if nested is not None:
            problems += model_drift(nested, properties[wire], document, where)
    return problems


def object_schema(schema: dict[str, Any], document: dict[str, Any]) -> dict[str, Any]:
    """The object schema behind ``$ref``, ``anyOf`` (with null) and array ``items``; a
    ``oneOf`` (a discriminated union) as one object: every option's properties, and
    those all of them require."""
    if "$ref" in schema:
        name = schema["$ref"].removeprefix("#/components/schemas/")
        return object_schema(document["components"]["schemas"][name], document)
    if "oneOf" in schema:
        options = [object_schema(option, document) for option in schema["oneOf"]]
        properties = {k: v for option in options for k, v in option.get("properties", {}).items()}
        required = set.intersection(*(set(option.get("required", [])) for option in options))
        return {"properties": properties, "required": sorted(required)}
    for option in schema.get("anyOf", []):
        if option.get("type") != "null":
            return object_schema(option, document)
    if schema.get("type") == "array":
        return object_schema(schema["items"], document)
    return schema


def nested_model(annotation: Any) -> type[BaseModel] | None:
    """The model a field holds, alone, optional or in a list."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is not None:
        for argument in typing.get_args(annotation):
            found = nested_model(argument)
            if found is not None:
                return found
    return None
