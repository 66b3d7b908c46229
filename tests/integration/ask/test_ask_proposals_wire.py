"""Proposals over gRPC: a real grove-ask on the ``openai`` generator, a scripted chat
provider, and ``InferenceClient.answer`` checking each proposal again on arrival."""

from __future__ import annotations

import concurrent.futures
import json
import uuid
from typing import Any

import grpc
import pytest

from grove_ask.answer import Answer, Citation, Evidence, NotebookRef
from grove_ask.cancel import Cancellation
from grove_ask.server import InferenceService
from grove_contracts.inference.v1 import inference_pb2_grpc
from grove_contracts.proposals import (
    MAX_PROPOSAL_NOTEBOOKS,
    MergeChange,
    OrganizeChange,
    ProposalDraft,
)
from grove_memory.inference import EvidenceText, InferenceClient, InferenceError
from tests.support.chat import FakeChat
from tests.support.processes import Running
from tests.support.scraping import scrape

DEPLOY = "We deploy with Argo CD every Tuesday."
AGAIN = "Deploys happen on Tuesdays via Argo CD."
TEA = "Alice prefers green tea in the morning."
QUESTION = "Merge my duplicate deploy notes and file them under Work."


def evidence() -> list[EvidenceText]:
    return [EvidenceText(str(uuid.uuid4()), 1, text) for text in (DEPLOY, AGAIN, TEA)]


def reply(*proposals: object) -> str:
    cited = [{"evidence": 1, "quote": DEPLOY}, {"evidence": 2, "quote": AGAIN}]
    return json.dumps(
        {
            "answer": "Notes 1 and 2 repeat each other.",
            "citations": cited,
            "proposals": list(proposals),
        }
    )


def dropped_total(ask: Running) -> float:
    samples = scrape(ask).get("grove_ask_answer_proposals_dropped_total", [])
    return sum(value for _, value in samples)


def test_the_models_proposals_arrive_validated_with_the_right_ids(
    openai_chat: tuple[FakeChat, Running],
) -> None:
    fake, ask = openai_chat
    notes, work = evidence(), str(uuid.uuid4())
    fake.reset(
        reply(
            {
                "action": "merge",
                "summary": "Merge the deploy notes",
                "notes": [1, 2],
                "into": 1,
                "content": DEPLOY,
            },
            {"action": "organize", "summary": "File under Work", "notes": [1], "to": 1},
            {"action": "rename", "summary": "Rename", "note": 1},
            {"action": "archive", "summary": "Archive", "notes": [4]},
        )
    )
    before = dropped_total(ask)
    client = InferenceClient(ask.url, "disabled")
    try:
        generated = client.answer(
            QUESTION, [], notes, markdown=False, timeout=10, notebooks=[(work, "Work")]
        )
    finally:
        client.close()
    assert "Notebooks (numbered, for proposals):\n1. Work" in fake.seen[0].prompt
    assert generated.generator == "openai" and len(generated.citations) == 2
    merge, organize = (p.change for p in generated.proposals)
    assert isinstance(merge, MergeChange) and isinstance(organize, OrganizeChange)
    assert [str(i) for i in merge.noteIds] == [notes[0].note_id, notes[1].note_id]
    assert str(merge.into) == notes[0].note_id and merge.content == DEPLOY
    assert [str(i) for i in organize.noteIds] == [notes[0].note_id]
    assert str(organize.destination.projectId) == work
    assert generated.proposals_dropped == 2
    assert dropped_total(ask) - before == 2


def test_an_answer_without_proposals_has_none(openai_chat: tuple[FakeChat, Running]) -> None:
    fake, ask = openai_chat
    fake.reset(json.dumps({"answer": "Tuesdays.", "citations": [{"evidence": 1, "quote": DEPLOY}]}))
    client = InferenceClient(ask.url, "disabled")
    try:
        generated = client.answer("When do we deploy?", [], evidence(), markdown=False, timeout=10)
    finally:
        client.close()
    assert "Notebooks (numbered" not in fake.seen[0].prompt
    assert (generated.text, generated.proposals, generated.proposals_dropped) == (
        "Tuesdays.",
        [],
        0,
    )


def test_notebooks_are_limited_at_the_boundary(openai_chat: tuple[FakeChat, Running]) -> None:
    fake, ask = openai_chat
    fake.reset(json.dumps({"answer": "", "citations": []}))
    client = InferenceClient(ask.url, "disabled")
    many = [(str(uuid.uuid4()), f"Notebook {n}") for n in range(MAX_PROPOSAL_NOTEBOOKS + 1)]
    try:
        answer = client.answer(
            "q", [], evidence(), markdown=False, timeout=10, notebooks=many[:MAX_PROPOSAL_NOTEBOOKS]
        )
        assert answer.text == ""
        for notebooks in (many, [(str(uuid.uuid4()), "  ")], [("", "Work")]):
            with pytest.raises(InferenceError) as caught:
                client.answer("q", [], evidence(), markdown=False, timeout=10, notebooks=notebooks)
            assert "notebooks" in str(caught.value)
    finally:
        client.close()


class Proposing:
    """A generator whose proposals skipped the contract (built without validation)."""

    def answer(
        self,
        question: str,
        previous: Any,
        evidence: Any,
        markdown: bool,
        timeout: float | None,
        cancellation: Cancellation | None = None,
        notebooks: Any = (),
    ) -> Answer:
        item: Evidence = evidence[0]
        citation = Citation(item.note_id, item.version, item.content, 0, len(item.content))
        note = uuid.UUID(item.note_id)
        bad = ProposalDraft.model_construct(
            summary="Merge one note",
            change=MergeChange.model_construct(
                action="merge", noteIds=[note], into=None, content="C", kind=None
            ),
        )
        good = ProposalDraft.model_validate(
            {"summary": "Archive it", "change": {"action": "archive", "noteIds": [note]}}
        )
        assert notebooks == [NotebookRef("nb", "Work")]
        return Answer(item.content, [citation], "fake", [bad, good], 1)


def test_the_client_drops_proposals_that_break_the_contract_on_the_wire() -> None:
    server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=2))
    inference_pb2_grpc.add_InferenceServicer_to_server(  # type: ignore[no-untyped-call]
        InferenceService(None, "disabled", Proposing()), server
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    client = InferenceClient(f"127.0.0.1:{port}", "disabled")
    try:
        notes = evidence()
        generated = client.answer(
            "q", [], notes, markdown=False, timeout=10, notebooks=[("nb", "Work")]
        )
    finally:
        client.close()
        server.stop(None)
    assert [p.summary for p in generated.proposals] == ["Archive it"]
    assert generated.proposals[0].change.noteIds == [uuid.UUID(notes[0].note_id)]  # type: ignore[union-attr]
    assert generated.proposals_dropped == 2  # one dropped by the generator, one on arrival
