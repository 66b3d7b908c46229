"""Conversations over real HTTP, real PostgreSQL and a real grove-ask (extractive, lexical
only), with owner sessions signed by a test identity provider. Lease expiry, crashes and
a source deleted during generation drive ``grove_memory.ask.turns`` in-process
against the same database and grove-ask, with an injected clock."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest
import requests

from grove_auth.errors import Unauthorized
from grove_contracts.conversations import TurnRequest
from grove_memory.ask.ask import InferenceUnavailable
from grove_memory.ask.turns import ContextUnavailable, GeneratorChanged, TurnInProgress, add_turn
from grove_memory.errors import NotFound
from grove_memory.inference import EvidenceText, Generated, InferenceClient, InferenceError
from grove_memory.store import Store
from tests.support.clients import Client, data_of, error_of, race
from tests.support.conversations import Owner, Stack, new_owner, owner, stack, store
from tests.support.owners import ISSUER
from tests.support.processes import start_ask

__all__ = ["owner", "stack", "store"]  # the fixtures tests name

DEPLOY = "We deploy the billing service with Argo CD every Tuesday."
OWNER_NOTE = "Priya maintains the billing service."


def superuser(stack: Stack) -> psycopg.Connection[Any]:
    return psycopg.connect(stack.database.grove_superuser_url)


def revision_content(client: Client, note_id: str, version: int) -> str:
    revisions = data_of(client.get(f"/v1/memories/{note_id}/revisions"))["items"]
    return next(r["content"] for r in revisions if r["version"] == version)  # type: ignore[no-any-return]


def assert_cited_exactly(client: Client, answer: dict[str, Any]) -> None:
    assert answer["citations"]
    for citation in answer["citations"]:
        content = revision_content(client, citation["noteId"], citation["version"])
        assert content[citation["start"] : citation["end"]] == citation["quote"]


def cited(turn: dict[str, Any]) -> set[str]:
    return {c["noteId"] for c in (turn["answer"] or {"citations": []})["citations"]}


def sourced(turn: dict[str, Any]) -> set[str]:
    return {s["noteId"] for s in turn["sources"]}


# --- conversations --------------------------------------------------------------------


def test_create_is_idempotent_by_client_id_and_other_bodies_conflict(owner: Owner) -> None:
    notebook = owner.tenant.notebook("billing")
    body = {"id": str(uuid.uuid4()), "projectId": notebook, "title": "Billing questions"}
    first = owner.session.post("/v1/conversations", body)
    assert first.status_code == 201, first.text
    created = data_of(first)
    assert created["projectId"] == notebook and created["allScopes"] is False
    assert (created["includePersonal"], created["version"], created["turnCount"]) == (False, 1, 0)
    again = owner.session.post("/v1/conversations", body)
    assert again.status_code == 200 and data_of(again) == created
    other = owner.session.post("/v1/conversations", {**body, "title": "Something else"})
    assert other.status_code == 409
    assert error_of(other)["code"] == "idempotency_conflict"
    everywhere = owner.create()
    assert (everywhere["allScopes"], everywhere["projectId"], everywhere["includePersonal"]) == (
        True,
        None,
        True,
    )
    unknown = owner.session.post(
        "/v1/conversations", {"id": str(uuid.uuid4()), "projectId": str(uuid.uuid4())}
    )
    assert unknown.status_code == 404


def test_keys_and_agents_get_owner_session_required_on_every_route(owner: Owner) -> None:
    conversation = owner.create()["id"]
    key = owner.key
    path = f"/v1/conversations/{conversation}"
    body = {"id": str(uuid.uuid4()), "query": "anything", "expectedVersion": 1}
    calls = [
        key.post("/v1/conversations", {"id": str(uuid.uuid4())}),
        key.get("/v1/conversations"),
        key.get(path),
        owner.delete(path, key),
        key.post(f"{path}/turns", body),
        key.post("/v1/conversations/search", {}),
    ]
    for response in calls:
        assert response.status_code == 403, response.text
        assert error_of(response)["code"] == "owner_session_required"
    assert owner.get(conversation).status_code == 200  # the delete above did nothing


def test_a_turn_answers_with_verified_citations_and_is_stored(owner: Owner) -> None:
    note = owner.key.save(DEPLOY)
    owner.key.save("The office plant needs water on Fridays.")
    conversation = owner.create()
    reply = owner.answered(conversation["id"], "When do we deploy the billing service?", 1)
    turn = reply["turn"]
    assert (turn["status"], turn["outcome"], turn["ordinal"]) == ("completed", "answered", 1)
    assert turn["answer"]["generator"] == "extractive" and turn["answer"]["format"] == "plain"
    assert DEPLOY in turn["answer"]["text"] and "plant" not in turn["answer"]["text"]
    assert cited(turn) == {note["id"]}
    assert_cited_exactly(owner.key, turn["answer"])
    assert note["id"] in sourced(turn) and turn["contextCoverage"] is None
    assert reply["conversation"]["version"] == 2 and reply["conversation"]["turnCount"] == 1
    assert reply["conversation"]["title"] == "When do we deploy the billing service?"
    stored = data_of(owner.get(conversation["id"]))
    assert stored["turns"] == [turn] and stored["version"] == 2
    # Questions and answers never become notes.
    listed = data_of(owner.key.get("/v1/memories"))["items"]
    assert len(listed) == 2


NOTE_ROWS = """
    SELECT (SELECT count(*) FROM memories WHERE account_id = %(a)s) AS notes,
           (SELECT count(*) FROM memory_revisions WHERE account_id = %(a)s) AS revisions,
           (SELECT count(*) FROM memory_revisions WHERE account_id = %(a)s
              AND (content LIKE %(q)s OR content LIKE %(answer)s)) AS asked
