"""Enrichment: classification suggestions and notebook briefs, written by fenced jobs.

Triggers on ``memories`` (migration 0034) queue the jobs: ``classify_notes`` (one queued
per account) while the account has live notes saved without a notebook and without a
suggestion for their version, ``brief_notebook`` (one queued per notebook) when a
notebook's notes change. A worker reads in one transaction, computes outside any, and
writes in a second transaction with the job's completion, fenced:

- a suggestion is stored only for the note revision it was computed from, and only
  while that note is live and still without a notebook (``STORE_SUGGESTIONS``); an edit
  in between leaves the old computation unstored, and the edit queued a new job;
- a brief is stored only if the notebook's notes are still the ones it was made from
  (their ids and versions: ``FINGERPRINT``), checked with the notebook locked.

Nothing is ever applied: suggestions are offered (``GET /v1/suggestions``), briefs read
(``GET /v1/notebooks/{id}/brief``). Each note classified and each brief written counts
against the account's daily enrichment quota (``GROVE_ENRICH_DAILY_QUOTA``); over it, the
job waits for the next UTC day.

The classifier is lexical and deterministic by default: the note's nearest notes by
shared words (the search postings, ``note_words``, then ``duplicates.word_similarity``)
vote for a notebook and a kind, weighted by similarity. The brief is extractive: the
opening sentence of the notebook's most representative notes (highest summed similarity
to the others, near-repeats skipped), each quoted verbatim and cited. Either can be
handed to grove-ask's ``Answer`` instead (``AnswerClassifier``, ``AnswerWriter``: the
generator grove-ask runs, e.g. an OpenAI-compatible model), the deterministic result
standing in whenever it fails.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, time, timedelta
from typing import Any, Literal
from uuid import UUID

from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from grove_auth.principal import Principal
from grove_contracts.enrichment import (
    BriefCitation,
    NotebookBrief,
    Suggestion,
    SuggestionPage,
    SuggestionQuery,
)
from grove_contracts.proposals import MAX_PROPOSAL_NOTEBOOKS, EditChange
from grove_db import queue
from grove_db.pool import Conn, transaction
from grove_memory import cursors
from grove_memory.inference import EvidenceText, InferenceClient, InferenceError
from grove_memory.notes import duplicates
from grove_memory.scope import LIVE, check_notebook, params
from grove_memory.store import Store, require

Result = Literal["stored", "stale", "empty", "over_quota", "lost"]

#: Unfiled notes one classification job reads (it queues the next job if more remain).
CLASSIFY_BATCH = 50
#: The note's words that find its neighbours: its longest (``notes.SIMILAR``'s rule).
CLASSIFY_WORDS = 8
#: Notes each of those words finds at most, and the neighbours read for each note.
CLASSIFY_POSTINGS = 100
CLASSIFY_CANDIDATES = 20
#: A neighbour votes only if it shares this much of the note's words (``word_similarity``).
MIN_NEIGHBOUR_SIMILARITY = 0.15
#: A notebook (or kind) is suggested only with at least this share of the votes, from at
#: least ``MIN_VOTERS`` neighbours.
MIN_CONFIDENCE = 0.5
MIN_VOTERS = 2
#: Supporting notes named with a suggestion.
MAX_EVIDENCE = 3

#: A brief is made from at most this many of the notebook's notes (the latest changed).
BRIEF_NOTES = 200
#: Points (quoted sentences) in a brief, and the longest quote.
BRIEF_POINTS = 5
BRIEF_QUOTE_CHARS = 240
#: A note whose words are this close to a point already chosen is not quoted again.
BRIEF_REPEAT = 0.5

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")

#: Every statement of a job names its account as a value (``%(account)s``, on each
#: table), so on a Citus cluster it runs on the account's shard alone.
UNCLASSIFIED = f"""
    SELECT m.id, m.version, m.kind, m.content FROM memories m
    WHERE m.account_id = %(account)s AND m.project_id IS NULL AND m.kind <> 'passage'
      AND {LIVE} AND m.archived_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM note_suggestions s WHERE s.account_id = %(account)s
                      AND s.memory_id = m.id AND s.version = m.version)
    ORDER BY m.updated_at, m.id LIMIT %(limit)s
