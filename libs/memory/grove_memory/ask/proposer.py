"""The deterministic proposer: changes a turn offers without a model.

Over the notes a turn was given (its sources), ``suggest`` offers to merge
near-duplicates in the same scope (``grove_memory.notes.duplicates``: cosine similarity of the
indexed vectors and lexical overlap, or lexical overlap alone for a note not embedded
yet; thresholds measured by ``python -m bench.duplicates``) into the most recently
updated one, and to archive handoffs that expire within ``HANDOFF_NOTICE``. Its drafts
go through ``grove_memory.ask.proposals.prepare`` like a model's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any
from uuid import UUID

from grove_auth.principal import Principal
from grove_contracts.notes import MAX_CONTENT_CHARS
from grove_contracts.proposals import (
    MAX_MERGE_NOTES,
    MAX_PROPOSAL_TARGETS,
    LifecycleChange,
    MergeChange,
    ProposalDraft,
)
from grove_db.pool import Conn
from grove_memory.ask.conversations import preview as first_line
from grove_memory.notes import duplicates
from grove_memory.rows import MEMORY_COLUMNS
from grove_memory.scope import SAVED, VISIBLE, params
from grove_memory.store import Store

#: A handoff this close to expiring is offered for archiving.
HANDOFF_NOTICE = timedelta(days=3)
#: A sentence of a merged note whose words the kept text already holds this much of
#: adds nothing to the merge and is left out.
COVERED = 0.8


#: The current vectors of two notes in the same scope, compared (cosine similarity). The
#: account is a value on each table, so that on a Citus cluster it runs on its node.
PAIR_COSINES = """
    SELECT ma.id AS a, mb.id AS b, 1 - (ea.embedding <=> eb.embedding) AS cosine
    FROM memories ma
    JOIN embeddings ea ON ea.account_id = %(account_id)s AND ea.memory_id = ma.id
         AND ea.version = ma.version AND ea.profile = %(profile)s
    JOIN memories mb ON mb.account_id = %(account_id)s AND mb.id > ma.id
         AND mb.project_id IS NOT DISTINCT FROM ma.project_id
    JOIN embeddings eb ON eb.account_id = %(account_id)s AND eb.memory_id = mb.id
         AND eb.version = mb.version AND eb.profile = %(profile)s
    WHERE ma.account_id = %(account_id)s
      AND ma.id = ANY(%(ids)s::uuid[]) AND mb.id = ANY(%(ids)s::uuid[])
"""
LIVE_CANDIDATES = f"""
    SELECT {MEMORY_COLUMNS}, m.expires_at <= statement_timestamp() + %(notice)s AS expiring
    FROM memories m
    WHERE m.id = ANY(%(ids)s::uuid[]) AND m.archived_at IS NULL AND {VISIBLE} AND {SAVED}
    ORDER BY m.updated_at DESC, m.id
"""


def suggest(
    conn: Conn, store: Store, principal: Principal, note_ids: Sequence[UUID]
) -> list[ProposalDraft]:
    """The deterministic proposer over the notes a turn was given: near-duplicates in
    the same scope (``grove_memory.notes.duplicates``: cosine and lexical overlap; lexical
    alone for notes not embedded yet) merged into the most recently updated one, and
    handoffs that expire within ``HANDOFF_NOTICE`` archived."""
    rows = live_candidates(conn, principal, note_ids)
    cosines: dict[frozenset[UUID], float] = {}
    if store.profile is not None and len(rows) > 1:
        pairs = conn.execute(
            PAIR_COSINES,
            {
                "account_id": principal.account_id,
                "profile": store.profile,
                "ids": [r["id"] for r in rows],
            },
        )
        cosines = {frozenset((p["a"], p["b"])): float(p["cosine"]) for p in pairs.fetchall()}
    drafts = [merge_draft(group) for group in duplicate_groups(rows, cosines)]
    expiring = [r["id"] for r in rows if r["kind"] == "handoff" and r["expiring"]]
    if expiring:
        drafts.append(expiring_draft(expiring))
    return drafts


def live_candidates(
    conn: Conn, principal: Principal, note_ids: Sequence[UUID]
) -> list[dict[str, Any]]:
    """The live, unarchived notes of ``note_ids`` the caller may see (with their savers
    and whether each expires within ``HANDOFF_NOTICE``), most recently updated first."""
    values = params(principal, ids=list(note_ids), notice=HANDOFF_NOTICE)
    return conn.execute(LIVE_CANDIDATES, values).fetchall()


def expiring_draft(note_ids: Sequence[UUID]) -> ProposalDraft:
    """Archive handoffs about to expire (at most ``MAX_PROPOSAL_TARGETS`` of them)."""
    expiring = list(note_ids[:MAX_PROPOSAL_TARGETS])
    return ProposalDraft(
        summary=f"Archive {_count(len(expiring), 'handoff')} that expire within"
        f" {HANDOFF_NOTICE.days} days",
        change=LifecycleChange(action="archive", noteIds=expiring, notebookIds=[]),
    )


def duplicate_groups(
    rows: list[dict[str, Any]],
    cosines: dict[frozenset[UUID], float],
    pairs: Iterable[tuple[UUID, UUID]] | None = None,
) -> list[list[dict[str, Any]]]:
    """Rows joined into groups of near-duplicates (same scope), each freshest first as
    ``rows`` are, at most ``MAX_MERGE_NOTES`` each; only ``pairs`` are compared (every
    pair of rows when None)."""
    by_id = {r["id"]: r for r in rows}
    said = {r["id"]: duplicates.words(r["content"]) for r in rows}
    group = {r["id"]: r["id"] for r in rows}

    def root(note_id: UUID) -> UUID:
        while group[note_id] != note_id:
            note_id = group[note_id]
        return note_id

    if pairs is None:
        pairs = ((a["id"], b["id"]) for i, a in enumerate(rows) for b in rows[i + 1 :])
    for first, second in pairs:
        a, b = by_id.get(first), by_id.get(second)
        if a is None or b is None or a["project_id"] != b["project_id"]:
            continue
        if "handoff" in (a["kind"], b["kind"]):
            continue
        lexical = duplicates.word_similarity(said[first], said[second])
        cosine = cosines.get(frozenset((first, second)))
        if cosine is None:
            same = lexical >= duplicates.SAVE_LEXICAL_THRESHOLD
        else:
            same = duplicates.is_near_duplicate(cosine, lexical)
        if same:
            group[root(second)] = root(first)
    members: dict[UUID, list[dict[str, Any]]] = {}
    for row in rows:  # freshest first, as selected
        members.setdefault(root(row["id"]), []).append(row)
    return [m[:MAX_MERGE_NOTES] for m in members.values() if len(m) > 1]


SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def merge_draft(group: list[dict[str, Any]]) -> ProposalDraft:
    """Merge a group into its freshest note, adding the sentences only the others have
    (unless that would make it too long: then the freshest note's text stands)."""
    kept, others = group[0], group[1:]
    text = kept["content"]
    known = duplicates.words(text)
    for other in others:
        for sentence in SENTENCE.split(other["content"]):
            said = duplicates.words(sentence)
            if sentence.strip() and said and len(said & known) / len(said) < COVERED:
                text = f"{text}\n{sentence.strip()}"
                known |= said
    if len(text) > MAX_CONTENT_CHARS:
        text = kept["content"]
    topic = first_line(kept["content"], 60)
    return ProposalDraft(
        summary=f"Merge {len(group)} near-duplicate notes into one: “{topic}”",
        change=MergeChange(
            action="merge", noteIds=[r["id"] for r in group], into=kept["id"], content=text
        ),
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
