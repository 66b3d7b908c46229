"""The openai generator's prompt and how it reads replies: exact quotes or a refusal,
and the proposals a reply offers, mapped to ids and checked (the invalid ones dropped)."""

from __future__ import annotations

import json
import socket
import uuid
from typing import Any

import pytest

from grove_api.middleware import AccountSlots
from grove_ask.answer import Evidence, NotebookRef
from grove_ask.cancel import Cancellation
from grove_ask.chat import InvalidReply, correction, prompt, read_reply
from grove_ask.telemetry import ANSWER_PROPOSALS, ANSWER_PROPOSALS_DROPPED
from grove_contracts.proposals import MAX_PROPOSALS, ProposalDraft
from grove_telemetry import metrics

DEPLOY = Evidence("n1", 3, "We deploy with Argo CD every Tuesday. The office plant needs water.")
TEA = Evidence("n2", 1, "Alice prefers green tea in the morning.")
EVIDENCE = [DEPLOY, TEA]


def reply(answer: str, *citations: tuple[Any, str]) -> str:
    return json.dumps(
        {"answer": answer, "citations": [{"evidence": n, "quote": q} for n, q in citations]}
    )


def refusal(text: str) -> InvalidReply:
    with pytest.raises(InvalidReply) as caught:
        read_reply(text, EVIDENCE)
    return caught.value


def test_the_prompt_numbers_the_evidence_and_asks_for_json_citations() -> None:
    system, user = prompt("And the second?", ["When do we deploy?"], EVIDENCE, markdown=False)
    assert system["role"] == "system" and user["role"] == "user"
    assert '"citations": [{"evidence": <number>, "quote":' in system["content"]
    assert "without Markdown" in system["content"]
    assert f"[1] {DEPLOY.content}\n\n[2] {TEA.content}" in user["content"]
    assert "- When do we deploy?" in user["content"]
    assert user["content"].endswith("Question: And the second?")
    assert "in Markdown" in prompt("q", [], EVIDENCE, markdown=True)[0]["content"]


def test_quotes_are_located_verbatim_in_the_evidence_they_name() -> None:
    answer = read_reply(
        reply(
            "Tuesdays, with Argo CD; Alice drinks green tea.",
            (1, "every Tuesday"),
            ("2", TEA.content),
        ),
        EVIDENCE,
    )
    assert answer.generator == "openai"
    assert answer.text == "Tuesdays, with Argo CD; Alice drinks green tea."
    first, second = answer.citations
    assert (first.note_id, first.version, first.quote) == ("n1", 3, "every Tuesday")
    assert DEPLOY.content[first.start : first.end] == "every Tuesday"
    assert (second.note_id, second.start, second.end) == ("n2", 0, len(TEA.content))


def test_code_fences_surrounding_words_and_repeated_citations_are_tolerated() -> None:
    text = (
        "Here you go:\n```json\n"
        + reply("Tuesday.", (1, "every Tuesday"), ("[1]", "every Tuesday "))
        + "\n```"
    )
    answer = read_reply(text, EVIDENCE)
    assert [c.quote for c in answer.citations] == ["every Tuesday"]


def test_an_empty_answer_means_the_evidence_does_not_answer() -> None:
    answer = read_reply(reply(""), EVIDENCE)
    assert (answer.text, answer.citations) == ("", [])


@pytest.mark.parametrize(
    ("text", "reason", "told"),
    [
        ("Sure! We deploy on Tuesdays.", "not_json", "not a JSON object"),
        ('["Tuesday"]', "not_json", "not a JSON object"),
        ('{"answer": ' + "[" * 5000 + "}", "not_json", "not a JSON object"),
        ('{"answer": 3, "citations": []}', "not_json", '{"answer": string'),
        (reply("Tuesday."), "no_citations", "no citations"),
        (reply("Tuesday.", (3, "every Tuesday")), "invalid_citation", "no evidence 3 (1 to 2)"),
        (reply("Tuesday.", (0, "every Tuesday")), "invalid_citation", "no evidence 0"),
        (
            reply("Tuesday.", (1, "every tuesday")),
            "invalid_citation",
            'citation 1: the quote "every tuesday" does not occur in evidence 1',
        ),
        (
            reply("Tea.", (1, "every Tuesday"), (1, "green tea")),
            "invalid_citation",
            'citation 2: the quote "green tea" does not occur in evidence 1',
        ),
        (reply("Tuesday.", ("one", "every Tuesday")), "invalid_citation", '{"evidence": number'),
        (reply("Tuesday.", (True, "every Tuesday")), "invalid_citation", '{"evidence": number'),
        (reply("Tuesday.", (1, "   ")), "invalid_citation", '{"evidence": number'),
    ],
)
def test_unusable_replies_are_refused_with_what_was_wrong(
    text: str, reason: str, told: str
) -> None:
    problem = refusal(text)
    assert problem.reason == reason
    assert told in str(problem)