"""
#: Each unfiled note's candidate neighbours: live notes sharing the most of its longest
#: words (bounded postings per word), with their notebook (only live ones) and kind.
NEIGHBOURS = f"""
    SELECT b.id AS note, m.id, m.version, m.kind, m.content,
           CASE WHEN p.id IS NOT NULL THEN m.project_id END AS project_id
    FROM memories b
    CROSS JOIN LATERAL (
        SELECT v.memory_id, count(*) AS shared
        FROM (SELECT l.word FROM unnest(tsvector_to_array(b.content_tsv)) AS l (word)
              ORDER BY length(l.word) DESC, l.word LIMIT %(words)s) AS w
        CROSS JOIN LATERAL (
            SELECT x.memory_id FROM note_words x
            WHERE x.account_id = %(account)s AND x.word = w.word AND x.memory_id <> b.id
            LIMIT %(postings)s) AS v
        GROUP BY v.memory_id ORDER BY shared DESC, v.memory_id LIMIT %(candidates)s
    ) AS c
    JOIN memories m ON m.account_id = %(account)s AND m.id = c.memory_id
    LEFT JOIN projects p ON p.account_id = %(account)s AND p.id = m.project_id
        AND p.deleted_at IS NULL AND p.archived_at IS NULL
    WHERE b.account_id = %(account)s AND b.id = ANY(%(ids)s::uuid[])
      AND m.kind <> 'passage' AND {LIVE}
      AND m.archived_at IS NULL
"""
#: The notebooks a note may be filed into (live, not archived), by name: what a model
#: classifier chooses from.
FILING_NOTEBOOKS = """
    SELECT id, name FROM projects
    WHERE account_id = %(account)s AND deleted_at IS NULL AND archived_at IS NULL
    ORDER BY name, id LIMIT %(limit)s
"""
#: Fenced: a row is written only for a note still live, unfiled and at that version. A
#: suggestion made again takes the new row's time (its default, ``now()``): Citus allows
#: no ``now()`` in ``DO UPDATE``.
STORE_SUGGESTIONS = """
    INSERT INTO note_suggestions (account_id, memory_id, version, kind, project_id,
                                  confidence, evidence)
    SELECT m.account_id, m.id, m.version, t.kind, t.project_id, t.confidence, t.evidence
    FROM unnest(%(ids)s::uuid[], %(versions)s::int[], %(kinds)s::text[],
                %(projects)s::uuid[], %(confidences)s::real[], %(evidence)s::jsonb[])
         AS t (id, version, kind, project_id, confidence, evidence)
    JOIN memories m ON m.id = t.id AND m.version = t.version
    WHERE m.account_id = %(account)s AND m.project_id IS NULL AND m.deleted_at IS NULL
      AND m.archived_at IS NULL
    ON CONFLICT (account_id, memory_id) DO UPDATE SET
        version = excluded.version, kind = excluded.kind, project_id = excluded.project_id,
        confidence = excluded.confidence, evidence = excluded.evidence,
        created_at = excluded.created_at
"""
#: The notes a brief summarises: the notebook's live notes (not passages, not archived,
#: not expired: the expiry sweep's mark queues the next brief).
IN_NOTEBOOK = (
    f"m.account_id = %(account)s AND m.project_id = %(notebook)s AND m.kind <> 'passage'"
    f" AND {LIVE} AND m.archived_at IS NULL"
)
#: Which notes (ids and versions) the notebook holds now, and how many.
FINGERPRINT = f"""
    SELECT count(*) AS notes,
           md5(coalesce(string_agg(m.id::text || ':' || m.version, ',' ORDER BY m.id), ''))
               AS fingerprint
    FROM memories m WHERE {IN_NOTEBOOK}
"""
BRIEF_SOURCES = f"""
    SELECT m.id, m.version, m.content FROM memories m WHERE {IN_NOTEBOOK}
    ORDER BY m.updated_at DESC, m.id LIMIT %(limit)s
