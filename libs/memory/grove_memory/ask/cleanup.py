"""Clean-up over a whole scope: near-duplicate groups and handoffs about to expire.

The proposer (``grove_memory.ask.proposer``) compares the few notes a turn was given. An
owner asking Ask "find duplicates" or "what's stale", or opening the website's
duplicates page (``GET /v1/duplicates``), names no topic: the notes to compare are every
note in scope. Comparing every pair is quadratic, so candidates come from the save
warning's MinHash bands (``note_bands``, migration 0037: two notes of one scope sharing
a band share a pair of their words): the pairs among the ``SCAN_NOTES`` most recently
updated live notes that share a band (of a band held by more than ``COMMON_BAND`` of
them, only neighbours), those sharing the most bands first, at most
``CANDIDATE_PAIRS``; then the proposer's own rules decide (cosine and lexical overlap,
lexical alone for a note not embedded yet), so a group found here is the group a turn
about its notes offers to merge. On a busy two-core machine a scan of an account of
20,000 varied notes (``bench.bulk``) took about 0.6 s.
"""

from __future__ import annotations

import re
from typing import Any
from uuid import UUID

from grove_auth.principal import Principal
from grove_contracts.proposals import (
    MAX_DUPLICATE_GROUPS,
    MAX_PROPOSAL_TARGETS,
    DuplicateGroup,
    DuplicateList,
    ProposalDraft,
)
from grove_db.pool import Conn, transaction
from grove_memory.ask import proposer
from grove_memory.notes.notes import SIMILAR_POSTINGS
from grove_memory.rows import memory_of
from grove_memory.scope import SAVED, VISIBLE, params
from grove_memory.store import Store, require

#: The most recently updated live notes a scan compares (its work is bounded by them).
SCAN_NOTES = 2000
#: Pairs sharing a band that a scan scores at most, those sharing the most bands first.
CANDIDATE_PAIRS = 2000
#: A band more of the scanned notes hold pairs each with the next only (``PAIRS``): as
#: many as the save warning reads of one band (``notes.SIMILAR_POSTINGS``).
COMMON_BAND = SIMILAR_POSTINGS

#: The scan's notes: live, not archived, saved by callers (not file passages), in
#: ``{scope}``, most recently updated first.
RECENT = f"""
    SELECT m.id FROM memories m
    WHERE m.archived_at IS NULL AND {VISIBLE} AND {SAVED} AND {{scope}}
    ORDER BY m.updated_at DESC, m.id LIMIT %(scan)s
"""
#: Pairs of those notes sharing a band (a band is hashed with its scope, so both are in
#: one scope), by bands shared. Only the scanned notes' own bands are read (21 each, by
#: the index on the note). A band more than ``COMMON_BAND`` of them hold (a common pair
#: of words, or a note saved many times over) pairs each holder with the next only, so
#: its pairs grow with its holders, not their square, and copies still join one group.
PAIRS = f"""
    WITH recent AS MATERIALIZED ({{recent}}),
    bands AS MATERIALIZED (
        SELECT v.band, v.memory_id, count(*) OVER (PARTITION BY v.band) AS holders,
               row_number() OVER (PARTITION BY v.band ORDER BY v.memory_id) AS n
        FROM note_bands v
        WHERE v.account_id = %(account_id)s AND v.memory_id IN (SELECT id FROM recent)
    ), shared AS (
        SELECT a.memory_id AS a, b.memory_id AS b
        FROM bands a JOIN bands b ON b.band = a.band AND b.memory_id > a.memory_id
        WHERE a.holders BETWEEN 2 AND {COMMON_BAND}
        UNION ALL
        SELECT a.memory_id, b.memory_id
        FROM bands a JOIN bands b ON b.band = a.band AND b.n = a.n + 1
        WHERE a.holders > {COMMON_BAND}
    )
    SELECT a, b FROM shared GROUP BY a, b
    ORDER BY count(*) DESC, a, b
    LIMIT %(pairs)s
"""
#: The current vectors of each candidate pair, compared (cosine similarity).
PAIR_COSINES = """
    SELECT p.a, p.b, 1 - (ea.embedding <=> eb.embedding) AS cosine
    FROM unnest(%(a)s::uuid[], %(b)s::uuid[]) AS p (a, b)
    JOIN memories ma ON ma.id = p.a
    JOIN embeddings ea ON ea.account_id = ma.account_id AND ea.memory_id = ma.id
         AND ea.version = ma.version AND ea.profile = %(profile)s
    JOIN memories mb ON mb.id = p.b
    JOIN embeddings eb ON eb.account_id = mb.account_id AND eb.memory_id = mb.id
         AND eb.version = mb.version AND eb.profile = %(profile)s
"""
#: Live handoffs in ``{scope}`` expiring within the notice, soonest first.
EXPIRING = f"""
    SELECT m.id FROM memories m
    WHERE m.kind = 'handoff' AND m.archived_at IS NULL AND {VISIBLE} AND {SAVED} AND {{scope}}
      AND m.expires_at <= statement_timestamp() + %(notice)s
    ORDER BY m.expires_at, m.id LIMIT %(targets)s
"""