def test_a_refused_reply_goes_back_to_the_model_with_the_problem() -> None:
    problem = refusal(reply("Tuesday.", (3, "every Tuesday")))
    assistant, user = correction("the reply", problem)
    assert assistant == {"role": "assistant", "content": "the reply"}
    assert "there is no evidence 3" in user["content"] and "JSON" in user["content"]


def test_a_cancelled_call_shuts_sockets_already_open_and_any_opened_later() -> None:
    cancellation = Cancellation()
    first, first_peer = socket.socketpair()
    later, later_peer = socket.socketpair()
    with first, first_peer, later, later_peer:
        cancellation.track(first)
        cancellation.cancel()
        assert first_peer.recv(1) == b""  # the provider's side sees the connection end
        cancellation.track(later)
        assert later_peer.recv(1) == b""
        assert cancellation.cancelled


def test_account_slots_refuse_one_more_than_the_limit_per_account() -> None:
    slots = AccountSlots(2)
    mine, other = uuid.uuid4(), uuid.uuid4()
    assert slots.take(mine) and slots.take(mine)
    assert not slots.take(mine)
    assert slots.take(other)
    slots.give_back(mine)
    assert slots.take(mine)
    unlimited = AccountSlots(0)
    assert all(unlimited.take(mine) for _ in range(100))


# --- proposals ----------------------------------------------------------------------

NOTE_IDS = [str(uuid.uuid4()) for _ in range(3)]
NOTES = [
    Evidence(NOTE_IDS[0], 2, "We deploy with Argo CD every Tuesday."),
    Evidence(NOTE_IDS[1], 1, "Deploys happen on Tuesdays via Argo CD."),
    Evidence(NOTE_IDS[2], 4, "Alice prefers green tea in the morning."),
]
WORK, HOME = str(uuid.uuid4()), str(uuid.uuid4())
NOTEBOOKS = [NotebookRef(WORK, "Work"), NotebookRef(HOME, "Home\nstuff")]
ANSWER = "Notes 1 and 2 say the same thing."


def proposing(*proposals: object, answer: str = ANSWER) -> str:
    """A reply that answers (citing evidence 1) and offers ``proposals``."""
    cited = [{"evidence": 1, "quote": "every Tuesday"}] if answer else []
    return json.dumps({"answer": answer, "citations": cited, "proposals": list(proposals)})


def dropped(reason: str) -> float:
    return ANSWER_PROPOSALS_DROPPED.labels(metrics.service(), reason)._value.get()  # type: ignore[no-any-return]


def offered() -> float:
    return ANSWER_PROPOSALS.labels(metrics.service())._value.get()  # type: ignore[no-any-return]


def test_the_prompt_explains_proposals_and_numbers_the_notebooks_sent() -> None:
    system, user = prompt("Merge my duplicates", [], NOTES, False, NOTEBOOKS)
    assert '"proposals"' in system["content"] and "ONLY when the question asks" in system["content"]
    assert '{"action": "merge", "summary": S, "notes": [E, E, ...]' in system["content"]
    assert "Notebooks (numbered, for proposals):\n1. Work\n2. Home stuff" in user["content"]
    assert user["content"].endswith("Question: Merge my duplicates")
    assert "Notebooks (numbered" not in prompt("q", [], NOTES, False)[1]["content"]