"""
STORE_BRIEF = """
    INSERT INTO notebook_briefs (account_id, project_id, fingerprint, notes, text,
                                 citations, generator)
    VALUES (%(account)s, %(notebook)s, %(fingerprint)s, %(notes)s, %(text)s,
            %(citations)s, %(generator)s)
    ON CONFLICT (account_id, project_id) DO UPDATE SET
        fingerprint = excluded.fingerprint, notes = excluded.notes, text = excluded.text,
        citations = excluded.citations, generator = excluded.generator,
        created_at = excluded.created_at
"""
#: Reserve up to ``%(want)s`` of today's quota, the account's row locked (so concurrent
#: jobs never overspend it); the units granted (0: none left).
USE_QUOTA = """
    INSERT INTO account_enrichment (account_id, day, used)
    VALUES (grove_current_account(), %(day)s, least(%(want)s, greatest(%(quota)s, 0)))
    ON CONFLICT (account_id, day) DO UPDATE SET used = least(
        account_enrichment.used + %(want)s, greatest(%(quota)s, account_enrichment.used))
    RETURNING new.used - coalesce(old.used, 0) AS units
"""


@dataclass(frozen=True)
class Done:
    """What one enrichment job did: its result and how many artifacts it stored."""

    result: Result
    stored: int = 0
    stale: int = 0
    #: A model was to write the brief but the extractive one was stored.
    fell_back: bool = False
    #: Notes a model was to classify that got the lexical suggestion instead.
    fallbacks: int = 0


@dataclass(frozen=True)
class Proposed:
    """A suggestion computed for one note revision."""

    id: UUID
    version: int
    kind: str | None
    project_id: UUID | None
    confidence: float
    evidence: list[dict[str, Any]]


def suggest(note: dict[str, Any], neighbours: Sequence[dict[str, Any]]) -> Proposed:
    """The notebook and kind ``note``'s neighbours vote for (None when no clear winner)."""
    voters = _voters(note, neighbours)
    total = sum(similarity for similarity, _ in voters)
    notebook, notebook_share, support = _winner(voters, lambda other: other["project_id"], total)
    kind, kind_share, _ = _winner(voters, lambda other: other["kind"], total)
    return _proposed(note, notebook, notebook_share, support, kind, kind_share)


def _voters(
    note: dict[str, Any], neighbours: Sequence[dict[str, Any]]
) -> list[tuple[float, dict[str, Any]]]:
    """The neighbours close enough to vote, with their similarity to ``note``."""
    mine = duplicates.words(note["content"])
    voters = []
    for other in neighbours:
        similarity = duplicates.word_similarity(mine, duplicates.words(other["content"]))
        if similarity >= MIN_NEIGHBOUR_SIMILARITY:
            voters.append((similarity, other))
    return voters


def _proposed(
    note: dict[str, Any],
    notebook: UUID | None,
    notebook_share: float,
    support: list[tuple[float, dict[str, Any]]],
    kind: str | None,
    kind_share: float,
) -> Proposed:
    """The suggestion: a kind only if it differs from the note's own (never ``handoff``,
    a role rather than a classification), the notebook with its supporting notes."""
    if kind in (note["kind"], "handoff"):
        kind = None
    evidence = [
        {"id": str(other["id"]), "version": other["version"]}
        for _, other in sorted(support, key=lambda pair: -pair[0])[:MAX_EVIDENCE]
    ]
    chosen = [share for value, share in ((notebook, notebook_share), (kind, kind_share)) if value]
    return Proposed(
        note["id"],
        note["version"],
        kind,
        notebook,
        round(max(chosen), 3) if chosen else 0.0,
        evidence if notebook else [],
    )


@dataclass(frozen=True)
class Classified:
    """One note's suggestion, and whether a model was asked but the lexical vote stood in."""

    proposed: Proposed
    fell_back: bool = False


#: How one note is classified: from the note, its neighbours and the notebooks (id,
#: name) it may be filed into; ``fell_back`` when a model was asked but did not answer.
Classifier = Callable[
    [dict[str, Any], Sequence[dict[str, Any]], Sequence[tuple[str, str]]], Classified
]


