"""Retrieval quality on LongMemEval_S: evidence sessions and turns in the top k.

Each question has its own haystack (one user's ~490 chat turns over 40-60 dated
sessions), saved into an account of its own as an agent logging the user's chats would:
every turn in order (sessions by date), one note ``[date] role: text``, a text longer
than a note cut into pieces of at most ``MAX_CONTENT_CHARS`` (each with the prefix), one
source per session, through ``POST /v1/memories/batch``; embedded by the real worker.
The question then runs through ``POST /v1/memories/search`` (relevance, limit 50, hybrid
when embeddings are on), each returned note is mapped back to its turn (a turn ranks
where its first piece ranks), and the benchmark's own metrics (``bench.retrieval_metrics``)
are taken at session and turn level, per question type, beside the published baselines.

Evidence, as the benchmark defines it: the turns flagged ``has_answer`` (user or
assistant) in the sessions of ``answer_session_ids``, and the sessions that hold them.
Abstention questions (``_abs``) have none and are skipped, as is any question left
without an evidence turn. The saved notes carry no session ID (the data's evidence
sessions are named ``answer_…``): a note's ``sourceRef`` is
``longmemeval:<question>:<session index>:<turn index>:<piece>``.

Data: ../shared/data/longmemeval-s-dev.json.gz (150 questions; MIT). The benchmark's
other questions are kept for independent evaluation and never used here.
"""

from __future__ import annotations

import gzip
import json
import random
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from bench import quality, stack
from bench.retrieval_metrics import TurnId, session_level, turn_level
from grove_contracts.notes import MAX_BATCH_ITEMS, MAX_CONTENT_CHARS

DATA = stack.DATA.parent / "longmemeval-s-dev.json.gz"
KS = (5, 10)
LEVELS = ("session", "turn")
#: Published session-level figures on the S set (the data README): an independent
#: replication, retrieval only, non-abstention questions.
BASELINES = {
    "BM25": {"recall_all@5": 0.735, "ndcg_any@5": 0.767, "recall_all@10": 0.823},
    "small embedding + lexical": {
        "recall_all@5": 0.852,
        "ndcg_any@5": 0.830,
        "recall_all@10": 0.948,
    },
}
#: JSON bytes a batch's texts may take: the body limit is 1 MiB, and a character outside
#: ASCII goes on the wire as a six-byte escape.
BATCH_BYTES = 600_000
SEED = 50  # the shuffle --questions takes its first N from
MODEL_SAMPLE = 1000  # notes the model's own rate is measured on
WORKER_BATCH = 32  # GROVE_WORKER_BATCH's default: the batches the worker embeds


@dataclass(frozen=True)
class Note:
    """One piece of a turn, as the note it becomes."""

    content: str
    ref: str
    source: str


@dataclass(frozen=True)
class Question:
    """One question: its haystack as notes, every turn of it, and the evidence turns."""

    qid: str
    kind: str
    text: str
    notes: tuple[Note, ...]
    corpus: tuple[TurnId, ...]
    evidence: frozenset[TurnId]
    sessions: tuple[str, ...]  # session IDs by index, to map a note back to its turn
    cut: int  # turns too long for one note


def load(path: Path = DATA) -> list[dict[str, Any]]:
    """The questions of the dev file, as the benchmark lays them out."""
    if not path.exists():
        sys.exit(f"bench: {path} is missing (the shared benchmark data)")
    with gzip.open(path, "rt", encoding="utf-8") as stream:
        return json.load(stream)  # type: ignore[no-any-return]


def chosen(raw: list[dict[str, Any]], count: int | None, seed: int = SEED) -> list[Question]:
    """The scorable questions (abstention and evidence-less ones skipped); with ``count``,
    the first ``count`` of them shuffled with ``seed``: a mix of types, and a smaller run's
    questions are among a larger one's."""
    questions = [q for q in map(question_of, raw) if q.evidence]
    if count is None:
        return questions
    random.Random(seed).shuffle(questions)  # noqa: S311 - a reproducible sample, not a secret
    return questions[:count]