"""


def test_asking_and_conversation_turns_store_no_question_or_answer_as_a_note(
    stack: Stack, owner: Owner
) -> None:
    owner.key.save(DEPLOY)
    question = f"When do we deploy the billing service {uuid.uuid4().hex[:6]}?"

    def rows() -> dict[str, int]:
        keys = {"a": owner.tenant.account_id, "q": f"%{question}%", "answer": f"%{DEPLOY}%"}
        with superuser(stack) as conn:
            found = conn.execute(NOTE_ROWS, keys).fetchone()
        assert found is not None
        return {"notes": found[0], "revisions": found[1], "asked": found[2]}

    before = rows()
    assert before == {"notes": 1, "revisions": 1, "asked": 1}  # the note's own revision
    for client in (owner.key, owner.session):
        asked = client.post("/v1/ask", {"query": question})
        assert asked.status_code == 200 and data_of(asked)["status"] == "answered", asked.text
    conversation = owner.create()
    turn = owner.answered(conversation["id"], question, 1)["turn"]
    assert turn["outcome"] == "answered" and DEPLOY in turn["answer"]["text"]
    assert rows() == before


def test_a_retried_turn_returns_the_same_turn_and_another_body_conflicts(owner: Owner) -> None:
    owner.key.save(DEPLOY)
    conversation = owner.create()["id"]
    body = {"id": str(uuid.uuid4()), "query": "When do we deploy?", "expectedVersion": 1}
    path = f"/v1/conversations/{conversation}/turns"
    first = owner.session.post(path, body)
    assert first.status_code == 201, first.text
    again = owner.session.post(path, body)
    assert again.status_code == 200
    assert data_of(again) == data_of(first)  # same attempt, same completion time
    assert data_of(again)["turn"]["attempts"] == 1
    other = owner.session.post(path, {**body, "query": "When do we deploy to staging?"})
    assert other.status_code == 409 and error_of(other)["code"] == "idempotency_conflict"
    assert data_of(owner.get(conversation))["version"] == 2


def test_a_stale_expected_version_conflicts_without_advancing(owner: Owner) -> None:
    owner.key.save(DEPLOY)
    conversation = owner.create()["id"]
    owner.answered(conversation, "When do we deploy?", 1)
    stale = owner.turn(conversation, "Who deploys?", 1)
    assert stale.status_code == 409 and error_of(stale)["code"] == "version_conflict"
    ahead = owner.turn(conversation, "Who deploys?", 3)
    assert ahead.status_code == 409
    after = data_of(owner.get(conversation))
    assert (after["version"], after["turnCount"]) == (2, 1)
    owner.answered(conversation, "Who deploys?", 2)


def test_unavailable_selectors_answer_context_unavailable_before_advancing(
    stack: Stack, owner: Owner
) -> None:
    stranger = new_owner(stack)
    foreign_note = stranger.key.save("someone else's note")["id"]
    foreign_notebook = stranger.tenant.notebook("theirs")
    deleted = owner.key.save("forgotten soon")["id"]
    owner.key.post("/v1/memories/forget", {"ids": [deleted]})
    archived = owner.key.save("archived soon")["id"]
    assert owner.key.post("/v1/tools/archive_memories", {"ids": [archived]}).ok
    gone_notebook = owner.tenant.notebook("gone")
    preview = data_of(owner.session.get(f"/v1/notebooks/{gone_notebook}/subtree"))
    removed = owner.session.post(
        f"/v1/notebooks/{gone_notebook}/delete", {"fingerprint": preview["fingerprint"]}
    )
    assert removed.status_code == 200, removed.text
    good = owner.key.save(DEPLOY)["id"]
    conversation = owner.create()["id"]
    for context in (
        {"notes": [str(uuid.uuid4())]},
        {"notes": [good, foreign_note]},
        {"notes": [deleted]},
        {"notes": [archived], "only": True},
        {"notebooks": [foreign_notebook]},
        {"notes": [good], "notebooks": [gone_notebook]},
    ):
        refused = owner.turn(conversation, "When do we deploy?", 1, context=context)
        assert refused.status_code == 409, (context, refused.text)
        assert error_of(refused)["code"] == "context_unavailable"
    after = data_of(owner.get(conversation))
    assert (after["version"], after["turnCount"], after["turns"]) == (1, 0, [])


def test_selector_limits_hold_at_their_boundaries(owner: Owner) -> None:
    notes = [owner.key.save(f"Fact {i}: the deploy window is Tuesday.")["id"] for i in range(13)]
    notebooks = [owner.tenant.notebook(f"notebook {i}") for i in range(7)]
    conversation = owner.create()["id"]
    contexts: list[dict[str, Any]] = [
        {"notes": notes},  # 13
        {"notebooks": notebooks},  # 7
        {"notes": [notes[0], notes[0]]},
        {"notebooks": [notebooks[0], notebooks[0]]},
        {"notes": [], "notebooks": []},
        {"only": True},
        {"notes": ["not-a-uuid"]},
    ]
    for context in contexts:
        refused = owner.turn(conversation, "When is the deploy window?", 1, context=context)
        assert refused.status_code == 400, (context, refused.text)
        assert error_of(refused)["code"] == "validation_error"
    too_long = owner.turn(conversation, "x" * 6001, 1)
    assert too_long.status_code == 400
    reply = owner.answered(
        conversation, "When is the deploy window?", 1, context={"notes": notes[:12]}
    )
    assert reply["turn"]["contextCoverage"] == {"considered": 12, "available": 12}
    assert reply["turn"]["context"] == {"notes": notes[:12], "notebooks": [], "only": False}
    reply = owner.answered(conversation, "When?", 2, context={"notebooks": notebooks[:6]})
    assert reply["turn"]["contextCoverage"] == {"considered": 0, "available": 0}
    longest = owner.answered(conversation, "y" * 6000, 3, format="markdown")
    assert longest["turn"]["outcome"] == "no_evidence" and longest["turn"]["answer"] is None


def test_strict_context_uses_only_the_selection_with_bounded_notebook_retrieval(
    owner: Owner,
) -> None:
    big = owner.tenant.notebook("planets")
    for i in range(14):
        owner.key.save(f"Planet report {i}: the planet has rings.", projectId=big)
    zorblax = owner.key.save("The planet Zorblax is teal.", projectId=big)["id"]
    elsewhere = owner.key.save("The planet Zorblax is red, says the old almanac.")["id"]
    chosen = owner.key.save("Zorblax orbits a small star.")["id"]
    conversation = owner.create()["id"]
    strict = owner.answered(
        conversation,
        "Which colour is the planet Zorblax?",
        1,
        context={"notes": [chosen], "notebooks": [big], "only": True},
    )["turn"]
    assert strict["contextCoverage"] == {"considered": 12, "available": 16}
    assert elsewhere not in sourced(strict) and chosen in sourced(strict)
    assert zorblax in sourced(strict) and len(strict["sources"]) == 12
    assert strict["outcome"] == "answered" and elsewhere not in cited(strict)
    assert "teal" in strict["answer"]["text"]
    # Without strict mode, scoped retrieval adds the rest of the account's evidence.
    loose = owner.answered(
        conversation,
        "Which colour is the planet Zorblax really?",
        2,
        context={"notes": [chosen]},
    )["turn"]
    assert {chosen, elsewhere} <= sourced(loose)
    assert loose["contextCoverage"] == {"considered": 1, "available": 1}


def test_references_resolve_against_earlier_questions(owner: Owner) -> None:
    note = owner.key.save(OWNER_NOTE)["id"]
    conversation = owner.create()["id"]
    first = owner.answered(conversation, "Who maintains the billing service?", 1)["turn"]
    assert cited(first) == {note}
    follow_up = owner.answered(conversation, "What about it?", 2)["turn"]
    assert follow_up["outcome"] == "answered" and cited(follow_up) == {note}
    # Strict mode leaves earlier questions out: the same words select nothing in the note.
    strict = owner.answered(
        conversation, "What about it?", 3, context={"notes": [note], "only": True}
    )["turn"]
    assert strict["outcome"] == "no_evidence" and sourced(strict) == {note}
    # The same words with no history find nothing to answer from.
    alone = owner.answered(owner.create()["id"], "What about it?", 1)["turn"]
    assert alone["outcome"] == "no_evidence" and alone["answer"] is None


def test_a_conversation_holds_one_hundred_turns(stack: Stack, owner: Owner) -> None:
    owner.key.save(DEPLOY)
    conversation = owner.create()["id"]
    with superuser(stack) as conn:
        conn.execute(
            "INSERT INTO conversation_turns (account_id, conversation_id, id, ordinal, query,"
            " format, request_hash, status, outcome, completed_at)"
            " SELECT %s, %s, gen_random_uuid(), n, 'question ' || n, 'plain', 'x',"
            " 'completed', 'no_evidence', now() FROM generate_series(1, 99) AS n",
            (owner.tenant.account_id, conversation),
        )
        conn.execute("UPDATE conversations SET version = 100 WHERE id = %s", (conversation,))
    hundredth = owner.answered(conversation, "When do we deploy?", 100)
    assert hundredth["turn"]["ordinal"] == 100 and hundredth["conversation"]["turnCount"] == 100
    full = owner.turn(conversation, "And again?", 101)
    assert full.status_code == 409 and error_of(full)["code"] == "conversation_full"
    assert data_of(owner.get(conversation))["turnCount"] == 100


def test_concurrent_submissions_yield_one_winner_and_one_conflict(owner: Owner) -> None:
    owner.key.save(DEPLOY)
    conversation = owner.create()["id"]
    token = owner.stack.provider.token(owner.subject)
    url = f"{owner.stack.api.url}/v1/conversations/{conversation}/turns"

    def submit(query: str) -> Any:
        body = {"id": str(uuid.uuid4()), "query": query, "expectedVersion": 1}
        return lambda s: s.post(
            url, json=body, headers={"Authorization": f"Bearer {token}"}, timeout=30
        )

    responses = race([submit("When do we deploy?"), submit("Who deploys?")])
    assert sorted(r.status_code for r in responses) == [201, 409]
    loser = next(r for r in responses if r.status_code == 409)
    assert error_of(loser)["code"] in ("version_conflict", "turn_in_progress")
    after = data_of(owner.get(conversation))
    assert (after["version"], after["turnCount"]) == (2, 1)


def test_other_accounts_cannot_see_or_touch_a_conversation(stack: Stack, owner: Owner) -> None:
    owner.key.save(DEPLOY)
    conversation = owner.create(title="Private deploy talk")
    owner.answered(conversation["id"], "When do we deploy?", 1)
    stranger = new_owner(stack)
    path = f"/v1/conversations/{conversation['id']}"
    assert stranger.get(conversation["id"]).status_code == 404
    assert owner.delete(path, stranger.session).status_code == 404
    turn = stranger.turn(conversation["id"], "When do we deploy?", 2)
    assert turn.status_code == 404 and error_of(turn)["code"] == "not_found"
    assert data_of(stranger.session.get("/v1/conversations"))["items"] == []
    found = stranger.session.post("/v1/conversations/search", {"query": "deploy"})
    assert data_of(found)["items"] == []
    # The same client ID in another account is another conversation.
    theirs = stranger.session.post("/v1/conversations", {"id": conversation["id"]})
    assert theirs.status_code == 201 and data_of(theirs)["turnCount"] == 0
    assert data_of(owner.get(conversation["id"]))["turnCount"] == 1


def test_deleting_hides_a_conversation_and_keeps_its_history(stack: Stack, owner: Owner) -> None:
    owner.key.save(DEPLOY)
    body = {"id": str(uuid.uuid4())}
    assert owner.session.post("/v1/conversations", body).status_code == 201
    conversation = body["id"]
    owner.answered(conversation, "When do we deploy?", 1)
    deleted = owner.delete(f"/v1/conversations/{conversation}")
    assert deleted.status_code == 200 and data_of(deleted)["deleted"] is True
    assert owner.get(conversation).status_code == 404
    assert owner.delete(f"/v1/conversations/{conversation}").status_code == 404
    assert owner.turn(conversation, "Again?", 2).status_code == 404
    assert data_of(owner.session.get("/v1/conversations"))["items"] == []
    assert data_of(owner.session.post("/v1/conversations/search", {}))["items"] == []
    retried = owner.session.post("/v1/conversations", body)
    assert retried.status_code == 410 and error_of(retried)["code"] == "gone"
    with superuser(stack) as conn:
        kept = conn.execute(
            "SELECT count(*) FROM conversation_turns WHERE conversation_id = %s",
            (conversation,),
        ).fetchone()
    assert kept == (1,)


def test_listing_pages_thirty_newest_first_even_if_the_last_row_is_deleted(
    owner: Owner,
) -> None:
    made = [owner.create()["id"] for _ in range(32)]
    first = data_of(owner.session.get("/v1/conversations"))
    assert [c["id"] for c in first["items"]] == made[::-1][:30]
    assert first["nextAfter"] == made[2]
    assert owner.delete(f"/v1/conversations/{made[2]}").status_code == 200
    second = data_of(owner.session.get("/v1/conversations", params={"after": made[2]}))
    assert [c["id"] for c in second["items"]] == [made[1], made[0]]
    assert second["nextAfter"] is None
    unknown = owner.session.get("/v1/conversations", params={"after": str(uuid.uuid4())})
    assert unknown.status_code == 400


def test_search_matches_titles_and_questions_not_answers(owner: Owner) -> None:
    owner.key.save("Refunds are processed nightly by the ledger job.")
    titled = owner.create(title="Ledger 100% review")["id"]
    asked = owner.create()["id"]
    owner.answered(asked, "How are REFUNDS processed?", 1)
    unrelated = owner.create(title="Holiday plans")["id"]

    def search(**body: Any) -> dict[str, Any]:
        response = owner.session.post("/v1/conversations/search", body)
        assert response.status_code == 200, response.text
        return data_of(response)  # type: ignore[no-any-return]

    assert [c["id"] for c in search(query="ledger")["items"]] == [titled]  # not the answer
    hits = search(query="refunds")["items"]
    assert [c["id"] for c in hits] == [asked]
    assert hits[0]["questionPreview"] == "How are REFUNDS processed?"
    assert hits[0]["turnCount"] == 1
    assert [c["id"] for c in search(query="100%")["items"]] == [titled]  # literal
    assert search(query="1_0")["items"] == []
    everything = [c["id"] for c in search()["items"]]
    assert everything == [unrelated, asked, titled]
    assert search(query="q" * 200)["items"] == []
    too_long = owner.session.post("/v1/conversations/search", {"query": "q" * 201})
    assert too_long.status_code == 400


def test_search_pages_with_a_cursor_bound_to_the_query(owner: Owner) -> None:
    made = [owner.create(title=f"Topic {i}")["id"] for i in range(31)]
    first = owner.session.post("/v1/conversations/search", {"query": "topic"})
    page = data_of(first)
    assert [c["id"] for c in page["items"]] == made[::-1][:30]
    assert owner.delete(f"/v1/conversations/{made[1]}").status_code == 200
    second = data_of(
        owner.session.post(
            "/v1/conversations/search", {"query": "topic", "after": page["nextCursor"]}
        )
    )
    assert [c["id"] for c in second["items"]] == [made[0]] and second["nextCursor"] is None
    moved = owner.session.post(
        "/v1/conversations/search", {"query": "other", "after": page["nextCursor"]}
    )
    assert moved.status_code == 400 and error_of(moved)["code"] == "invalid_cursor"


def test_the_owner_export_includes_conversations_with_their_turns(owner: Owner) -> None:
    note = owner.key.save(DEPLOY)["id"]
    conversation = owner.create(title="Deploys")["id"]
    owner.answered(conversation, "When do we deploy?", 1, context={"notes": [note]})
    lines = [json.loads(line) for line in owner.session.get("/v1/export").text.splitlines()]
    exported = [line for line in lines if line["type"] == "conversation"]
    assert len(exported) == 1 and exported[0]["conversation"]["id"] == conversation
    (turn,) = exported[0]["turns"]
    assert turn["query"] == "When do we deploy?" and turn["context"]["notes"] == [note]
    assert cited(turn) == {note}
    by_key = owner.key.get("/v1/export").text
    assert '"conversation"' not in by_key


# --- leases, failures and sources deleted during generation (in-process) --------------


class Crash(BaseException):
    """Stands for the process dying mid-generation: nothing catches it."""


class Crashing:
    def answer(
        self,
        question: str,
        previous: Sequence[str],
        evidence: Sequence[EvidenceText],
        *,
        markdown: bool,
        timeout: float,
        notebooks: Sequence[tuple[str, str]] = (),
    ) -> Generated:
        raise Crash()

    def describe(self, *, timeout: float) -> str:
        raise Crash()


@dataclass
class Failing:
    reason: str = "inference_unavailable"

    def answer(
        self,
        question: str,
        previous: Sequence[str],
        evidence: Sequence[EvidenceText],
        *,
        markdown: bool,
        timeout: float,
        notebooks: Sequence[tuple[str, str]] = (),
    ) -> Generated:
        raise InferenceError(self.reason, "the ask service says no")

    def describe(self, *, timeout: float) -> str:
        raise InferenceError(self.reason, "the ask service says no")


@dataclass
class DeletingFirst:
    """The real ``Answer``, but the note is forgotten while it is being written."""

    inner: InferenceClient
    client: Client
    note_id: str

    def answer(
        self,
        question: str,
        previous: Sequence[str],
        evidence: Sequence[EvidenceText],
        *,
        markdown: bool,
        timeout: float,
        notebooks: Sequence[tuple[str, str]] = (),
    ) -> Generated:
        forgotten = self.client.post("/v1/memories/forget", {"ids": [self.note_id]})
        assert forgotten.status_code == 200, forgotten.text
        return self.inner.answer(
            question, previous, evidence, markdown=markdown, timeout=timeout, notebooks=notebooks
        )

    def describe(self, *, timeout: float) -> str:
        return self.inner.describe(timeout=timeout)


@pytest.fixture
def answerer(stack: Stack) -> Iterator[InferenceClient]:
    client = InferenceClient(stack.ask.url, "disabled")
    yield client
    client.close()


def test_a_crashed_attempt_can_be_retried_once_its_lease_expires(
    owner: Owner, store: Store, answerer: InferenceClient
) -> None:
    note = owner.key.save(DEPLOY)["id"]
    conversation = owner.create()["id"]
    body = {"id": str(uuid.uuid4()), "query": "When do we deploy?", "expectedVersion": 1}
    request = TurnRequest.model_validate(body)
    principal = owner.principal()
    with pytest.raises(Crash):
        add_turn(store, Crashing(), principal, uuid.UUID(conversation), request, 5)
    held = data_of(owner.get(conversation))
    (turn,) = held["turns"]
    assert (turn["status"], held["version"]) == ("in_progress", 2)
    lease = datetime.fromisoformat(turn["leaseExpiresAt"])
    assert timedelta(minutes=4, seconds=59) < lease - datetime.fromisoformat(turn["createdAt"])
    path = f"/v1/conversations/{conversation}/turns"
    for retry in (body, {**body, "id": str(uuid.uuid4()), "expectedVersion": 2}):
        refused = owner.session.post(path, retry)
        assert refused.status_code == 409 and error_of(refused)["code"] == "turn_in_progress"
    with pytest.raises(TurnInProgress):
        add_turn(
            store,
            answerer,
            principal,
            uuid.UUID(conversation),
            request,
            5,
            now=lease - timedelta(milliseconds=1),
        )
    turned, fresh = add_turn(
        store, answerer, principal, uuid.UUID(conversation), request, 5, now=lease
    )
    reply = turned.model_dump(mode="json")
    assert fresh and reply["turn"]["status"] == "completed" and reply["turn"]["attempts"] == 2
    assert cited(reply["turn"]) == {note} and reply["conversation"]["version"] == 2
    replay = owner.session.post(path, body)
    assert replay.status_code == 200 and data_of(replay)["turn"]["attempts"] == 2


def test_a_new_turn_after_an_expired_attempt_marks_it_abandoned(
    owner: Owner, store: Store, answerer: InferenceClient
) -> None:
    owner.key.save(DEPLOY)
    conversation = uuid.UUID(owner.create()["id"])
    principal = owner.principal()
    crashed = TurnRequest(id=uuid.uuid4(), query="When do we deploy?", expectedVersion=1)
    with pytest.raises(Crash):
        add_turn(store, Crashing(), principal, conversation, crashed, 5)
    later = datetime.now().astimezone() + timedelta(minutes=6)
    fresh = TurnRequest(id=uuid.uuid4(), query="Who deploys?", expectedVersion=2)
    turned, _ = add_turn(store, answerer, principal, conversation, fresh, 5, now=later)
    reply = turned.model_dump(mode="json")
    assert reply["turn"]["ordinal"] == 2 and reply["conversation"]["version"] == 3
    turns = data_of(owner.get(str(conversation)))["turns"]
    assert [(t["status"], t["error"]) for t in turns] == [
        ("failed", "abandoned"),
        ("completed", None),
    ]


def test_a_failed_attempt_is_marked_and_its_retry_answers(owner: Owner, store: Store) -> None:
    note = owner.key.save(DEPLOY)["id"]
    conversation = owner.create()["id"]
    body = {"id": str(uuid.uuid4()), "query": "When do we deploy?", "expectedVersion": 1}
    request = TurnRequest.model_validate(body)
    with pytest.raises(InferenceUnavailable):
        add_turn(store, Failing(), owner.principal(), uuid.UUID(conversation), request, 5)
    (turn,) = data_of(owner.get(conversation))["turns"]
    assert (turn["status"], turn["error"], turn["leaseExpiresAt"]) == (
        "failed",
        "inference_unavailable",
        None,
    )
    retried = owner.session.post(f"/v1/conversations/{conversation}/turns", body)
    assert retried.status_code == 201, retried.text
    assert data_of(retried)["turn"]["attempts"] == 2 and cited(data_of(retried)["turn"]) == {note}


def test_a_source_deleted_during_generation_loses_its_citations(
    owner: Owner, store: Store, answerer: InferenceClient
) -> None:
    note = owner.key.save(DEPLOY)["id"]
    conversation = uuid.UUID(owner.create()["id"])
    request = TurnRequest(id=uuid.uuid4(), query="When do we deploy?", expectedVersion=1)
    deleting = DeletingFirst(answerer, owner.key, note)
    turned, _ = add_turn(store, deleting, owner.principal(), conversation, request, 5)
    turn = turned.model_dump(mode="json")["turn"]
    assert (turn["status"], turn["outcome"], turn["answer"]) == ("completed", "no_evidence", None)
    assert turn["sources"] == []
    # The control: the same question answers while the note lives.
    kept = owner.key.save(DEPLOY)["id"]
    again = owner.answered(str(conversation), "When do we deploy?", 2)["turn"]
    assert cited(again) == {kept}


def test_a_turn_does_not_commit_for_a_session_that_ended_while_answering(
    owner: Owner, store: Store, answerer: InferenceClient, stack: Stack
) -> None:
    owner.key.save(DEPLOY)
    conversation = uuid.UUID(owner.create()["id"])
    request = TurnRequest(id=uuid.uuid4(), query="When do we deploy?", expectedVersion=1)
    identity = (ISSUER, owner.subject)
    expired = replace(
        owner.principal(),
        owner_identity=identity,
        session_expires_at=datetime.now().astimezone() - timedelta(seconds=1),
    )
    with pytest.raises(Unauthorized, match="session expired"):
        add_turn(store, answerer, expired, conversation, request, 5)
    (turn,) = data_of(owner.get(str(conversation)))["turns"]
    assert (turn["status"], turn["answer"]) == ("failed", None)
    disowned = replace(owner.principal(), owner_identity=(ISSUER, "someone-else"))
    with pytest.raises(Unauthorized, match="no longer owns"):
        add_turn(store, answerer, disowned, conversation, request, 5)
    live = replace(owner.principal(), owner_identity=identity)
    reply, fresh = add_turn(store, answerer, live, conversation, request, 5)
    assert fresh and reply.model_dump(mode="json")["turn"]["status"] == "completed"


def test_a_turn_with_answering_switched_off_is_disabled_and_stored(
    owner: Owner, store: Store
) -> None:
    owner.key.save(DEPLOY)
    conversation = uuid.UUID(owner.create()["id"])
    request = TurnRequest(id=uuid.uuid4(), query="When do we deploy?", expectedVersion=1)
    principal = owner.principal()
    reply, fresh = add_turn(store, Failing("disabled"), principal, conversation, request, 5)
    turn = reply.model_dump(mode="json")["turn"]
    assert fresh and (turn["status"], turn["outcome"], turn["answer"]) == (
        "completed",
        "disabled",
        None,
    )
    assert turn["sources"]  # the evidence was found; only the answer is switched off


@dataclass
class Meanwhile:
    """The real ``Answer``, with ``change`` made while it is being written."""

    inner: InferenceClient
    change: Callable[[], requests.Response]

    def answer(
        self,
        question: str,
        previous: Sequence[str],
        evidence: Sequence[EvidenceText],
        *,
        markdown: bool,
        timeout: float,
        notebooks: Sequence[tuple[str, str]] = (),
    ) -> Generated:
        changed = self.change()
        assert changed.status_code == 200, changed.text
        return self.inner.answer(
            question, previous, evidence, markdown=markdown, timeout=timeout, notebooks=notebooks
        )

    def describe(self, *, timeout: float) -> str:
        return self.inner.describe(timeout=timeout)


def stored_turns(stack: Stack, conversation: str) -> list[tuple[str, str | None, str | None]]:
    """Each turn's status, error and answer as the database holds them (deleted or not)."""
    with superuser(stack) as conn:
        rows = conn.execute(
            "SELECT status, error, answer_text FROM conversation_turns"
            " WHERE conversation_id = %s ORDER BY ordinal",
            (conversation,),
        ).fetchall()
    return [(r[0], r[1], r[2]) for r in rows]