def list_duplicates(store: Store, principal: Principal) -> DuplicateList:
    """The near-duplicate groups among the notes the caller may read, each with the
    merge the proposer offers for it (``GET /v1/duplicates``)."""
    require(principal, "read")
    with transaction(store.pool, principal.account_id) as conn:
        scanned, groups = _groups(conn, store, principal, "true", {})
    return DuplicateList(
        groups=[
            DuplicateGroup(notes=[memory_of(r) for r in group], merge=proposer.merge_draft(group))
            for group in groups[:MAX_DUPLICATE_GROUPS]
        ],
        scanned=scanned,
    )


def suggest(
    conn: Conn, store: Store, principal: Principal, scope: str, values: dict[str, Any]
) -> list[ProposalDraft]:
    """The proposer's drafts for every note in ``scope`` (a predicate on notes ``m``
    with its ``values``): archiving the handoffs that expire within
    ``proposer.HANDOFF_NOTICE`` first (a turn keeps ``MAX_PROPOSALS``), then merges of
    the near-duplicate groups, freshest first."""
    drafts: list[ProposalDraft] = []
    expiring = conn.execute(
        EXPIRING.format(scope=scope),
        params(principal, **values, notice=proposer.HANDOFF_NOTICE, targets=MAX_PROPOSAL_TARGETS),
    ).fetchall()
    if expiring:
        drafts.append(proposer.expiring_draft([r["id"] for r in expiring]))
    _, groups = _groups(conn, store, principal, scope, values)
    return drafts + [proposer.merge_draft(group) for group in groups]


def _groups(
    conn: Conn, store: Store, principal: Principal, scope: str, values: dict[str, Any]
) -> tuple[int, list[list[dict[str, Any]]]]:
    """How many notes were scanned, and their near-duplicate groups (rows with their
    savers), the group holding the most recently updated note first."""
    recent = RECENT.format(scope=scope)
    values = params(principal, **values, scan=SCAN_NOTES, pairs=CANDIDATE_PAIRS)
    scanned = conn.execute(f"SELECT count(*) AS n FROM ({recent}) AS s", values).fetchone()
    pairs = [(p["a"], p["b"]) for p in conn.execute(PAIRS.format(recent=recent), values)]
    if not pairs:
        return (scanned["n"] if scanned else 0), []
    ids = list({note_id for pair in pairs for note_id in pair})
    rows = proposer.live_candidates(conn, principal, ids)
    cosines: dict[frozenset[UUID], float] = {}
    if store.profile is not None:
        found = conn.execute(
            PAIR_COSINES,
            {"a": [a for a, _ in pairs], "b": [b for _, b in pairs], "profile": store.profile},
        )
        cosines = {frozenset((p["a"], p["b"])): float(p["cosine"]) for p in found.fetchall()}
    return (scanned["n"] if scanned else 0), proposer.duplicate_groups(rows, cosines, pairs)


#: Words that ask for a clean-up: at least one must be in the question.
CLEANUP_WORDS = frozenset(
    "duplicate duplicates duplicated dupes dupe stale outdated clean cleanup tidy declutter"
    " redundant".split()
)
#: Words a clean-up question may hold besides: a question with any other word names a
#: topic, and its proposals stay with the notes the search found.
CLEANUP_FILLER = frozenset(
    "a all am an any anything are around can could do does find for have here i in is it"
    " let list look me memories memory merge my near notes note of old on or out please"
    " s show some stuff that the there these things this to up what whats which you your"
    " archive expire expiring expired".split()
)
_QUESTION_WORDS = re.compile(r"[a-z]+")


def is_cleanup(question: str) -> bool:
    """Whether ``question`` asks to clean up the notes without naming a topic ("find
    duplicates", "what's stale?", "clean up my notes"): then Ask proposes for its whole
    scope rather than for the notes its search found."""
    said = set(_QUESTION_WORDS.findall(question.lower().replace("'", "")))
    return bool(said & CLEANUP_WORDS) and said <= CLEANUP_WORDS | CLEANUP_FILLER