def lexical(
    note: dict[str, Any], neighbours: Sequence[dict[str, Any]], _: Sequence[tuple[str, str]]
) -> Classified:
    """The default classifier: the neighbours' vote (``suggest``)."""
    return Classified(suggest(note, neighbours))


#: What grove-ask's ``Answer`` is asked when it classifies a note
#: (``GROVE_CLASSIFY_GENERATOR=answer``): the note is evidence 1, the notebooks numbered.
CLASSIFY_QUESTION = (
    "File this note: propose one edit of evidence 1 that moves it to the numbered notebook"
    " it belongs in and, if it is not already that kind, gives it its kind. Leave out the"
    " notebook or the kind you are unsure of; if no notebook fits, propose nothing."
)


class AnswerClassifier:
    """Suggestions chosen by grove-ask's ``Answer`` from the account's notebooks: the
    first edit it proposes of the note, its notebook (one of those offered) and kind.
    No notebooks to offer, ask failing, or no usable edit: the lexical vote instead
    (``fell_back``). The model's notebook carries the neighbours' share of the vote for
    it as its confidence (0 when none voted for it), and those neighbours as evidence."""

    def __init__(self, client: InferenceClient, timeout: float) -> None:
        self.client = client
        self.timeout = timeout

    def __call__(
        self,
        note: dict[str, Any],
        neighbours: Sequence[dict[str, Any]],
        notebooks: Sequence[tuple[str, str]],
    ) -> Classified:
        if not notebooks:
            return Classified(suggest(note, neighbours))
        evidence = [EvidenceText(str(note["id"]), note["version"], note["content"])]
        try:
            generated = self.client.answer(
                CLASSIFY_QUESTION,
                [],
                evidence,
                markdown=False,
                timeout=self.timeout,
                notebooks=notebooks,
            )
        except InferenceError:
            return Classified(suggest(note, neighbours), fell_back=True)
        offered = {notebook_id for notebook_id, _ in notebooks}
        for draft in generated.proposals:
            change = draft.change
            if not isinstance(change, EditChange) or change.noteId != note["id"]:
                continue
            moved = change.moveTo.projectId if change.moveTo else None
            notebook = moved if moved is not None and str(moved) in offered else None
            if notebook is not None or change.kind not in (None, note["kind"]):
                return Classified(self._backed(note, neighbours, notebook, change.kind))
        return Classified(suggest(note, neighbours), fell_back=True)

    def _backed(
        self,
        note: dict[str, Any],
        neighbours: Sequence[dict[str, Any]],
        notebook: UUID | None,
        kind: str | None,
    ) -> Proposed:
        """The model's choice, with the neighbours' share of the vote for it."""
        voters = _voters(note, neighbours)
        total = sum(similarity for similarity, _ in voters) or 1.0
        support = [
            (s, other) for s, other in voters if notebook and other["project_id"] == notebook
        ]
        kind_share = sum(s for s, other in voters if kind and other["kind"] == kind) / total
        notebook_share = sum(s for s, _ in support) / total
        return _proposed(note, notebook, notebook_share, support, kind, kind_share)


def _winner(
    voters: list[tuple[float, dict[str, Any]]], value_of: Any, total: float
) -> tuple[Any, float, list[tuple[float, dict[str, Any]]]]:
    """The value with the most weight among ``voters`` if it holds ``MIN_CONFIDENCE`` of
    it from ``MIN_VOTERS`` voters, its share and its voters; else (None, 0.0, [])."""
    weights: dict[Any, float] = defaultdict(float)
    backers: dict[Any, list[tuple[float, dict[str, Any]]]] = defaultdict(list)
    for similarity, other in voters:
        value = value_of(other)
        if value is not None:
            weights[value] += similarity
            backers[value].append((similarity, other))
    if not weights or total <= 0:
        return None, 0.0, []
    value = max(weights, key=lambda v: (weights[v], str(v)))
    share = weights[value] / total
    if share < MIN_CONFIDENCE or len(backers[value]) < MIN_VOTERS:
        return None, 0.0, []
    return value, share, backers[value]


