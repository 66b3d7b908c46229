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

Proposals: only when the question asks to change the notes (merge, reword, file, archive,
...) may the object also hold ``"proposals"``, changes the owner can apply later, in the
strict shape ``PROPOSALS_PROMPT`` gives. They name notes by evidence number and
notebooks by their number in the notebook list the prompt then includes (only when the
caller sent notebooks). Each is mapped to note and notebook ids and checked against the
``grove_contracts.proposals`` contract; one that fails (unknown action or key, a number
with nothing behind it, the contract's own rules) or comes after ``MAX_PROPOSALS`` valid
ones is dropped and counted, never sent back to the model: proposals never fail, retry
or change the answer. A reply refused for its citations loses its proposals with it,
and the extractive fallback proposes nothing.

The request asks for ``response_format: {"type": "json_object"}`` (when
``answer_openai_json_mode`` is on), not a strict ``json_schema``: the proposal union
has many optional keys, which strict schemas (every key required, nullable unions) fit
badly and several OpenAI-compatible servers reject or ignore, and every reply is
checked here anyway.

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

import pydantic
import requests

from grove_ask.answer import Answer, Citation, Evidence, Extractive, NotebookRef
from grove_ask.cancel import CallSession, Cancellation
from grove_ask.providers import ProviderError
from grove_ask.settings import AskSettings
from grove_ask.telemetry import (
    ANSWER_FALLBACKS,
    ANSWER_INVALID_REPLIES,
    ANSWER_PROPOSALS,
    ANSWER_PROPOSALS_DROPPED,
)
from grove_contracts.proposals import MAX_PROPOSALS, ProposalDraft
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
PROPOSALS_PROMPT = f"""\
Changes to the notes: ONLY when the question asks to change, clean up, merge, \
deduplicate, reword, file or organize, archive, restore or delete notes, the JSON object \
may also hold "proposals": [...], at most {MAX_PROPOSALS} changes the owner can apply \
later; otherwise leave "proposals" out. The answer then says what they would do, citing \
the notes they concern. Each proposal is exactly one of these objects, with no other keys:
{{"action": "edit", "summary": S, "note": E, "content": T, "kind": K, "notebook": B}} \
rewrites one note (B moves it).
{{"action": "create", "summary": S, "content": T, "kind": K, "notebook": B}} \
saves a new note (no notebook: a personal note).
{{"action": "merge", "summary": S, "notes": [E, E, ...], "into": E, "content": T, \
"kind": K}} combines 2 to 10 notes into one with content T: "into" (one of "notes") \
keeps it, or with no "into" a new note does; the other notes are archived.
{{"action": "organize", "summary": S, "notes": [E, ...], "notebooks": [B, ...], "to": D}} \
moves notes, and notebooks with everything in them, to D.
{{"action": "archive" | "restore" | "delete", "summary": S, "notes": [E, ...], \
"notebooks": [B, ...]}} archives, restores or deletes notes and whole notebooks.
Where: S is a short description for the owner (at most 200 characters); E an evidence \
number; B a number from the numbered notebook list ("personal" for no notebook; when no \
list is given, only "personal"); T the note's whole new text; K one of "preference", \
"fact", "decision", "solution"; D a notebook number B, "personal" (notes leave their \
notebook, notebooks go to the top level) or {{"new": "<name>", "parent": B}} for a new \
notebook. These may be left out (or null): "content", "kind" and "notebook" in edit \
(not all three), "notebook" in create, "into" and "kind" in merge, and one of "notes" \
and "notebooks" in organize, archive, restore and delete, "parent" of a new notebook \
(the top level); everything else is required."""
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
    question: str,
    previous: Sequence[str],
    evidence: Sequence[Evidence],
    markdown: bool,
    notebooks: Sequence[NotebookRef] = (),
) -> list[dict[str, str]]:
    """The system and user messages: rules, numbered evidence and notebooks, earlier
    questions, question."""
    numbered = "\n\n".join(f"[{n}] {item.content}" for n, item in enumerate(evidence, 1))
    parts = [f"Evidence:\n\n{numbered}"]
    if notebooks:
        listed = "\n".join(f"{n}. {' '.join(nb.name.split())}" for n, nb in enumerate(notebooks, 1))
        parts.append(f"Notebooks (numbered, for proposals):\n{listed}")
    if previous:
        earlier = "\n".join(f"- {text}" for text in previous)
        parts.append(f"Earlier questions (oldest first), for references:\n{earlier}")
    parts.append(f"Question: {question}")
    system = f"{SYSTEM_PROMPT}\n{FORMATS[markdown]}\n{PROPOSALS_PROMPT}"
    return [
        {"role": "system", "content": system},
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


def read_reply(
    reply: str, evidence: Sequence[Evidence], notebooks: Sequence[NotebookRef] = ()
) -> Answer:
    """The answer in the model's reply, each citation located exactly, with its valid
    proposals (the invalid ones dropped and counted); else ``InvalidReply``.

    Proposals are read only once the answer is usable, and also with an empty answer.
    """
    found = _json_object(reply)
    text, cited = found.get("answer"), found.get("citations", [])
    if not isinstance(text, str) or not isinstance(cited, list):
        raise InvalidReply("not_json", 'the reply must be {"answer": string, "citations": [...]}')
    if not text.strip():
        return Answer("", [], NAME, *read_proposals(found, evidence, notebooks))
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
    proposals, dropped = read_proposals(found, evidence, notebooks)
    return Answer(text.strip(), list(dict.fromkeys(citations)), NAME, proposals, dropped)


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


class DroppedProposal(Exception):
    """A proposal in the reply that cannot be used; ``reason`` labels the count."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


#: The keys of each model-facing proposal: required, then optional (besides "action").
SHAPES: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "edit": (frozenset({"summary", "note"}), frozenset({"content", "kind", "notebook"})),
    "create": (frozenset({"summary", "content", "kind"}), frozenset({"notebook"})),
    "merge": (frozenset({"summary", "notes", "content"}), frozenset({"into", "kind"})),
    "organize": (frozenset({"summary", "to"}), frozenset({"notes", "notebooks"})),
    **{
        action: (frozenset({"summary"}), frozenset({"notes", "notebooks"}))
        for action in ("archive", "restore", "delete")
    },
}
PERSONAL = "personal"


def read_proposals(
    found: dict[str, Any], evidence: Sequence[Evidence], notebooks: Sequence[NotebookRef]
) -> tuple[list[ProposalDraft], int]:
    """The valid proposals in the reply's object (at most ``MAX_PROPOSALS``) and how many
    it offered that were dropped; each drop is counted by reason."""
    offered = found.get("proposals")
    if offered is None:
        return [], 0
    references = References(evidence, notebooks)
    drafts: list[ProposalDraft] = []
    reasons = [] if isinstance(offered, list) else ["malformed"]
    for item in offered if isinstance(offered, list) else []:
        if len(drafts) == MAX_PROPOSALS:
            reasons.append("too_many")  # not validated: the count bounds the work
            continue
        try:
            drafts.append(proposal(item, references))
        except DroppedProposal as ex:
            reasons.append(ex.reason)
    service = metrics.service()
    ANSWER_PROPOSALS.labels(service).inc(len(drafts))
    for reason in reasons:
        ANSWER_PROPOSALS_DROPPED.labels(service, reason).inc()
    if reasons:
        log(logger, "answer_proposals_dropped", reasons=",".join(sorted(set(reasons))))
    return drafts, len(reasons)


def proposal(item: object, references: References) -> ProposalDraft:
    """The contract's draft of one model-facing proposal; else ``DroppedProposal``."""
    if not isinstance(item, dict):
        raise DroppedProposal("malformed")
    action = item.get("action")
    if not isinstance(action, str) or action not in SHAPES:
        raise DroppedProposal("unknown_action")
    required, optional = SHAPES[action]
    given = {key for key, value in item.items() if value is not None} - {"action"}
    if not required <= given or not given <= required | optional:
        raise DroppedProposal("malformed")
    try:
        return ProposalDraft.model_validate(
            {"summary": item["summary"], "change": _change(action, item, references)}
        )
    except pydantic.ValidationError as ex:
        raise DroppedProposal("invalid") from ex


def _change(action: str, item: dict[str, Any], refs: References) -> dict[str, Any]:
    """The contract's ``Change`` (still to be validated) with numbers mapped to ids."""
    if action == "edit":
        change: dict[str, Any] = {"action": action, "noteId": refs.note(item["note"])}
        change |= {key: item[key] for key in ("content", "kind") if item.get(key) is not None}
        if item.get("notebook") is not None:
            change["moveTo"] = {"projectId": refs.notebook(item["notebook"])}
        return change
    if action == "create":
        place = refs.notebook(PERSONAL if item.get("notebook") is None else item["notebook"])
        return {
            "action": action,
            "content": item["content"],
            "kind": item["kind"],
            "projectId": place,
        }
    targets: dict[str, Any] = {"noteIds": [refs.note(n) for n in refs.listed(item.get("notes"))]}
    if action == "merge":
        into = item.get("into")
        return {
            **targets,
            "action": action,
            "into": None if into is None else refs.note(into),
            "content": item["content"],
            "kind": item.get("kind"),
        }
    targets["notebookIds"] = [refs.notebook(n) for n in refs.listed(item.get("notebooks"))]
    if action == "organize":
        return {**targets, "action": action, "destination": refs.destination(item["to"])}
    return {**targets, "action": action}


class References:
    """Maps the prompt's evidence and notebook numbers to note and notebook ids."""

    def __init__(self, evidence: Sequence[Evidence], notebooks: Sequence[NotebookRef]) -> None:
        self._notes = [item.note_id for item in evidence]
        self._notebooks = [notebook.id for notebook in notebooks]

    def note(self, value: object) -> str:
        """The note of evidence number ``value``."""
        return self._pick(self._notes, value)

    def notebook(self, value: object) -> str | None:
        """The notebook numbered ``value``; None for ``"personal"``."""
        return None if value == PERSONAL else self._pick(self._notebooks, value)

    def destination(self, value: object) -> dict[str, Any]:
        """A ``Destination``: a notebook number, ``"personal"`` or ``{"new", "parent"}``."""
        if not isinstance(value, dict):
            return {"projectId": self.notebook(value)}
        if not set(value) <= {"new", "parent"}:
            raise DroppedProposal("malformed")
        parent = value.get("parent")
        parent_id = None if parent is None else self.notebook(parent)
        return {"newNotebook": {"name": value.get("new"), "parentId": parent_id}}

    @staticmethod
    def listed(value: object) -> list[object]:
        """A list of numbers as given (null: none); anything else is malformed."""
        if value is None:
            return []
        if not isinstance(value, list):
            raise DroppedProposal("malformed")
        return value

    @staticmethod
    def _pick(ids: list[str], value: object) -> str:
        number = _number(value)
        if number is None:
            raise DroppedProposal("malformed")
        if not 1 <= number <= len(ids):
            raise DroppedProposal("unknown_reference")
        return ids[number - 1]


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
        notebooks: Sequence[NotebookRef] = (),
    ) -> Answer:
        """The model's cited answer and proposals, the extractive answer (no proposals)
        after two unusable replies.

        Raises ``TimeoutError`` past ``timeout`` (or the provider timeout),
        ``ProviderError`` when the provider fails, ``Cancelled`` when the call ended.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        messages = prompt(question, previous, evidence, markdown, notebooks)
        with CallSession(cancellation or Cancellation()) as session:
            for _ in range(ATTEMPTS):
                reply = self._complete(session, messages, deadline)
                try:
                    return read_reply(reply, evidence, notebooks)
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