def test_a_turn_stores_no_answer_once_its_conversation_or_notebook_is_gone(
    stack: Stack, owner: Owner, store: Store, answerer: InferenceClient
) -> None:
    owner.key.save(DEPLOY)
    principal = owner.principal()
    # The conversation is deleted while the answer is written.
    conversation = owner.create()["id"]
    request = TurnRequest(id=uuid.uuid4(), query="When do we deploy?", expectedVersion=1)
    deleting = Meanwhile(answerer, lambda: owner.delete(f"/v1/conversations/{conversation}"))
    with pytest.raises(NotFound, match="deleted while the answer was written"):
        add_turn(store, deleting, principal, uuid.UUID(conversation), request, 5)
    assert stored_turns(stack, conversation) == [("failed", "not_found", None)]
    # The conversation's notebook is deleted while the answer is written.
    notebook = data_of(owner.key.post("/v1/notebooks", {"name": "deploys"}))["id"]
    owner.key.save(DEPLOY, projectId=notebook)
    scoped = owner.create(projectId=notebook)["id"]

    def delete_notebook() -> requests.Response:
        subtree = data_of(owner.session.get(f"/v1/notebooks/{notebook}/subtree"))
        body = {"fingerprint": subtree["fingerprint"]}
        return owner.session.post(f"/v1/notebooks/{notebook}/delete", body)

    request = TurnRequest(id=uuid.uuid4(), query="When do we deploy?", expectedVersion=1)
    with pytest.raises(ContextUnavailable, match="notebook is no longer available"):
        add_turn(
            store, Meanwhile(answerer, delete_notebook), principal, uuid.UUID(scoped), request, 5
        )
    assert stored_turns(stack, scoped) == [("failed", "context_unavailable", None)]
    # The control: a conversation left alone stores its answer.
    kept = owner.create()["id"]
    request = TurnRequest(id=uuid.uuid4(), query="When do we deploy?", expectedVersion=1)
    unchanged = Meanwhile(answerer, lambda: owner.get(kept))
    reply, _ = add_turn(store, unchanged, principal, uuid.UUID(kept), request, 5)
    assert reply.turn.status == "completed" and reply.turn.answer is not None


