"""The ``openai`` answer generator: a chat-completions model whose citations are checked.

Any OpenAI-compatible ``POST {base}/chat/completions`` (vLLM, Ollama, llama.cpp server,
hosted APIs). The prompt numbers the evidence ``[1]``, ``[2]``, … and asks for one JSON
object, ``{"answer": "...", "citations": [{"evidence": 1, "quote": "exact words"}]}``.
Each citation is mapped to its evidence item and its quote located verbatim in that
item's content (the first occurrence gives ``start`` and ``end``); a quote that does not
occur exactly, or a number with no evidence item, makes the citation invalid. A reply
that is not such an object, an answer without citations, or any invalid citation is
sent back to the model once, saying what was wrong; if the second reply fails too, the
``extractive`` generator answers instead (labelled ``extractive``). An empty answer
means the evidence does not answer the question: it is passed on without a retry.

Provider failures are not hidden by the fallback (the spec asks for 503/504): a timeout
raises ``TimeoutError`` (``DEADLINE_EXCEEDED``, 504 at the api), a refused connection or
a non-200 answer ``ProviderError`` (``UNAVAILABLE``, 503). When the gRPC call ends early
its ``Cancellation`` shuts the request's socket and ``Cancelled`` is raised.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from typing import Any

import requests

from grove_ask.answer import Answer, Citation, Evidence, Extractive
from grove_ask.cancel import CallSession, Cancellation
from grove_ask.providers import ProviderError
from grove_ask.settings import AskSettings
from grove_ask.telemetry import ANSWER_FALLBACKS, ANSWER_INVALID_REPLIES
from grove_telemetry import metrics
from grove_telemetry.logs import log

#: Model replies per question: the first and one corrected retry.
ATTEMPTS = 2
#: Characters of a refused quote repeated back to the model.
QUOTE_ECHO_CHARS = 80
NAME = "openai"
SYSTEM_PROMPT = """\
You answer questions using only the numbered evidence you are given.
Reply with one JSON object and nothing else:
{"answer": "<the answer>", "citations": [{"evidence": <number>, "quote": "<words copied \
exactly from that evidence>"}]}
Rules:
- Back every statement of the answer with at least one citation.
- A quote is copied character for character from the one evidence item it names: a \
sentence or a phrase, never reworded, shortened inside, or joined across items.
- Do not write evidence numbers in the answer text; the citations carry them.
- If the evidence does not answer the question, reply {"answer": "", "citations": []}."""
FORMATS = {
    False: "Write the answer as plain text, without Markdown.",
    True: "Write the answer in Markdown.",
}
logger = logging.getLogger("grove.ask")


class InvalidReply(Exception):
    """The model's reply cannot be used; the message tells the model why."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def prompt(
    question: str, previous: Sequence[str], evidence: Sequence[Evidence], markdown: bool
) -> list[dict[str, str]]:
    """The system and user messages: rules, numbered evidence, earlier questions, question."""
    numbered = "\n\n".join(f"[{n}] {item.content}" for n, item in enumerate(evidence, 1))
    parts = [f"Evidence:\n\n{numbered}"]
    if previous:
        earlier = "\n".join(f"- {text}" for text in previous)
        parts.append(f"Earlier questions (oldest first), for references:\n{earlier}")
    parts.append(f"Question: {question}")
    return [
        {"role": "system", "content": f"{SYSTEM_PROMPT}\n{FORMATS[markdown]}"},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def correction(reply: str, problem: InvalidReply) -> list[dict[str, str]]:
    """The messages that send a refused reply back with what was wrong."""
    return [
        {"role": "assistant", "content": reply},
        {
            "role": "user",
            "content": f"That reply cannot be used: {problem}. Reply again with only the JSON"
            " object, copying every quote exactly from the evidence item it names.",
        },
    ]


def read_reply(reply: str, evidence: Sequence[Evidence]) -> Answer:
    """The answer in the model's reply, each citation located exactly; else ``InvalidReply``."""
    found = _json_object(reply)
    text, cited = found.get("answer"), found.get("citations", [])
    if not isinstance(text, str) or not isinstance(cited, list):
        raise InvalidReply("not_json", 'the reply must be {"answer": string, "citations": [...]}')
    if not text.strip():
        return Answer("", [], NAME)
    if not cited:
        raise InvalidReply("no_citations", "the answer has no citations")
    citations, problems = [], []
    for index, item in enumerate(cited, 1):
        try:
            citations.append(_citation(item, evidence))
        except InvalidReply as ex:
            problems.append(f"citation {index}: {ex}")
    if problems:
        raise InvalidReply("invalid_citation", "; ".join(problems))
    return Answer(text.strip(), list(dict.fromkeys(citations)), NAME)


def locate(quote: str, item: Evidence, number: int) -> Citation:
    """The citation of ``quote``'s first exact occurrence in evidence ``number``."""
    start = item.content.find(quote)
    citation = Citation(item.note_id, item.version, quote, start, start + len(quote))
    if start < 0 or not verified(citation, item):
        echo = quote if len(quote) <= QUOTE_ECHO_CHARS else quote[:QUOTE_ECHO_CHARS] + "…"
        raise InvalidReply(
            "invalid_citation",
            f"the quote {json.dumps(echo, ensure_ascii=False)} does not occur in evidence {number}",
        )
    return citation


def verified(citation: Citation, item: Evidence) -> bool:
    """The api's check: same revision, in bounds, ``content[start:end] == quote``."""
    return (
        (citation.note_id, citation.version) == (item.note_id, item.version)
        and 0 <= citation.start < citation.end <= len(item.content)
        and item.content[citation.start : citation.end] == citation.quote
    )


def _json_object(reply: str) -> dict[str, Any]:
    """The JSON object in the reply, tolerating code fences or words around it."""
    start, end = reply.find("{"), reply.rfind("}")
    try:
        found = json.loads(reply[start : end + 1]) if 0 <= start < end else None
    except (ValueError, RecursionError):
        found = None
    if not isinstance(found, dict):
        raise InvalidReply("not_json", "the reply is not a JSON object")
    return found


def _citation(item: object, evidence: Sequence[Evidence]) -> Citation:
    if not isinstance(item, dict):
        raise InvalidReply("invalid_citation", 'must be {"evidence": number, "quote": string}')
    number, quote = _number(item.get("evidence")), item.get("quote")
    if number is None or not isinstance(quote, str) or not quote.strip():
        raise InvalidReply("invalid_citation", 'must be {"evidence": number, "quote": string}')
    if not 1 <= number <= len(evidence):
        raise InvalidReply(
            "invalid_citation", f"there is no evidence {number} (1 to {len(evidence)})"
        )
    return locate(quote.strip(), evidence[number - 1], number)


def _number(value: object) -> int | None:
    """An evidence number given as ``1``, ``"1"`` or ``"[1]"``; None for anything else."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().strip("[]").isdigit():
        return int(value.strip().strip("[]"))
    return None


class OpenAIChat:
    """Answers with a chat-completions model; ``extractive`` after two unusable replies."""

    name = NAME

    def __init__(self, settings: AskSettings, fallback: Extractive) -> None:
        assert settings.answer_openai_base_url and settings.answer_openai_model
        self._url = settings.answer_openai_base_url.rstrip("/") + "/chat/completions"
        self._model = settings.answer_openai_model
        self._timeout = settings.answer_openai_timeout_seconds
        self._json_mode = settings.answer_openai_json_mode
        key = settings.answer_openai_api_key
        self._headers = {"Authorization": f"Bearer {key.get_secret_value()}"} if key else {}
        self._fallback = fallback

    def answer(
        self,
        question: str,
        previous: Sequence[str],
        evidence: Sequence[Evidence],
        markdown: bool,
        timeout: float | None,
        cancellation: Cancellation | None = None,
    ) -> Answer:
        """The model's cited answer, the extractive one after two unusable replies.

        Raises ``TimeoutError`` past ``timeout`` (or the provider timeout),
        ``ProviderError`` when the provider fails, ``Cancelled`` when the call ended.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        messages = prompt(question, previous, evidence, markdown)
        with CallSession(cancellation or Cancellation()) as session:
            for _ in range(ATTEMPTS):
                reply = self._complete(session, messages, deadline)
                try:
                    return read_reply(reply, evidence)
                except InvalidReply as ex:
                    ANSWER_INVALID_REPLIES.labels(metrics.service(), ex.reason).inc()
                    log(logger, "answer_reply_refused", reason=ex.reason)
                    messages = [*messages, *correction(reply, ex)]
        ANSWER_FALLBACKS.labels(metrics.service()).inc()
        return self._fallback.answer(question, previous, evidence, markdown, _left(deadline))

    def _complete(
        self, session: CallSession, messages: list[dict[str, str]], deadline: float | None
    ) -> str:
        """The model's reply text (empty if it gave none)."""
        body: dict[str, Any] = {"model": self._model, "messages": messages}
        if self._json_mode:
            body["response_format"] = {"type": "json_object"}
        left = _left(deadline)
        timeout = self._timeout if left is None else min(self._timeout, left)
        try:
            response = session.post(self._url, json=body, headers=self._headers, timeout=timeout)
        except requests.Timeout as ex:
            raise TimeoutError("the answer model did not reply in time") from ex
        except requests.RequestException as ex:
            raise ProviderError("provider_unreachable", type(ex).__name__) from ex
        if response.status_code != 200:
            raise ProviderError("provider_error", f"HTTP {response.status_code} from the model")
        try:
            content = response.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as ex:
            raise ProviderError("provider_error", "malformed chat-completions response") from ex
        return content if isinstance(content, str) else ""


def _left(deadline: float | None) -> float | None:
    """Seconds until ``deadline``; ``TimeoutError`` once it has passed."""
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("no time left to answer")
    return left