@dataclass(frozen=True)
class Written:
    """A brief's text, its citations (verbatim quotes) and who wrote it; ``fell_back``
    when a model was asked but the extractive brief was used instead."""

    text: str
    citations: list[dict[str, Any]]
    generator: str
    fell_back: bool = False


#: How a brief is written from the notebook's notes (latest changed first).
Writer = Callable[[Sequence[dict[str, Any]]], Written]


def representative(notes: Sequence[dict[str, Any]]) -> list[int]:
    """Indexes of ``notes``, most representative first (highest summed similarity to the
    others; ties: the latest), near-repeats of one already taken left out."""
    words = [duplicates.words(note["content"]) for note in notes]
    centrality = [
        sum(duplicates.word_similarity(mine, other) for j, other in enumerate(words) if j != i)
        for i, mine in enumerate(words)
    ]
    chosen: list[int] = []
    for i in sorted(range(len(notes)), key=lambda i: (-centrality[i], i)):
        if all(duplicates.word_similarity(words[i], words[j]) < BRIEF_REPEAT for j in chosen):
            chosen.append(i)
    return chosen


def brief_of(notes: Sequence[dict[str, Any]]) -> Written:
    """The extractive brief of ``notes``: the opening sentence of the
    ``BRIEF_POINTS`` most representative, quoted."""
    citations = []
    for i in representative(notes)[:BRIEF_POINTS]:
        start, end = opening(notes[i]["content"])
        if end > start:
            citations.append(_quote(notes[i], start, end))
    return Written("\n".join(f"- {c['quote']}" for c in citations), citations, "extractive")


def _quote(note: dict[str, Any], start: int, end: int) -> dict[str, Any]:
    return {
        "id": str(note["id"]),
        "version": note["version"],
        "quote": note["content"][start:end],
        "start": start,
        "end": end,
    }


#: What grove-ask's ``Answer`` is asked when it writes a brief (``GROVE_BRIEF_GENERATOR=
#: answer``: the generator grove-ask is configured with, e.g. an OpenAI-compatible model).
BRIEF_QUESTION = (
    "Write a brief of these notes for their owner: what they are about and the key facts,"
    " in at most five short sentences, citing the notes each sentence comes from."
)
#: The notes given to the model: the most representative.
BRIEF_EVIDENCE = 12
MAX_BRIEF_CHARS = 4000


class AnswerWriter:
    """Briefs written by grove-ask's ``Answer`` from the notebook's most representative
    notes; the citations kept are exact quotes of them. No text, no valid citation, or
    ask failing: the extractive brief instead (``fell_back``)."""

    def __init__(self, client: InferenceClient, timeout: float) -> None:
        self.client = client
        self.timeout = timeout

    def __call__(self, notes: Sequence[dict[str, Any]]) -> Written:
        chosen = [notes[i] for i in representative(notes)[:BRIEF_EVIDENCE]]
        by_revision = {(str(n["id"]), n["version"]): n for n in chosen}
        evidence = [EvidenceText(str(n["id"]), n["version"], n["content"]) for n in chosen]
        try:
            generated = self.client.answer(
                BRIEF_QUESTION, [], evidence, markdown=False, timeout=self.timeout
            )
        except InferenceError:
            return replace(brief_of(notes), fell_back=True)
        citations = [
            _quote(note, c.start, c.end)
            for c in generated.citations
            if (note := by_revision.get((c.note_id, c.version))) is not None
            and 0 <= c.start < c.end <= len(note["content"])
            and note["content"][c.start : c.end] == c.quote
        ]
        text = generated.text.strip()
        if not text or not citations or len(text) > MAX_BRIEF_CHARS:
            return replace(brief_of(notes), fell_back=True)
        return Written(text, citations, generated.generator)


def opening(content: str) -> tuple[int, int]:
    """The span of ``content``'s first sentence, at most ``BRIEF_QUOTE_CHARS`` long
    (cut at a word), surrounding space left out."""
    start = len(content) - len(content.lstrip())
    found = _SENTENCE_END.search(content, start)
    end = found.start() if found else len(content.rstrip())
    if end - start > BRIEF_QUOTE_CHARS:
        cut = content.rfind(" ", start, start + BRIEF_QUOTE_CHARS)
        end = cut if cut > start else start + BRIEF_QUOTE_CHARS
    return start, len(content[:end].rstrip())