@pytest.mark.parametrize(
    ("offer", "change"),
    [
        (
            {"action": "edit", "summary": "Reword", "note": 2, "content": "Deploy: Tuesdays."},
            {"action": "edit", "noteId": NOTE_IDS[1], "content": "Deploy: Tuesdays."},
        ),
        (
            {"action": "edit", "summary": "File", "note": "[3]", "notebook": 2, "kind": "fact"},
            {
                "action": "edit",
                "noteId": NOTE_IDS[2],
                "kind": "fact",
                "moveTo": {"projectId": HOME},
            },
        ),
        (
            {"action": "edit", "summary": "Unfile", "note": 1, "notebook": "personal"},
            {"action": "edit", "noteId": NOTE_IDS[0], "moveTo": {"projectId": None}},
        ),
        (
            {"action": "create", "summary": "Add", "content": "Tea: green.", "kind": "preference"},
            {"action": "create", "content": "Tea: green.", "kind": "preference", "projectId": None},
        ),
        (
            {"action": "create", "summary": "Add", "content": "X.", "kind": "fact", "notebook": 1},
            {"action": "create", "content": "X.", "kind": "fact", "projectId": WORK},
        ),
        (
            {
                "action": "merge",
                "summary": "Merge the deploy notes",
                "notes": [1, 2],
                "into": 1,
                "content": "We deploy with Argo CD every Tuesday.",
            },
            {
                "action": "merge",
                "noteIds": NOTE_IDS[:2],
                "into": NOTE_IDS[0],
                "content": "We deploy with Argo CD every Tuesday.",
            },
        ),
        (
            {"action": "merge", "summary": "M", "notes": [2, 1], "into": None, "content": "C"},
            {"action": "merge", "noteIds": [NOTE_IDS[1], NOTE_IDS[0]], "content": "C"},
        ),
        (
            {"action": "organize", "summary": "File", "notes": [1, 2], "to": 1},
            {"action": "organize", "noteIds": NOTE_IDS[:2], "destination": {"projectId": WORK}},
        ),
        (
            {"action": "organize", "summary": "Nest", "notebooks": [2], "to": {"new": "Life"}},
            {
                "action": "organize",
                "notebookIds": [HOME],
                "destination": {"newNotebook": {"name": "Life"}},
            },
        ),
        (
            {
                "action": "organize",
                "summary": "Top",
                "notes": [3],
                "to": {"new": "Drinks", "parent": 2},
            },
            {
                "action": "organize",
                "noteIds": [NOTE_IDS[2]],
                "destination": {"newNotebook": {"name": "Drinks", "parentId": HOME}},
            },
        ),
        (
            {"action": "archive", "summary": "Archive", "notes": [2]},
            {"action": "archive", "noteIds": [NOTE_IDS[1]]},
        ),
        (
            {"action": "restore", "summary": "Restore", "notebooks": [1]},
            {"action": "restore", "notebookIds": [WORK]},
        ),
        (
            {"action": "delete", "summary": "Delete", "notes": [3], "notebooks": [2]},
            {"action": "delete", "noteIds": [NOTE_IDS[2]], "notebookIds": [HOME]},
        ),
    ],
)
def test_valid_proposals_are_mapped_to_the_note_and_notebook_ids(
    offer: dict[str, Any], change: dict[str, Any]
) -> None:
    before = offered()
    answer = read_reply(proposing(offer), NOTES, NOTEBOOKS)
    assert answer.text == ANSWER and len(answer.citations) == 1
    assert answer.proposals_dropped == 0
    (draft,) = answer.proposals
    assert draft.summary == offer["summary"]
    assert draft == ProposalDraft.model_validate({"summary": offer["summary"], "change": change})
    assert offered() - before == 1


