"""The openai generator's prompt and how it reads replies: exact quotes or a refusal."""

from __future__ import annotations

import json
import socket
import uuid
from typing import Any

import pytest

from grove_api.middleware import AccountSlots
from grove_ask.answer import Evidence
from grove_ask.cancel import Cancellation
from grove_ask.chat import InvalidReply, correction, prompt, read_reply

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