def _next_day(now: datetime) -> datetime:
    return datetime.combine(now.date() + timedelta(days=1), time(), tzinfo=UTC)


def _reserve(conn: Conn, want: int, quota: int, now: datetime) -> int:
    """Units of today's quota granted to this job (at most ``want``)."""
    row = conn.execute(USE_QUOTA, {"day": now.date(), "want": want, "quota": quota}).fetchone()
    return int(row["units"]) if row else 0


def classify(
    pool: ConnectionPool, owner: str, job: queue.Job, quota: int, classifier: Classifier = lexical
) -> Done:
    """Run one ``classify_notes`` job leased by ``owner``, within ``quota`` a day, each
    note classified by ``classifier`` (outside any transaction)."""
    now = datetime.now(UTC)
    with transaction(pool, job.account_id) as conn:
        account = {"account": job.account_id}
        batch = conn.execute(UNCLASSIFIED, {**account, "limit": CLASSIFY_BATCH + 1}).fetchall()
        more = len(batch) > CLASSIFY_BATCH
        wanted = len(batch[:CLASSIFY_BATCH])
        granted = _reserve(conn, wanted, quota, now) if wanted else 0
        batch = batch[:granted]
        rows = (
            conn.execute(
                NEIGHBOURS,
                {
                    **account,
                    "ids": [note["id"] for note in batch],
                    "words": CLASSIFY_WORDS,
                    "postings": CLASSIFY_POSTINGS,
                    "candidates": CLASSIFY_CANDIDATES,
                },
            ).fetchall()
            if batch
            else []
        )
        notebooks = [
            (str(row["id"]), row["name"])
            for row in conn.execute(FILING_NOTEBOOKS, {**account, "limit": MAX_PROPOSAL_NOTEBOOKS})
        ]
    neighbours: dict[UUID, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        neighbours[row["note"]].append(row)
    classified = [classifier(note, neighbours[note["id"]], notebooks) for note in batch]
    proposed = [c.proposed for c in classified]
    fallbacks = sum(c.fell_back for c in classified)
    with transaction(pool, job.account_id) as conn:
        if not queue.finish(conn, job, owner):
            return Done("lost")
        stored = _store_suggestions(conn, job.account_id, proposed)
        stale = len(proposed) - stored
        if granted < wanted:
            queue.enqueue_enrichment(conn, queue.CLASSIFY_NOTES, None, _next_day(now))
            return Done("over_quota", stored, stale, fallbacks=fallbacks)
        if more:
            queue.enqueue_enrichment(conn, queue.CLASSIFY_NOTES, None, now)
        return Done("stored" if proposed else "empty", stored, stale, fallbacks=fallbacks)


def _store_suggestions(conn: Conn, account_id: UUID, proposed: list[Proposed]) -> int:
    if not proposed:
        return 0
    return conn.execute(
        STORE_SUGGESTIONS,
        {
            "account": account_id,
            "ids": [p.id for p in proposed],
            "versions": [p.version for p in proposed],
            "kinds": [p.kind for p in proposed],
            "projects": [p.project_id for p in proposed],
            "confidences": [p.confidence for p in proposed],
            "evidence": [Jsonb(p.evidence) for p in proposed],
        },
    ).rowcount


def brief(
    pool: ConnectionPool, owner: str, job: queue.Job, quota: int, writer: Writer = brief_of
) -> Done:
    """Run one ``brief_notebook`` job leased by ``owner``, within ``quota`` a day, the
    brief written by ``writer`` (outside any transaction)."""
    now = datetime.now(UTC)
    notebook = UUID(str(job.payload["notebookId"]))
    keys = {"account": job.account_id, "notebook": notebook}
    with transaction(pool, job.account_id) as conn:
        held = conn.execute(FINGERPRINT, keys).fetchone()
        assert held is not None
        sources = conn.execute(BRIEF_SOURCES, {**keys, "limit": BRIEF_NOTES}).fetchall()
    written = writer(sources) if sources else Written("", [], "extractive")
    with transaction(pool, job.account_id) as conn:
        if not queue.finish(conn, job, owner):
            return Done("lost")
        live = conn.execute(
            "SELECT 1 FROM projects WHERE account_id = %(account)s AND id = %(notebook)s"
            " AND deleted_at IS NULL FOR UPDATE",
            keys,
        ).fetchone()
        if live is None or not sources:  # the notebook is gone, or holds no notes now
            conn.execute(
                "DELETE FROM notebook_briefs WHERE account_id = %(account)s"
                " AND project_id = %(notebook)s",
                keys,
            )
            return Done("empty")
        if conn.execute(FINGERPRINT, keys).fetchone() != held:
            return Done("stale", stale=1)
        if not _reserve(conn, 1, quota, now):
            queue.enqueue_enrichment(conn, queue.BRIEF_NOTEBOOK, notebook, _next_day(now))
            return Done("over_quota")
        conn.execute(
            STORE_BRIEF,
            {
                **keys,
                **held,
                "text": written.text,
                "citations": Jsonb(written.citations),
                "generator": written.generator,
            },
        )
        return Done("stored", 1, fell_back=written.fell_back)


#: The brief and whether each note it cites is still live in the notebook at that version.
READ_BRIEF = f"""
    SELECT b.fingerprint, b.notes, b.text, b.citations, b.generator, b.created_at,
           coalesce((SELECT bool_and(EXISTS (
                        SELECT 1 FROM memories m
                        WHERE {IN_NOTEBOOK} AND m.id = (c->>'id')::uuid
                          AND m.version = (c->>'version')::int))
                     FROM jsonb_array_elements(b.citations) AS c), true) AS quotes_current
    FROM notebook_briefs b WHERE b.account_id = %(account)s AND b.project_id = %(notebook)s
"""


def read_brief(store: Store, principal: Principal, notebook_id: UUID) -> NotebookBrief:
    """``GET /v1/notebooks/{id}/brief``: the notebook's brief, if the caller sees it.

    ``ready``: made from the notebook's current notes. ``stale``: notes changed since
    (a new brief is queued), but every note it quotes is still there as quoted.
    ``pending``: none yet, or a quoted note changed or left (its text is withheld).
    ``empty``: the notebook holds no notes.
    """
    require(principal, "read")
    keys = {"account": principal.account_id, "notebook": notebook_id}
    with transaction(store.pool, principal.account_id) as conn:
        check_notebook(conn, principal, notebook_id)
        current = conn.execute(FINGERPRINT, keys).fetchone()
        row = conn.execute(READ_BRIEF, keys).fetchone()
    assert current is not None
    if not current["notes"]:
        return NotebookBrief(notebookId=notebook_id, status="empty", notes=0)
    if row is None or not row["quotes_current"]:
        return NotebookBrief(notebookId=notebook_id, status="pending", notes=current["notes"])
    return NotebookBrief(
        notebookId=notebook_id,
        status="ready" if row["fingerprint"] == current["fingerprint"] else "stale",
        notes=current["notes"],
        text=row["text"],
        citations=[BriefCitation.model_validate(c) for c in row["citations"]],
        generator=row["generator"],
        generatedAt=row["created_at"],
        madeFrom=row["notes"],
    )


#: Suggestions the caller may see: for its live unfiled notes at their current version,
#: newest first; the notebook named only if live and granted to the caller.
LIST_SUGGESTIONS = f"""
    SELECT m.id, s.version, m.content, m.kind AS note_kind, s.kind, s.confidence, s.created_at,
           CASE WHEN p.id IS NOT NULL AND (%(all_notebooks)s
                     OR s.project_id = ANY(%(notebook_ids)s::uuid[]))
                THEN s.project_id END AS project_id,
           s.evidence
    FROM note_suggestions s
    JOIN memories m ON m.account_id = s.account_id AND m.id = s.memory_id
        AND m.version = s.version
    LEFT JOIN projects p ON p.account_id = s.account_id AND p.id = s.project_id
        AND p.deleted_at IS NULL AND p.archived_at IS NULL
    WHERE s.account_id = %(account_id)s AND %(personal)s AND m.project_id IS NULL AND {LIVE}
      AND m.archived_at IS NULL AND (s.kind IS NOT NULL OR s.project_id IS NOT NULL)
      AND (s.created_at, m.id) < (%(after_at)s, %(after_id)s)
    ORDER BY s.created_at DESC, m.id DESC LIMIT %(limit)s
"""


def list_suggestions(store: Store, principal: Principal, query: SuggestionQuery) -> SuggestionPage:
    """``GET /v1/suggestions``: suggestions for the caller's unfiled notes (cursor pages)."""
    require(principal, "read")
    binding = {"a": str(principal.account_id), "c": str(principal.connection_id), "f": "s"}
    after_at, after_id = (
        cursors.newest_after(store.cursor_secret, query.cursor, binding)
        if query.cursor
        else (datetime.max.replace(tzinfo=UTC), UUID(int=(1 << 128) - 1))
    )
    values = params(principal, after_at=after_at, after_id=after_id, limit=query.limit + 1)
    with transaction(store.pool, principal.account_id) as conn:
        rows = conn.execute(LIST_SUGGESTIONS, values).fetchall()
    page, cursor = cursors.newest_page(store.cursor_secret, binding, rows, query.limit)
    items = []
    for row in page:
        if row["kind"] is None and row["project_id"] is None:
            continue  # only a notebook the caller may not see was suggested
        items.append(
            Suggestion(
                memoryId=row["id"],
                version=row["version"],
                content=row["content"],
                noteKind=row["note_kind"],
                kind=row["kind"],
                projectId=row["project_id"],
                confidence=row["confidence"],
                evidence=row["evidence"] if row["project_id"] else [],
                createdAt=row["created_at"],
            )
        )
    return SuggestionPage(items=items, nextCursor=cursor)


#: The account's live notebooks holding notes, each to be briefed again.
BRIEFED = """
    SELECT p.id FROM projects p
    WHERE p.account_id = %(account)s AND p.deleted_at IS NULL AND EXISTS (
        SELECT 1 FROM memories m
        WHERE m.account_id = %(account)s AND m.project_id = p.id AND m.kind <> 'passage'
          AND m.deleted_at IS NULL)
"""


def redo(conn: Conn, account_id: UUID, *, reset: bool, files: bool) -> dict[str, int]:
    """``grove enrich reindex`` (``reset`` False) or ``reset`` for ``account_id``, the
    account of ``conn``'s transaction: suggestions are dropped to be made again (with
    ``reset`` briefs too, and today's quota use), a classification and a brief of every
    notebook holding notes queued (one queued job each at most, as the triggers do), and
    with ``files`` every live file re-extracted. What was done, counted.

    Every statement names the account as a value, so that on a Citus cluster each runs
    on the account's shard; the jobs are inserted from values (an ``INSERT … SELECT``
    into ``jobs`` is refused there under row-level security, docs/scaling.md).
    """
    account = {"account": account_id}
    done = {
        "suggestions dropped": conn.execute(
            "DELETE FROM note_suggestions WHERE account_id = %(account)s", account
        ).rowcount
    }
    if reset:
        done["briefs dropped"] = conn.execute(
            "DELETE FROM notebook_briefs WHERE account_id = %(account)s", account
        ).rowcount
        conn.execute(
            "DELETE FROM account_enrichment WHERE account_id = %(account)s"
            " AND day = (now() AT TIME ZONE 'UTC')::date",
            account,
        )
    notebooks = [row["id"] for row in conn.execute(BRIEFED, account)]
    queued = [queue.enqueue_enrichment(conn, queue.BRIEF_NOTEBOOK, n) for n in notebooks]
    queued.append(queue.enqueue_enrichment(conn, queue.CLASSIFY_NOTES, None))
    done["jobs queued"] = sum(queued)
    if files:
        done["files queued"] = queue.enqueue_reextraction(conn, account_id)
    conn.execute("SELECT pg_notify(%s, '')", (queue.CHANNEL,))
    return done