@pytest.mark.parametrize(
    ("offer", "reason"),
    [
        ({"action": "rename", "summary": "S", "note": 1}, "unknown_action"),
        ({"summary": "S", "notes": [1]}, "unknown_action"),
        ({"action": ["edit"], "summary": "S", "note": 1}, "unknown_action"),
        ("merge notes 1 and 2", "malformed"),
        ({"action": "edit", "summary": "S", "note": 4, "content": "C"}, "unknown_reference"),
        ({"action": "edit", "summary": "S", "note": 0, "content": "C"}, "unknown_reference"),
        ({"action": "archive", "summary": "S", "notebooks": [3]}, "unknown_reference"),
        ({"action": "organize", "summary": "S", "notes": [1], "to": 9}, "unknown_reference"),
        ({"action": "create", "summary": "S", "kind": "fact"}, "malformed"),
        ({"action": "edit", "summary": "S", "noteId": NOTE_IDS[0], "content": "C"}, "malformed"),
        ({"action": "archive", "summary": "S", "notes": 1}, "malformed"),
        ({"action": "archive", "summary": "S", "notes": ["one"]}, "malformed"),
        ({"action": "archive", "summary": "S", "notes": [True]}, "malformed"),
        ({"action": "organize", "summary": "S", "notes": [1], "to": {"name": "X"}}, "malformed"),
        ({"action": "merge", "summary": "S", "notes": [1], "content": "C"}, "invalid"),
        ({"action": "merge", "summary": "S", "notes": [1, 1], "content": "C"}, "invalid"),
        (
            {"action": "merge", "summary": "S", "notes": [1, 2], "into": 3, "content": "C"},
            "invalid",
        ),
        ({"action": "create", "summary": "S", "content": "  ", "kind": "fact"}, "invalid"),
        ({"action": "create", "summary": "S", "content": "C", "kind": "handoff"}, "invalid"),
        ({"action": "create", "summary": 7, "content": "C", "kind": "fact"}, "invalid"),
        ({"action": "create", "summary": "S" * 201, "content": "C", "kind": "fact"}, "invalid"),
        ({"action": "edit", "summary": "S", "note": 1}, "invalid"),
        ({"action": "archive", "summary": "S", "notes": []}, "invalid"),
        ({"action": "organize", "summary": "S", "notes": [1], "to": {"new": ""}}, "invalid"),
    ],
)
def test_invalid_proposals_are_dropped_and_counted_while_the_answer_arrives(
    offer: object, reason: str
) -> None:
    before = dropped(reason)
    good = {"action": "archive", "summary": "Archive the copy", "notes": [2]}
    answer = read_reply(proposing(offer, good), NOTES, NOTEBOOKS)
    assert answer.text == ANSWER and [c.quote for c in answer.citations] == ["every Tuesday"]
    assert [p.summary for p in answer.proposals] == ["Archive the copy"]
    assert answer.proposals_dropped == 1
    assert dropped(reason) - before == 1


def test_notebook_numbers_refer_to_nothing_when_no_notebooks_were_sent() -> None:
    before = dropped("unknown_reference")
    offer = {"action": "create", "summary": "S", "content": "C", "kind": "fact", "notebook": 1}
    answer = read_reply(proposing(offer), NOTES)
    assert (answer.proposals, answer.proposals_dropped) == ([], 1)
    assert dropped("unknown_reference") - before == 1


def test_proposals_past_the_limit_are_dropped_as_too_many() -> None:
    before = dropped("too_many")
    offers = [
        {"action": "archive", "summary": f"Archive {n}", "notes": [1 + n % 3]}
        for n in range(MAX_PROPOSALS + 2)
    ]
    answer = read_reply(proposing(*offers), NOTES)
    assert [p.summary for p in answer.proposals] == [f"Archive {n}" for n in range(MAX_PROPOSALS)]
    assert answer.proposals_dropped == 2
    assert dropped("too_many") - before == 2


@pytest.mark.parametrize("field", [{}, {"proposals": None}, {"proposals": []}])
def test_a_reply_without_proposals_proposes_nothing(field: dict[str, Any]) -> None:
    text = json.dumps({"answer": "Tuesday.", "citations": [[1, "every Tuesday"]], **field})
    text = text.replace('[1, "every Tuesday"]', '{"evidence": 1, "quote": "every Tuesday"}')
    answer = read_reply(text, NOTES, NOTEBOOKS)
    assert (answer.text, answer.proposals, answer.proposals_dropped) == ("Tuesday.", [], 0)


def test_proposals_that_are_not_a_list_are_dropped_as_one() -> None:
    before = dropped("malformed")
    text = json.dumps(
        {
            "answer": "Tuesday.",
            "citations": [{"evidence": 1, "quote": "every Tuesday"}],
            "proposals": {"action": "archive", "summary": "S", "notes": [1]},
        }
    )
    answer = read_reply(text, NOTES)
    assert (answer.text, answer.proposals, answer.proposals_dropped) == ("Tuesday.", [], 1)
    assert dropped("malformed") - before == 1


def test_an_empty_answer_still_carries_its_proposals() -> None:
    offer = {"action": "create", "summary": "Note it", "content": "Tea: green.", "kind": "fact"}
    answer = read_reply(proposing(offer, answer=""), NOTES)
    assert (answer.text, answer.citations) == ("", [])
    assert [p.change.action for p in answer.proposals] == ["create"]


def test_a_reply_refused_for_its_citations_loses_its_proposals_uncounted() -> None:
    before = offered(), dropped("malformed")
    text = json.dumps(
        {
            "answer": "Tuesday.",
            "citations": [{"evidence": 1, "quote": "every Wednesday"}],
            "proposals": [{"action": "archive", "summary": "S", "notes": [1]}, "junk"],
        }
    )
    with pytest.raises(InvalidReply):
        read_reply(text, NOTES)
    assert (offered(), dropped("malformed")) == before
