"""The model's proposals end to end: a turn over REST, a real grove-ask on the ``openai``
generator with a scripted chat provider (the one stand-in), a real api and PostgreSQL.
The reply's proposals name evidence and notebooks by number; what is invalid on arrival,
or names a note outside the conversation, never reaches the turn."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from grove_db import embedded
from tests.support.chat import FakeChat, serve
from tests.support.clients import data_of
from tests.support.conversations import Stack, start_answering_api
from tests.support.owners import OwnedAccount, Provider, owned_tenant
from tests.support.processes import Running, start_ask
from tests.support.scraping import scrape

DEPLOY = "We deploy the billing service with Argo CD every Tuesday."
AGAIN = "Billing deploys go out on Tuesdays through Argo CD."
PLANT = "The office plant needs water on Fridays."
QUESTION = "Merge my duplicate notes about billing deploys and file the result under Runbooks."


@dataclass
class ModelStack(Stack):
    """The conversations' stack with grove-ask on the ``openai`` generator, scripted."""

    fake: FakeChat


@pytest.fixture(scope="module")
def stack(database: embedded.EmbeddedDatabase) -> Iterator[ModelStack]:
    fake = FakeChat()
    server = serve(fake)
    provider = Provider()
    running: list[Running] = []
    try:
        ask = start_ask(
            {
                "GROVE_EMBEDDING_PROFILE": "disabled",
                "GROVE_ANSWER_GENERATOR": "openai",
                "GROVE_ANSWER_OPENAI_BASE_URL": f"{server.url}/v1",
                "GROVE_ANSWER_OPENAI_MODEL": "fake-chat",
            }
        )
        running.append(ask)
        api = start_answering_api(database, provider, ask, workers=1)
        running.append(api)
        yield ModelStack(provider, ask, api, database, fake)
    finally:
        for service in reversed(running):
            service.stop()
        provider.close()
        server.close()


def numbered(prompt: str, text: str) -> int:
    """The number the prompt gave the evidence item or notebook line holding ``text``."""
    found = re.search(r"\[(\d+)\] " + re.escape(text), prompt) or re.search(
        r"^(\d+)\. " + re.escape(text), prompt, re.MULTILINE
    )
    assert found, f"{text!r} is not in the prompt"
    return int(found.group(1))


def test_the_models_valid_proposals_reach_the_turn_and_apply(stack: ModelStack) -> None:
    tenant, subject = owned_tenant(stack.database, stack.api.url)
    owner = OwnedAccount(stack, tenant, subject)
    billing = tenant.notebook("Billing")
    runbooks = tenant.notebook("Runbooks")
    a = tenant.client.save(DEPLOY, projectId=billing)
    b = tenant.client.save(AGAIN, projectId=billing)
    other, _ = owned_tenant(stack.database, stack.api.url)
    foreign = other.client.save(DEPLOY)  # another account's note: never named

    def answer(body: dict[str, Any]) -> str:
        prompt = body["messages"][1]["content"]
        first, second = numbered(prompt, DEPLOY), numbered(prompt, AGAIN)
        shelf = numbered(prompt, "Runbooks")
        proposals = [
            {
                "action": "merge",
                "summary": "Merge the two billing deploy notes",
                "notes": [first, second],
                "into": first,
                "content": DEPLOY + " Billing deploys go through Argo CD.",
            },
            {
                "action": "organize",
                "summary": "File the deploy note under Runbooks",
                "notes": [first],
                "to": shelf,
            },
            {"action": "archive", "summary": "Archive a note that is not evidence", "notes": [9]},
            {"action": "rename", "summary": "Not an action", "notes": [first]},
            {"action": "create", "summary": "No content"},
        ]
        return json.dumps(
            {
                "answer": "Two notes say the same thing.",
                "citations": [{"evidence": first, "quote": DEPLOY}],
                "proposals": proposals,
            }
        )

    stack.fake.reset(answer)
    dropped_before = _dropped(stack.ask)
    conversation = owner.session.post("/v1/conversations", {"id": str(uuid.uuid4())})
    conversation_id = data_of(conversation)["id"]
    turn = owner.session.post(
        f"/v1/conversations/{conversation_id}/turns",
        {"id": str(uuid.uuid4()), "query": QUESTION, "expectedVersion": 1},
    )
    assert turn.status_code == 201, turn.text
    offered = data_of(turn)["turn"]["proposals"]
    model = [p for p in offered if p["source"] == "model"]
    assert [p["change"]["action"] for p in model] == ["merge", "organize"]
    merge, organize = model
    assert merge["change"]["noteIds"] == [a["id"], b["id"]]
    assert merge["change"]["into"] == a["id"]
    assert organize["change"]["destination"] == {"projectId": runbooks, "newNotebook": None}
    assert _dropped(stack.ask) - dropped_before == 3
    assert foreign["id"] not in json.dumps(offered)

    prompt = stack.fake.seen[-1].prompt
    assert "Runbooks" in prompt and "Billing" in prompt
    path = f"/v1/conversations/{conversation_id}/proposals"
    applied = owner.session.post(f"{path}/{merge['id']}/apply", {})
    assert applied.status_code == 200, applied.text
    merged = data_of(tenant.client.get(f"/v1/memories/{a['id']}"))
    assert merged["content"] == DEPLOY + " Billing deploys go through Argo CD."
    assert data_of(tenant.client.get(f"/v1/memories/{b['id']}"))["archived"] is True
    # The organize proposal was read at version 1 of the note the merge just rewrote.
    late = owner.session.post(f"{path}/{organize['id']}/apply", {})
    assert late.status_code == 409 and late.json()["error"]["code"] == "proposal_stale"


def _dropped(ask: Running) -> float:
    samples = scrape(ask).get("grove_ask_answer_proposals_dropped_total", [])
    return sum(value for _, value in samples)