@dataclass
class Redeployed:
    """Answers through the grove-ask that ran when the turn began, then grove-ask is
    replaced by ``now`` (another model) before the answer is stored."""

    before: InferenceClient
    now: InferenceClient

    def answer(
        self,
        question: str,
        previous: Sequence[str],
        evidence: Sequence[EvidenceText],
        *,
        markdown: bool,
        timeout: float,
        notebooks: Sequence[tuple[str, str]] = (),
    ) -> Generated:
        return self.before.answer(
            question, previous, evidence, markdown=markdown, timeout=timeout, notebooks=notebooks
        )

    def describe(self, *, timeout: float) -> str:
        return self.now.describe(timeout=timeout)


def test_an_answer_written_before_the_model_changed_is_not_stored_as_the_new_ones(
    stack: Stack, owner: Owner, store: Store, answerer: InferenceClient
) -> None:
    owner.key.save(DEPLOY)
    principal = owner.principal()
    conversation = uuid.UUID(owner.create()["id"])
    replacement = start_ask(
        {
            "GROVE_EMBEDDING_PROFILE": "disabled",
            "GROVE_ANSWER_GENERATOR": "openai",
            "GROVE_ANSWER_OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
            "GROVE_ANSWER_OPENAI_MODEL": "model-b",
        }
    )
    replaced = InferenceClient(replacement.url, "disabled")
    try:
        assert replaced.describe(timeout=5) == "openai:model-b"
        request = TurnRequest(id=uuid.uuid4(), query="When do we deploy?", expectedVersion=1)
        switching = Redeployed(answerer, replaced)
        with pytest.raises(GeneratorChanged, match="written by extractive"):
            add_turn(store, switching, principal, conversation, request, 5)
        assert stored_turns(stack, str(conversation)) == [("failed", "generator_changed", None)]
        # Asked again (the same turn) with the settings unchanged, it is answered and stored.
        reply, fresh = add_turn(store, answerer, principal, conversation, request, 5)
        assert fresh and reply.turn.status == "completed" and reply.turn.answer is not None
        assert reply.turn.answer.generator == "extractive"
    finally:
        replaced.close()
        replacement.stop()
