"""Enrichment (issue 23): classification suggestions and notebook briefs.

End to end: notes saved over REST, the real worker runs the jobs the triggers queue, the
API shows suggestions and briefs only to callers who see the notes, never across
tenants. Then, on a database no worker watches, the jobs run one at a time so that the
fences can be driven: an edit or a new note between a job's read and its write leaves
nothing stored, and the daily quota stops a job and puts it off to the next day.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from grove_auth.principal import Principal
from grove_cli import admin
from grove_contracts.enrichment import SuggestionQuery
from grove_contracts.notebooks import CreateNotebookRequest
from grove_contracts.notes import RememberRequest, UpdateRequest
from grove_db import embedded, queue
from grove_db.pool import transaction
from grove_memory.enrichment import enrichment
from grove_memory.inference import InferenceClient
from grove_memory.notes import notebooks, notes
from grove_memory.store import Store
from tests.support.chat import FakeChat, number_of, reply
from tests.support.clients import Client, data_of, error_of
from tests.support.files import uploaded
from tests.support.processes import Running, run_script, start_api, start_worker
from tests.support.tenants import Tenant, new_tenant, owner_of
from tests.support.topics import BILLING, DEPLOYS, UNFILED
from tests.support.waiting import wait_for


@pytest.fixture(scope="module")
def api(database: embedded.EmbeddedDatabase) -> Iterator[Running]:
    """A lexical api and a worker that polls often (briefs wait two seconds after a change)."""
    worker = start_worker(
        database, "127.0.0.1:1", GROVE_EMBEDDING_PROFILE="disabled", GROVE_WORKER_POLL_SECONDS="0.3"
    )
    running = start_api(
        {"GROVE_DATABASE_URL": database.runtime_url, "GROVE_EMBEDDING_PROFILE": "disabled"}
    )
    yield running
    running.stop()
    worker.stop()


@pytest.fixture
def tenant(database: embedded.EmbeddedDatabase, api: Running) -> Tenant:
    return new_tenant(database, api.url)


def notebook(client: Client, name: str) -> str:
    response = client.post("/v1/notebooks", {"name": name})
    assert response.status_code == 201, response.text
    return str(data_of(response)["id"])


def save(client: Client, content: str, notebook_id: str | None = None, kind: str = "fact") -> Any:
    body: dict[str, Any] = {"content": content, "kind": kind}
    if notebook_id:
        body["projectId"] = notebook_id
    response = client.post("/v1/memories", body)
    assert response.status_code == 201, response.text
    return data_of(response)


def filled(key: Client) -> tuple[str, str, Any]:
    """A billing and a deploys notebook with their notes, and an unfiled billing note."""
    billing, deploys = notebook(key, "billing"), notebook(key, "deploys")
    for text in BILLING:
        save(key, text, billing)
    for text in DEPLOYS:
        save(key, text, deploys)
    return billing, deploys, save(key, UNFILED)


def ready_brief(key: Client, notebook_id: str) -> Any:
    return wait_for(
        lambda: data_of(key.get(f"/v1/notebooks/{notebook_id}/brief")),
        lambda b: b["status"] == "ready",
    )


def suggested(key: Client) -> Any:
    return wait_for(lambda: data_of(key.get("/v1/suggestions")), lambda p: bool(p["items"]))


def test_an_unfiled_note_is_offered_the_notebook_of_its_neighbours(tenant: Tenant) -> None:
    key = tenant.client
    billing, _, note = filled(key)
    page = suggested(key)
    (suggestion,) = page["items"]
    assert suggestion["memoryId"] == note["id"] and suggestion["version"] == 1
    # The note as it is, to show without reading it again (the website's Suggestions page).
    assert (suggestion["content"], suggestion["noteKind"]) == (note["content"], note["kind"])
    assert suggestion["projectId"] == billing and suggestion["confidence"] >= 0.5
    assert suggestion["evidence"] and all(
        data_of(key.get(f"/v1/memories/{e['id']}"))["projectId"] == billing
        for e in suggestion["evidence"]
    )
    # Nothing was applied: the note is still unfiled until its owner moves it.
    assert data_of(key.get(f"/v1/memories/{note['id']}"))["projectId"] is None
    moved = key.patch(f"/v1/memories/{note['id']}", {"projectId": billing, "expectedVersion": 1})
    assert moved.status_code == 200, moved.text
    assert data_of(key.get("/v1/suggestions"))["items"] == []


def test_a_notebook_brief_quotes_its_notes_and_follows_their_changes(tenant: Tenant) -> None:
    key = tenant.client
    billing = notebook(key, "billing")
    saved = [save(key, text, billing) for text in BILLING]
    brief = ready_brief(key, billing)
    assert brief["notes"] == brief["madeFrom"] == 3 and brief["generator"] == "extractive"
    contents = {n["id"]: n["content"] for n in saved}
    assert brief["citations"]
    for cited in brief["citations"]:
        assert contents[cited["id"]][cited["start"] : cited["end"]] == cited["quote"]
        assert f"- {cited['quote']}" in brief["text"]
    # A quoted note is forgotten: its words are withheld at once, then a new brief comes.
    gone = brief["citations"][0]["id"]
    assert key.post("/v1/memories/forget", {"ids": [gone]}).status_code == 200
    now = data_of(key.get(f"/v1/notebooks/{billing}/brief"))
    assert now["status"] in ("pending", "ready") and gone not in str(now)
    again = ready_brief(key, billing)
    assert again["madeFrom"] == 2 and gone not in {c["id"] for c in again["citations"]}
    empty = notebook(key, "empty")
    assert data_of(key.get(f"/v1/notebooks/{empty}/brief"))["status"] == "empty"


def test_briefs_and_suggestions_stay_inside_grants_and_tenants(
    tenant: Tenant, api: Running, database: embedded.EmbeddedDatabase
) -> None:
    key = tenant.client
    billing, deploys, note = filled(key)
    # Enrichment has run (else every check below would pass on nothing): the owner's key
    # sees the suggestion for the unfiled note and both notebooks' briefs.
    (suggestion,) = suggested(key)["items"]
    assert (suggestion["memoryId"], suggestion["projectId"]) == (note["id"], billing)
    ready_brief(key, billing)
    deploys_brief = ready_brief(key, deploys)
    other = new_tenant(database, api.url).client
    for path in (f"/v1/notebooks/{billing}/brief", f"/v1/notebooks/{uuid.uuid4()}/brief"):
        response = other.get(path)
        assert response.status_code == 404 and error_of(response)["code"] == "not_found"
    assert data_of(other.get("/v1/suggestions"))["items"] == []
    # A key granted only the deploys notebook: its brief, not billing's, no personal notes.
    only_deploys = tenant.key(personal=False, notebook_ids=[uuid.UUID(deploys)])
    assert only_deploys.get(f"/v1/notebooks/{billing}/brief").status_code == 404
    assert data_of(only_deploys.get(f"/v1/notebooks/{deploys}/brief")) == deploys_brief
    assert data_of(only_deploys.get("/v1/suggestions"))["items"] == []
    # A key granted personal notes only sees the note, not the notebook suggested for it.
    personal = tenant.key(personal=True)
    assert data_of(personal.get("/v1/suggestions"))["items"] == []
    bad = key.get("/v1/suggestions", params={"limit": 101})
    assert bad.status_code == 400 and error_of(bad)["code"] == "validation_error"


def test_grove_enrich_reset_and_reindex_make_them_again(
    tenant: Tenant, database: embedded.EmbeddedDatabase
) -> None:
    key = tenant.client
    billing, _, _ = filled(key)
    first = ready_brief(key, billing)
    suggested(key)
    env = {"GROVE_MIGRATION_DATABASE_URL": database.migration_url}
    account = str(tenant.account_id)
    reset = run_script("grove", "enrich", "reset", "--account", account, env=env)
    assert reset.returncode == 0, reset.stderr
    assert "suggestions dropped: 1, briefs dropped: 2, jobs queued: 3" in reset.stdout
    again = ready_brief(key, billing)
    assert again["generatedAt"] > first["generatedAt"] and again["text"] == first["text"]
    suggested(key)
    file_id = uploaded(
        key, b"# Runbook\n\nRestart the gateway at two.", "text/markdown", name="notes.md"
    )["id"]
    ready = wait_for(
        lambda: data_of(key.get(f"/v1/files/{file_id}")), lambda f: f["indexing"] == "ready"
    )
    assert ready["passages"] == 1
    reindex = run_script("grove", "enrich", "reindex", "--files", "--account", account, env=env)
    assert reindex.returncode == 0, reindex.stderr
    assert "files queued: 1" in reindex.stdout and "briefs dropped" not in reindex.stdout
    assert data_of(key.get(f"/v1/files/{file_id}"))["indexing"] in ("pending", "ready")
    wait_for(lambda: data_of(key.get(f"/v1/files/{file_id}")), lambda f: f["indexing"] == "ready")
    missing = run_script("grove", "enrich", "reset", "--account", str(uuid.uuid4()), env=env)
    assert missing.returncode == 1 and "no such account" in missing.stderr


@pytest.fixture
def quiet_owner(quiet: tuple[str, Any]) -> tuple[Store, Principal, Any]:
    """An account on a fresh database no worker watches, its owner and the pool."""
    url, pool = quiet
    account = admin.create_account(embedded.role_url(url, embedded.MIGRATION_ROLE), "enrich")
    owner = owner_of(account)
    return Store(pool=pool, cursor_secret=b"x" * 32), owner, pool


def claim(pool: Any, kind: str) -> list[queue.Job]:
    later = datetime.now(UTC) + timedelta(seconds=5)  # past the triggers' short delay
    return queue.claim(pool, "test", None, 10, 60, [kind], now=later)


def remember(store: Store, owner: Principal, content: str, notebook_id: Any = None) -> Any:
    request = RememberRequest(content=content, kind="fact", projectId=notebook_id)
    return notes.remember(store, owner, request).memory


def filed(store: Store, owner: Principal) -> tuple[Any, Any]:
    (billing, _) = notebooks.create_notebook(store, owner, CreateNotebookRequest(name="billing"))
    (ops, _) = notebooks.create_notebook(store, owner, CreateNotebookRequest(name="deploys"))
    for text in BILLING:
        remember(store, owner, text, billing.id)
    for text in DEPLOYS:
        remember(store, owner, text, ops.id)
    return billing, ops


def test_a_suggestion_computed_before_an_edit_is_not_stored(
    quiet_owner: tuple[Store, Principal, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, owner, pool = quiet_owner
    billing, _ = filed(store, owner)
    note = remember(store, owner, UNFILED)
    real = enrichment.suggest

    def edited_meanwhile(row: dict[str, Any], neighbours: Any) -> Any:
        notes.update_memory(
            store, owner, note.id, UpdateRequest(content=UNFILED + " Done.", expectedVersion=1)
        )
        return real(row, neighbours)

    monkeypatch.setattr(enrichment, "suggest", edited_meanwhile)
    (job,) = claim(pool, queue.CLASSIFY_NOTES)
    done = enrichment.classify(pool, "test", job, quota=100)
    assert (done.result, done.stored, done.stale) == ("stored", 0, 1)
    monkeypatch.setattr(enrichment, "suggest", real)
    # The edit queued the next job, which classifies version 2.
    (job,) = claim(pool, queue.CLASSIFY_NOTES)
    assert enrichment.classify(pool, "test", job, quota=100).stored == 1
    page = enrichment.list_suggestions(store, owner, SuggestionQuery())
    assert [(s.memoryId, s.version, s.projectId) for s in page.items] == [(note.id, 2, billing.id)]


def test_a_brief_made_while_a_note_arrives_is_not_stored(
    quiet_owner: tuple[Store, Principal, Any],
) -> None:
    store, owner, pool = quiet_owner
    billing, _ = filed(store, owner)
    jobs = {j.payload["notebookId"]: j for j in claim(pool, queue.BRIEF_NOTEBOOK)}

    def added_meanwhile(sources: Any) -> Any:
        remember(store, owner, "Acme pays by bank transfer only.", billing.id)
        return enrichment.brief_of(sources)

    done = enrichment.brief(pool, "test", jobs[str(billing.id)], 100, added_meanwhile)
    assert (done.result, done.stored) == ("stale", 0)
    assert enrichment.read_brief(store, owner, billing.id).status == "pending"
    (job,) = claim(pool, queue.BRIEF_NOTEBOOK)
    assert enrichment.brief(pool, "test", job, quota=100).result == "stored"
    brief = enrichment.read_brief(store, owner, billing.id)
    assert (brief.status, brief.notes, brief.madeFrom) == ("ready", 4, 4)
    # Row-level security: under another account, the runtime role sees none of it.
    with transaction(pool, owner.account_id) as conn:
        assert conn.execute("SELECT count(*) AS n FROM notebook_briefs").fetchone() == {"n": 1}
    with transaction(pool, uuid.uuid4()) as conn:
        for table in ("notebook_briefs", "note_suggestions", "account_enrichment"):
            assert conn.execute(f"SELECT count(*) AS n FROM {table}").fetchone() == {"n": 0}
        assert conn.execute("DELETE FROM notebook_briefs").rowcount == 0


def test_the_daily_quota_stops_enrichment_until_the_next_day(
    quiet_owner: tuple[Store, Principal, Any],
) -> None:
    store, owner, pool = quiet_owner
    filed(store, owner)
    for text in (UNFILED, "Deploy freezes: production deploys wait for Monday.", "Buy milk."):
        remember(store, owner, text)
    briefs = claim(pool, queue.BRIEF_NOTEBOOK)
    assert len(briefs) == 2
    assert enrichment.brief(pool, "test", briefs[0], quota=2).result == "stored"
    (job,) = claim(pool, queue.CLASSIFY_NOTES)
    done = enrichment.classify(pool, "test", job, quota=2)
    assert (done.result, done.stored) == ("over_quota", 1)  # one unit left of two
    assert enrichment.brief(pool, "test", briefs[1], quota=2).result == "over_quota"
    with transaction(pool, owner.account_id) as conn:
        waiting = conn.execute(
            "SELECT kind, run_after FROM jobs WHERE status = 'queued' ORDER BY kind"
        ).fetchall()
        used = conn.execute("SELECT used FROM account_enrichment").fetchone()
    tomorrow = datetime.combine(
        datetime.now(UTC).date() + timedelta(days=1), datetime.min.time(), tzinfo=UTC
    )
    assert [(w["kind"], w["run_after"]) for w in waiting] == [
        (queue.BRIEF_NOTEBOOK, tomorrow),
        (queue.CLASSIFY_NOTES, tomorrow),
    ]
    assert used is not None and used["used"] == 2


def test_an_expired_note_leaves_the_brief_and_its_sweep_queues_the_next(
    quiet_owner: tuple[Store, Principal, Any],
) -> None:
    store, owner, pool = quiet_owner
    billing, _ = filed(store, owner)
    for job in claim(pool, queue.BRIEF_NOTEBOOK):
        assert enrichment.brief(pool, "test", job, quota=100).result == "stored"
    brief = enrichment.read_brief(store, owner, billing.id)
    assert brief.status == "ready"
    quoted = brief.citations[0].id
    with transaction(pool, owner.account_id) as conn:
        conn.execute(
            "UPDATE memories SET expires_at = now() - interval '1 second' WHERE id = %s",
            (quoted,),
        )
    hidden = enrichment.read_brief(store, owner, billing.id)
    assert (hidden.status, hidden.text, hidden.notes) == ("pending", None, 2)
    assert claim(pool, queue.BRIEF_NOTEBOOK) == []  # an expiry is not a write ...
    with transaction(pool, owner.account_id) as conn:
        conn.execute("UPDATE memories SET swept_at = now() WHERE id = %s", (quoted,))
    (job,) = claim(pool, queue.BRIEF_NOTEBOOK)  # ... but its sweep's mark is
    assert enrichment.brief(pool, "test", job, quota=100).result == "stored"
    again = enrichment.read_brief(store, owner, billing.id)
    assert again.status == "ready" and quoted not in {c.id for c in again.citations}
    # Every note of the notebook is deleted: its brief goes with them.
    with transaction(pool, owner.account_id) as conn:
        conn.execute("UPDATE memories SET deleted_at = now() WHERE project_id = %s", (billing.id,))
    (job,) = claim(pool, queue.BRIEF_NOTEBOOK)
    assert enrichment.brief(pool, "test", job, quota=100).result == "empty"
    with transaction(pool, owner.account_id) as conn:
        left = conn.execute(
            "SELECT count(*) AS n FROM notebook_briefs WHERE project_id = %s", (billing.id,)
        ).fetchone()
    assert left == {"n": 0}


def test_a_model_writes_the_brief_when_configured_and_extractive_stands_in(
    quiet_owner: tuple[Store, Principal, Any], openai_chat: tuple[FakeChat, Running]
) -> None:
    store, owner, pool = quiet_owner
    fake, ask = openai_chat
    billing, _ = filed(store, owner)
    brief_jobs = {j.payload["notebookId"]: j for j in claim(pool, queue.BRIEF_NOTEBOOK)}
    writer = enrichment.AnswerWriter(InferenceClient(ask.url, "disabled"), timeout=10)
    summary = "Acme is invoiced monthly; accounts payable gets the invoices."
    fake.reset(
        lambda body: reply(
            summary, (number_of(body, BILLING[1]), "Acme invoices go to accounts payable")
        )
    )
    done = enrichment.brief(pool, "test", brief_jobs[str(billing.id)], 100, writer)
    assert (done.result, done.fell_back) == ("stored", False)
    assert enrichment.BRIEF_QUESTION in fake.seen[0].prompt
    brief = enrichment.read_brief(store, owner, billing.id)
    assert (brief.status, brief.generator, brief.text) == ("ready", "openai", summary)
    (cited,) = brief.citations
    assert cited.quote == "Acme invoices go to accounts payable"
    assert BILLING[1][cited.start : cited.end] == cited.quote
    # The model quotes nothing that is in the notes: the extractive brief stands in.
    remember(store, owner, "Acme pays by bank transfer only.", billing.id)
    fake.reset(reply("Made up.", (1, "words that are in no note")))
    (job,) = claim(pool, queue.BRIEF_NOTEBOOK)
    done = enrichment.brief(pool, "test", job, 100, writer)
    assert (done.result, done.fell_back) == ("stored", True)
    brief = enrichment.read_brief(store, owner, billing.id)
    assert brief.generator == "extractive" and brief.text and brief.text.startswith("- ")
    # grove-ask cannot be reached at all: the same.
    remember(store, owner, "Acme's invoices are in euros.", billing.id)
    gone = enrichment.AnswerWriter(InferenceClient("127.0.0.1:1", "disabled"), timeout=2)
    (job,) = claim(pool, queue.BRIEF_NOTEBOOK)
    assert enrichment.brief(pool, "test", job, 100, gone).fell_back
    assert enrichment.read_brief(store, owner, billing.id).status == "ready"


def filing(body: dict[str, Any], notebook: str, kind: str | None) -> str:
    """A model reply that files evidence 1 into the listed ``notebook`` (by its number)."""
    found = re.search(
        r"(\d+)\. " + re.escape(notebook) + "\n", body["messages"][1]["content"] + "\n"
    )
    assert found, "the notebook is not in the prompt"
    change = {"action": "edit", "summary": f"File it under {notebook}", "note": 1}
    change |= {"notebook": int(found.group(1))} | ({"kind": kind} if kind else {})
    return json.dumps({"answer": "", "citations": [], "proposals": [change]})


def test_a_model_classifies_when_configured_and_the_vote_stands_in(
    quiet_owner: tuple[Store, Principal, Any], openai_chat: tuple[FakeChat, Running]
) -> None:
    store, owner, pool = quiet_owner
    fake, ask = openai_chat
    billing, deploys = filed(store, owner)
    note = remember(store, owner, UNFILED)
    classifier = enrichment.AnswerClassifier(InferenceClient(ask.url, "disabled"), timeout=10)
    # The model files the note elsewhere than its neighbours vote: its choice is stored.
    fake.reset(lambda body: filing(body, "deploys", "decision"))
    (job,) = claim(pool, queue.CLASSIFY_NOTES)
    done = enrichment.classify(pool, "test", job, 100, classifier)
    assert (done.result, done.stored, done.fallbacks) == ("stored", 1, 0)
    assert enrichment.CLASSIFY_QUESTION in fake.seen[0].prompt and UNFILED in fake.seen[0].prompt
    (chosen,) = enrichment.list_suggestions(store, owner, SuggestionQuery()).items
    assert (chosen.memoryId, chosen.projectId, chosen.kind) == (note.id, deploys.id, "decision")
    assert chosen.evidence == []  # no neighbour is in that notebook
    # The model proposes nothing usable: the neighbours' vote stands in.
    notes.update_memory(
        store, owner, note.id, UpdateRequest(content=UNFILED + " Today.", expectedVersion=1)
    )
    fake.reset(json.dumps({"answer": "", "citations": []}))
    (job,) = claim(pool, queue.CLASSIFY_NOTES)
    done = enrichment.classify(pool, "test", job, 100, classifier)
    assert (done.stored, done.fallbacks) == (1, 1)
    (voted,) = enrichment.list_suggestions(store, owner, SuggestionQuery()).items
    assert (voted.version, voted.projectId) == (2, billing.id) and voted.confidence >= 0.5
    # grove-ask cannot be reached at all: the same.
    notes.update_memory(
        store, owner, note.id, UpdateRequest(content=UNFILED + " Again.", expectedVersion=2)
    )
    gone = enrichment.AnswerClassifier(InferenceClient("127.0.0.1:1", "disabled"), timeout=2)
    (job,) = claim(pool, queue.CLASSIFY_NOTES)
    assert enrichment.classify(pool, "test", job, 100, gone).fallbacks == 1
    (voted,) = enrichment.list_suggestions(store, owner, SuggestionQuery()).items
    assert (voted.version, voted.projectId) == (3, billing.id)