def question_of(raw: dict[str, Any]) -> Question:
    """The question with its haystack as notes, sessions in date order."""
    qid = raw["question_id"]
    ids, dates, answers = (
        raw["haystack_session_ids"],
        raw["haystack_dates"],
        raw["answer_session_ids"],
    )
    notes: list[Note] = []
    corpus: list[TurnId] = []
    evidence: set[TurnId] = set()
    cut = 0
    for index in sorted(range(len(ids)), key=lambda i: dates[i]):
        source = f"chat session {index + 1} of {dates[index]}"
        for turn, said in enumerate(raw["haystack_sessions"][index], 1):
            corpus.append((ids[index], turn))
            if said.get("has_answer") and ids[index] in answers and not qid.endswith("_abs"):
                evidence.add((ids[index], turn))
            prefix = f"[{dates[index]}] {said['role']}: "
            parts = pieces(said["content"], MAX_CONTENT_CHARS - len(prefix))
            cut += len(parts) > 1
            for number, part in enumerate(parts):
                ref = f"longmemeval:{qid}:{index}:{turn}:{number}"
                notes.append(Note((prefix + part).strip(), ref, source))
    return Question(
        qid, raw["question_type"], raw["question"], tuple(notes), tuple(corpus),
        frozenset(evidence), tuple(ids), cut,
    )  # fmt: skip


def pieces(text: str, room: int) -> list[str]:
    """``text`` in pieces of at most ``room`` characters, each cut at the last space of
    its second half when there is one (else mid-word)."""
    text = text.strip()
    found = []
    while len(text) > room:
        space = text.rfind(" ", room // 2, room + 1)
        end = space if space > 0 else room
        found.append(text[:end].strip())
        text = text[end:].strip()
    return [*found, text] if text or not found else found


def batches(notes: Iterable[Note]) -> Iterator[list[Note]]:
    """``notes`` in order, in batches of at most ``MAX_BATCH_ITEMS`` and ``BATCH_BYTES``."""
    batch: list[Note] = []
    size = 0
    for note in notes:
        length = len(json.dumps(note.content))
        if batch and (len(batch) == MAX_BATCH_ITEMS or size + length > BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(note)
        size += length
    if batch:
        yield batch


def ingest(api_url: str, key: str, question: Question) -> None:
    """Save the question's notes in order through ``POST /v1/memories/batch``."""
    with quality.session(threading.local(), key) as http:
        for batch in batches(question.notes):
            save(http, api_url, question.qid, batch)


def save(http: requests.Session, api_url: str, qid: str, batch: list[Note]) -> None:
    """One batch of notes, every one of which must be created."""
    items: list[dict[str, Any]] = [
        {
            "content": note.content,
            "kind": "fact",
            "provenance": {"sourceRef": note.ref, "sourceAgent": note.source[:100]},
        }
        for note in batch
    ]
    response = http.post(f"{api_url}/v1/memories/batch", json={"items": items}, timeout=120)
    response.raise_for_status()
    failed = [i for i in response.json()["data"]["items"] if i["status"] != "created"]
    if failed:
        raise RuntimeError(f"{qid}: notes not created: {failed[:3]}")


def ranked(api_url: str, key: str, question: Question, mode: str) -> list[TurnId]:
    """The turns of the top search results, best first, each where its first piece is."""
    with quality.session(threading.local(), key) as http:
        return turns_of(question, quality.ranked_sources(http, api_url, question.text, mode))


def turns_of(question: Question, refs: Iterable[str]) -> list[TurnId]:
    """The turns of notes ranked by their ``sourceRef``, each where its first piece is."""
    found: dict[TurnId, None] = {}
    for ref in refs:
        index, turn = ref.rsplit(":", 3)[1:3]
        found.setdefault((question.sessions[int(index)], int(turn)), None)
    return list(found)


def scores(question: Question, ranking: list[TurnId]) -> dict[str, Any]:
    """The question's recall_all@k and ndcg_any@k at each level."""
    row: dict[str, Any] = {"qid": question.qid, "type": question.kind, "ranking": ranking}
    for level, measure in (("session", session_level), ("turn", turn_level)):
        row[level] = {}
        for k in KS:
            recall, ndcg = measure(ranking, question.evidence, question.corpus, k)
            row[level] |= {f"recall_all@{k}": recall, f"ndcg_any@{k}": ndcg}
    return row


def summarize(rows: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """Mean of each metric per level, over all questions and per question type."""
    kinds = ["all", *sorted({r["type"] for r in rows})]
    summary: dict[str, dict[str, dict[str, float]]] = {}
    for level in LEVELS:
        summary[level] = {}
        for kind in kinds:
            chosen_rows = [r[level] for r in rows if kind in ("all", r["type"])]
            means = {m: sum(r[m] for r in chosen_rows) / len(chosen_rows) for m in chosen_rows[0]}
            summary[level][kind] = {"questions": len(chosen_rows), **means}
    return summary


def run(
    api_url: str,
    new_key: Callable[[str], str],
    wait_ready: Callable[[str, int], None],
    questions: list[Question],
    modes: Iterable[str] = ("hybrid",),
) -> dict[str, Any]:
    """Save every question's haystack into its own account, wait until every note is
    embedded, then ask each question in each mode and score it.

    ``new_key(question_id)`` creates an account and returns its API key;
    ``wait_ready(key, count)`` blocks until that many of its notes are embedded. Returns
    the summary per mode, the per-question rows, and the ingest figures (``save_all``)."""
    keys, figures = save_all(api_url, new_key, wait_ready, questions)
    return {**evaluate(api_url, keys, questions, modes), "ingest": figures}


def save_all(
    api_url: str,
    new_key: Callable[[str], str],
    wait_ready: Callable[[str, int], None],
    questions: list[Question],
) -> tuple[dict[str, str], dict[str, Any]]:
    """Save every question's haystack into its own account (four at a time) and wait
    until every note is embedded: the keys by question ID, and the ingest figures (notes
    per second from the first save to every note ``ready``)."""
    keys = {q.qid: new_key(q.qid) for q in questions}
    notes = sum(len(q.notes) for q in questions)
    started = time.perf_counter()
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda q: ingest(api_url, keys[q.qid], q), questions))
    saved = time.perf_counter() - started
    for done, question in enumerate(questions, 1):
        wait_ready(keys[question.qid], len(question.notes))
        print(f"  {done}/{len(questions)} haystacks embedded", flush=True)
    ready = time.perf_counter() - started
    return keys, {
        "notes": notes,
        "turns": sum(len(q.corpus) for q in questions),
        "turnsCut": sum(q.cut for q in questions),
        "meanChars": round(sum(len(n.content) for q in questions for n in q.notes) / notes),
        "saveSeconds": round(saved, 1),
        "readySeconds": round(ready, 1),
        "notesPerSecond": round(notes / ready, 1),
    }


def evaluate(
    api_url: str, keys: dict[str, str], questions: list[Question], modes: Iterable[str]
) -> dict[str, Any]:
    """Ask each question in each mode with its account's key (``keys`` by question ID) and
    score it: the summary per mode and the per-question rows."""
    rows: dict[str, list[dict[str, Any]]] = {}
    for mode in modes:
        rows[mode] = [scores(q, ranked(api_url, keys[q.qid], q, mode)) for q in questions]
    return {
        "questions": len(questions),
        "summary": {mode: summarize(found) for mode, found in rows.items()},
        "rows": rows,
    }


def model_rate(questions: list[Question], count: int = MODEL_SAMPLE) -> float:
    """Notes per second of MiniLM's own encode (in this process, batches of the worker's
    default size) on ``count`` of the questions' notes taken evenly through them: what
    the end-to-end rate is held against."""
    from bench import ingest

    texts = [note.content for question in questions for note in question.notes]
    return ingest.raw_throughput(texts[:: max(1, len(texts) // count)][:count], WORKER_BATCH)


def table(report: dict[str, Any]) -> str:
    """The figures as a fixed-width table, with the published session-level baselines."""
    metrics = [f"{name}@{k}" for k in KS for name in ("recall_all", "ndcg_any")]
    head = f"{'mode':<8}{'level':<9}{'question type':<27}{'n':>4}"
    head += "".join(
        f"{m.replace('recall_all', 'R_all').replace('ndcg_any', 'nDCG'):>10}" for m in metrics
    )
    lines = [head, "-" * len(head)]
    for mode, by_level in report["summary"].items():
        for level, by_kind in by_level.items():
            for kind, row in by_kind.items():
                cells = "".join(f"{row[m]:>10.3f}" for m in metrics)
                lines.append(f"{mode:<8}{level:<9}{kind:<27}{row['questions']:>4}{cells}")
    for name, row in BASELINES.items():
        cells = "".join(f"{row[m]:>10.3f}" if m in row else f"{'':>10}" for m in metrics)
        lines.append(f"{'publ.':<8}{'session':<9}{name:<27}{'':>4}{cells}")
    if "ingest" not in report:  # scored on a kept store: nothing was saved
        return "\n".join(lines)
    figures = report["ingest"]
    lines.append(
        f"\n{figures['notes']} notes ({figures['turns']} turns, {figures['turnsCut']} cut into"
        f" pieces, {figures['meanChars']} characters on average): saved in"
        f" {figures['saveSeconds']} s, all embedded after {figures['readySeconds']} s:"
        f" {figures['notesPerSecond']} notes/s from save to ready"
    )
    if "modelNotesPerSecond" in figures:
        lines.append(
            f"the model alone on {figures['modelSample']} of these notes:"
            f" {figures['modelNotesPerSecond']} notes/s (end to end"
            f" {figures['notesPerSecond'] / figures['modelNotesPerSecond']:.2f}x)"
        )
    return "\n".join(lines)
