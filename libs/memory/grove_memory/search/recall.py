"""Finding notes: hybrid search, and recall (bounded context for an agent).

Two signals, both restricted to the caller's grants, each read in a tenant transaction
(the lexical one while the query is embedded, the semantic one once its vector is there):
Okapi BM25 over the query's words (document frequencies counted over the notes the
caller may see, so no other tenant weighs in), and cosine distances from pgvector for
the query's vector (the ask service's ``Embed``). Semantic candidates beyond the
distance threshold are dropped, so nothing unrelated fills the answer. The fusion adds
the two normalized scores: BM25 divided by the best BM25, similarity scaled between
the worst and best candidate, weighted ``lexical_weight`` to ``1 - lexical_weight``
(tuned on LoCoMo: bench/README.md). When the query vector cannot be had (embeddings
disabled, or the ask service failed or missed its budget), the answer is lexical only
and says why in ``retrieval``; it never fails for that reason.

A note matches lexically when it has any of the query's words (stemmed, stop words
dropped); notes with more of the rarer words rank higher. For a caller who may see the
whole account, a word in more than ``CANDIDATE_BUDGET`` notes is common: only notes that
the rarer words find can match, and it ranks them; when every word is common, only notes
with both of the two rarest (at most ``CANDIDATE_BUDGET`` of them) can. In search, ``-word`` and
``-"a phrase"`` exclude notes from both signals; other quotes only group words. Recall drops
lexical matches under a relevance floor. A query with no searchable words (only stop
words or punctuation) falls back to a case-insensitive substring match. Archived and
expired notes never appear; recall never searches a notebook the caller did not name.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import re
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from grove_auth.principal import Principal
from grove_contracts.notes import (
    MatchEvidence,
    Memory,
    RecallItem,
    RecallRequest,
    RecallResult,
    Retrieval,
    SearchItem,
    SearchPage,
    SearchRequest,
)
from grove_db.pool import Conn, set_locally, transaction
from grove_memory import cursors
from grove_memory.inference import InferenceError, vector_literal
from grove_memory.rows import MEMORY_COLUMNS, ROW_COLUMNS, memory_of, with_savers
from grove_memory.scope import VISIBLE, check_notebook, in_notebook, params
from grove_memory.store import Store, require

#: Recall drops lexical matches scoring under this share of the best one's score.
RELATIVE_FLOOR = 0.2
#: Score given to substring matches when the query has no searchable words.
SUBSTRING_SCORE = 0.05
#: Candidates taken from each signal before fusion, for search pages.
SEARCH_CANDIDATES = 200
#: HNSW's candidate list (pgvector's default is 40). Recall's 40 semantic candidates held
#: 0.868 of the exact 10 nearest at 40, 0.947 at 80, 0.966 at 100 and 0.988 at 150 on a
#: 100,000-note account's own graph, for ~0.5 ms more per 20 (bench.scale_tenants); search's
#: 200 continue the walk (iterative scan) and found 0.992 at 40.
HNSW_EF_SEARCH = 100
#: How much of its more similar neighbour's similarity a semantic candidate gets (its
#: neighbours: the notes saved just before and after it in its scope by the same named
#: source; 0 turns them off). bench.crossval's leave-one-conversation-out choices were
#: 0.6-0.8 (from 0, 0.1, ... 0.8, 1.0); 0.7 is their median and the all-five choice.
CONTEXT_WEIGHT = 0.7
PROFILE_KINDS = ("preference", "fact", "decision")
#: BM25's term-frequency saturation. There is no length normalization (BM25's b): notes
#: are short and of similar length, and bench.crossval's leave-one-conversation-out choice
#: took b = 0 (from 0, 0.1, 0.25, 0.4, 0.6 and Robertson's default 0.75) in every fold.
BM25_K1 = 1.2

#: Candidates are found through the query's rarest words while their notes add up to at
#: most this many; the commoner words only rank what those found (a common-terms query).
CANDIDATE_BUDGET = 2000

# The query's distinct stemmed words; per word, how many notes of the account have it, up
# to CANDIDATE_BUDGET, and the last of those notes' ids in id order; the account's notes
# (with the passages of its files, which have postings too).
WORD_COUNTS = """
    SELECT l.word, c.notes, c.last,
           (SELECT sum(u.items)::bigint FROM account_usage u
            WHERE u.account_id = %(account_id)s
              AND u.kind IN ('notes', 'passages')) AS corpus
    FROM unnest(tsvector_to_array(to_tsvector('english', %(query)s))) AS l (word)
    CROSS JOIN LATERAL (
        SELECT count(*) AS notes, (array_agg(f.memory_id ORDER BY f.memory_id DESC))[1] AS last
        FROM (SELECT w.memory_id FROM note_words w
              WHERE w.account_id = %(account_id)s AND w.word = l.word
              ORDER BY w.memory_id LIMIT %(budget)s) AS f
    ) AS c
"""

# Candidates: the notes with any of the words that find them (see ``bm25``), found through
# the account's postings (note_words, migration 0023: under row-level security a GIN index
# is never used for `@@`).
FOUND_ANY = """
    found AS (
        SELECT DISTINCT w.memory_id FROM note_words w
        WHERE w.account_id = %(account_id)s AND w.word = ANY(%(finding)s::text[])
    )"""

# Candidates when even the rarest word is common: the notes with both of the two rarest
# (a merge of their postings, in id order), at most CANDIDATE_BUDGET of them; if none
# has both, or the query has one word, the first CANDIDATE_BUDGET with the rarest. Ids
# are random, so a capped list is a uniform sample.
FOUND_COMMON = """
    pairs AS MATERIALIZED (
        SELECT w.memory_id FROM note_words w
        JOIN note_words v ON v.account_id = w.account_id AND v.memory_id = w.memory_id
        WHERE w.account_id = %(account_id)s AND w.word = %(rarest)s
          AND v.word = %(next)s
        ORDER BY w.memory_id LIMIT %(budget)s
    ), found AS (
        SELECT memory_id FROM pairs
        UNION ALL
        (SELECT w.memory_id FROM note_words w
         WHERE w.account_id = %(account_id)s AND w.word = %(rarest)s
           AND NOT EXISTS (SELECT 1 FROM pairs)
         ORDER BY w.memory_id LIMIT %(budget)s)
    )"""

# Okapi BM25 over the query's distinct stemmed words, for the visible notes in scope
# that ``found`` names, without length normalization (b = 0: notes are short and of
# similar length, and bench.crossval chose b = 0 in every fold). Term frequencies are the
# found notes' postings of the query's words (``tf`` in the postings' index, migration
# 0026), so every candidate is scored from the index and only the best are read, in
# score order. Document frequencies: for a caller who sees the whole account, given
# (``%(counted)s``, ``%(df)s``: a finding word's postings, a common word's share of the
# ``corpus``, the account's count of notes kept by the usage triggers); for anyone else,
# each word's count among the candidates they may see, over a corpus of every visible
# note in scope, so no other tenant's notes, and no note the caller may not see, ever
# weigh in. The plan must not depend on row estimates (before a table's first ANALYZE,
# e.g. a new deployment's first import, every relation looks a row long): the candidates'
# postings are one index scan (``memory_id = ANY``), not a probe per candidate that the
# planner may turn into a scan of the word's postings per candidate, and a candidate's
# row is looked up by its key alone, the filters applied to it after (with them inside,
# the account's index of live notes could be chosen and scanned once per candidate:
# 1,400 long notes took 0.4 s a search, 7 ms since; test_query_plans), in the final
# read as in a word's count among a caller's visible candidates. That count is its own
# subquery (``OFFSET 0``): pulled up into the idf expression, which names ``df`` twice,
# it ran twice (a personal-only key at 100,000 notes: 110-139 ms a search, 77-97 since).
BM25 = """
    WITH {found}, terms AS MATERIALIZED (
        SELECT w.memory_id AS id, w.word, w.tf
        FROM note_words w
        WHERE w.account_id = %(account_id)s AND w.word = ANY(%(words)s::text[])
          AND w.memory_id = ANY(ARRAY(SELECT f.memory_id FROM found f))
    ), corpus AS MATERIALIZED (
        SELECT coalesce(%(corpus)s::bigint, (
            SELECT count(*) FROM memories m
            WHERE m.archived_at IS NULL AND {visible} AND {scope}
        )) AS n
    ), weights AS MATERIALIZED (
        SELECT t.word, ln(1 + greatest(c.n - f.df + 0.5, 0) / (f.df + 0.5)) AS idf
        FROM (SELECT DISTINCT word FROM terms) AS t CROSS JOIN corpus c
        CROSS JOIN LATERAL (SELECT coalesce(
            (SELECT k.df FROM unnest(%(counted)s::text[], %(df)s::float8[]) AS k (word, df)
             WHERE k.word = t.word),
            (SELECT count(*) FROM terms u
             CROSS JOIN LATERAL (SELECT * FROM memories m
                                WHERE m.account_id = %(account_id)s AND m.id = u.id OFFSET 0) AS m
             WHERE u.word = t.word AND m.archived_at IS NULL AND {visible} AND {scope})
        ) AS df OFFSET 0) AS f
    ), scored AS MATERIALIZED (
        SELECT t.id, sum(w.idf * (t.tf * (%(k1)s + 1)) / (t.tf + %(k1)s)) AS score,
               array_agg(t.word ORDER BY t.word) AS terms
        FROM terms t JOIN weights w ON w.word = t.word
        GROUP BY t.id
        ORDER BY score DESC
    )
    SELECT {columns}, s.score, s.terms FROM scored s
    CROSS JOIN LATERAL (SELECT * FROM memories m
                        WHERE m.account_id = %(account_id)s AND m.id = s.id OFFSET 0) AS m
    WHERE m.archived_at IS NULL AND {visible} AND {scope}
    ORDER BY s.score DESC, m.updated_at DESC, m.id
    LIMIT %(limit)s
"""

SUBSTRING = """
    SELECT {columns}, %(substring_score)s::float8 AS score
    FROM memories m
    WHERE m.content ILIKE %(pattern)s ESCAPE '\\'
      AND m.archived_at IS NULL AND {visible} AND {scope}
    ORDER BY m.updated_at DESC, m.id
    LIMIT %(limit)s
"""

# Nearest current-revision vectors of the profile; the cast matches the HNSW indexes. The
# account is named as a value (row-level security restricts to it anyway) so that, planned
# for this tenant, a large account's own index (``grove indexes``) matches its predicate.
SEMANTIC = """
    SELECT {columns}, (e.embedding::vector({dims})) <=> %(vector)s::vector({dims}) AS distance
    FROM embeddings e
    JOIN memories m ON m.account_id = e.account_id AND m.id = e.memory_id
                   AND m.version = e.version
    WHERE e.account_id = %(account)s AND e.profile = %(profile)s
      AND m.archived_at IS NULL AND {visible} AND {scope}
    ORDER BY distance, m.id
    LIMIT %(limit)s
"""


# The notes saved just before and after each candidate (``%(ids)s``) in its scope by the
# same named source (``provenance.sourceAgent``; memories_sequence, migration 0025),
# visible and in scope like the candidates, with their current vectors' distances to the
# query. A note that names no source has none.
NEIGHBOURS = """
    SELECT o.id AS neighbour_of, {columns},
           (e.embedding::vector({dims})) <=> %(vector)s::vector({dims}) AS distance
    FROM memories o
    CROSS JOIN LATERAL (
        (SELECT m.* FROM memories m
         WHERE m.account_id = o.account_id AND {same_sequence}
           AND (m.created_at, m.id) < (o.created_at, o.id)
           AND m.archived_at IS NULL AND {visible} AND {scope}
         ORDER BY m.created_at DESC, m.id DESC LIMIT 1)
        UNION ALL
        (SELECT m.* FROM memories m
         WHERE m.account_id = o.account_id AND {same_sequence}
           AND (m.created_at, m.id) > (o.created_at, o.id)
           AND m.archived_at IS NULL AND {visible} AND {scope}
         ORDER BY m.created_at, m.id LIMIT 1)
    ) AS m
    JOIN embeddings e ON e.account_id = m.account_id AND e.memory_id = m.id
                     AND e.version = m.version AND e.profile = %(profile)s
    WHERE o.account_id = %(account)s AND o.id = ANY(%(ids)s::uuid[])
"""
SAME_SEQUENCE = (
    "coalesce(m.project_id, '00000000-0000-0000-0000-000000000000'::uuid)"
    " = coalesce(o.project_id, '00000000-0000-0000-0000-000000000000'::uuid)"
    " AND m.source_agent IS NOT NULL AND m.source_agent = o.source_agent"
)


@dataclass
class Candidate:
    """One note found by one or both signals, with its fused score."""

    row: dict[str, Any]
    score: float = 0.0
    lexical_rank: int | None = None
    semantic_rank: int | None = None
    distance: float | None = None
    #: The query's words the note has (stemmed), for a lexical match.
    terms: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class QueryVector:
    """The query's vector, or why there is none."""

    vector: list[float] | None
    reason: str | None

    def retrieval(self, lexical: bool = True) -> Retrieval:
        """The ``retrieval`` member of a response: which signals were applied."""
        return Retrieval(
            lexical=lexical, semantic=self.vector is not None, reason=self.reason or None
        )


def query_vector(store: Store, query: str) -> QueryVector:
    """Embed the query within the store's budget; never raises."""
    if store.profile is None or store.embedder is None:
        return QueryVector(None, "disabled")
    try:
        return QueryVector(store.embedder.embed_query(query, store.query_embed_seconds), None)
    except InferenceError:
        return QueryVector(None, "inference_unavailable")


#: Query embeddings (and the semantic reads that follow them) in flight while the lexical
#: candidates are read (one per request).
_EMBEDDING = ThreadPoolExecutor(max_workers=16, thread_name_prefix="query-embed")


def semantic_started(
    store: Store,
    principal: Principal,
    query: str | None,
    scope: str,
    values: dict[str, Any],
    checked: Future[dict[str, Any]],
) -> Future[tuple[QueryVector, list[dict[str, Any]]]]:
    """The query's vector and its semantic candidates, on another thread in this request's
    context (its trace, and whether its client has gone), while the lexical ones are read:
    the query is embedded at once, and its candidates read in a tenant transaction of
    their own as soon as both the vector and ``checked`` are there (the lexical
    transaction's checks passed; its result adds to ``values``, say the search's ceiling).
    With no ``query`` (lexical mode) or embeddings disabled, nothing is embedded or read.
    """
    values = dict(values)

    def run() -> tuple[QueryVector, list[dict[str, Any]]]:
        vector = query_vector(store, query) if query else QueryVector(None, None)
        if vector.vector is None:
            return vector, []
        found = {**values, **checked.result()}
        return vector, semantic_read(store, principal, vector, scope, found)

    if not query or store.profile is None or store.embedder is None:
        done: Future[tuple[QueryVector, list[dict[str, Any]]]] = Future()
        done.set_result(run())
        return done
    return _EMBEDDING.submit(contextvars.copy_context().run, run)


EXCLUSION = re.compile(r'(?:^|\s)-("[^"]*"|[^\s"]+)')


def split_exclusions(query: str) -> tuple[str, str]:
    """Split a search query into what is wanted and its ``-word``/``-"phrase"`` exclusions.

    The exclusions come back joined with OR, ready for ``websearch_to_tsquery``.
    """
    excluded = [match.group(1) for match in EXCLUSION.finditer(query)]
    wanted = " ".join(EXCLUSION.sub(" ", query).split())
    return wanted, " OR ".join(excluded)


def search_words(query: str) -> tuple[str, str]:
    """What a search query searches for (quotes dropped) and its exclusions."""
    wanted, excluded = split_exclusions(query)
    return wanted.replace('"', " ").strip(), excluded


def search(store: Store, principal: Principal, req: SearchRequest) -> SearchPage:
    """One page of hybrid search over every granted scope (or ``projectId`` if given)."""
    require(principal, "read")
    scope, values = _search_scope(req)
    binding = {
        "a": str(principal.account_id),
        "c": str(principal.connection_id),
        "q": hashlib.sha256(
            json.dumps(
                {
                    **req.model_dump(mode="json", exclude={"cursor", "limit"}),
                    # projectId omitted (every scope) differs from null (personal only).
                    "allScopes": "projectId" not in req.model_fields_set,
                },
                sort_keys=True,
            ).encode()
        ).hexdigest(),
    }
    offset, ceiling = 0, None
    if req.cursor:
        payload = cursors.decode(store.cursor_secret, req.cursor, binding)
        offset, ceiling = int(payload["offset"]), datetime.fromisoformat(payload["ceiling"])
    words, excluded = search_words(req.query)
    scope += " AND m.created_at <= %(ceiling)s"
    values["limit"] = SEARCH_CANDIDATES
    # -words (and -"phrases") are excluded from both signals alike.
    if excluded:
        scope += " AND NOT m.content_tsv @@ websearch_to_tsquery('english', %(excluded)s)"
        values["excluded"] = excluded
    # The semantic candidates are read as soon as the query's vector is there, alongside
    # the lexical ones (no connection waits on inference), once the lexical transaction
    # has checked the notebook and fixed the ceiling (the first page's is its time).
    checked: Future[dict[str, Any]] = Future()
    embed = words if words and req.mode != "lexical" else None
    pending = semantic_started(store, principal, embed, scope, values, checked)
    try:
        with transaction(store.pool, principal.account_id) as conn:
            if "projectId" in req.model_fields_set:
                check_notebook(conn, principal, req.projectId)
            if ceiling is None:
                ceiling = _now(conn)
            values["ceiling"] = ceiling
            checked.set_result({"ceiling": ceiling})
            lexical = (
                lexical_candidates(conn, principal, words, scope, values)
                if req.mode != "semantic"
                else []
            )
    finally:
        checked.cancel()  # a failed check: the semantic read never starts
    vector, semantic = pending.result()
    fused = fuse(lexical, semantic, store.lexical_weight)
    if req.sort == "updated_desc":
        fused.sort(key=lambda c: (c.row["updated_at"], c.row["id"]), reverse=True)
    page = with_savers_of(store, principal, fused[offset : offset + req.limit])
    more = len(fused) > offset + req.limit
    next_cursor = (
        cursors.encode(
            store.cursor_secret,
            {"bind": binding, "offset": offset + req.limit, "ceiling": ceiling.isoformat()},
        )
        if more
        else None
    )
    return SearchPage(
        retrieval=vector.retrieval(lexical=req.mode != "semantic"),
        items=[_search_item(c, req.matches) for c in page],
        nextCursor=next_cursor,
    )


def recall(store: Store, principal: Principal, req: RecallRequest) -> RecallResult:
    """The most relevant notes within the budget, or a profile when there is no query."""
    require(principal, "read")
    scope = f"({in_notebook(req.projectId)}"
    if req.includePersonal and req.projectId is not None:
        scope += " OR m.project_id IS NULL"
    scope += ")"
    values: dict[str, Any] = {"project_id": req.projectId, "limit": req.limit * 4}
    query = (req.query or "").strip()
    # As in search: the semantic candidates are read alongside the lexical ones.
    checked: Future[dict[str, Any]] = Future()
    pending = semantic_started(store, principal, query, scope, values, checked) if query else None
    try:
        with transaction(store.pool, principal.account_id) as conn:
            check_notebook(conn, principal, req.projectId)
            checked.set_result({})
            handoff = _handoff(conn, principal, req) if req.taskId else None
            if pending is not None:
                lexical = above_floor(lexical_candidates(conn, principal, query, scope, values))
            else:
                candidates = [Candidate(row) for row in _profile(conn, principal, scope, values)]
    finally:
        checked.cancel()
    vector = None
    if pending is not None:
        vector, semantic = pending.result()
        candidates = with_savers_of(store, principal, fuse(lexical, semantic, store.lexical_weight))
    retrieval = (
        vector.retrieval()
        if vector
        else Retrieval(lexical=False, semantic=False, reason="no_query")
    )
    return _pack(retrieval, candidates, handoff, req.limit, req.maxChars)


def with_savers_of(
    store: Store, principal: Principal, candidates: list[Candidate]
) -> list[Candidate]:
    """The candidates with their notes' savers, read after the candidates' statements
    (Citus plans none of them with the saver's subquery in it)."""
    if not any(c.row["saved_by"] == "connection" for c in candidates):
        return candidates
    with transaction(store.pool, principal.account_id) as conn:
        rows = with_savers(conn, principal.account_id, [c.row for c in candidates])
    for candidate, row in zip(candidates, rows, strict=True):
        candidate.row = row
    return candidates


def fuse(
    lexical: list[dict[str, Any]], semantic: list[dict[str, Any]], lexical_weight: float
) -> list[Candidate]:
    """Add the normalized scores: ``lexical_weight`` times BM25 / best BM25, plus the rest
    times similarity in context scaled from the worst (0) to the best (1) semantic
    candidate (``in_context``). Ties break
    by best rank, then most recently updated, then ID, so the order is deterministic."""
    found: dict[Any, Candidate] = {}
    best = max((float(row["score"]) for row in lexical), default=0.0) or 1.0
    for rank, row in enumerate(lexical, start=1):
        candidate = found.setdefault(row["id"], Candidate(row))
        candidate.lexical_rank = rank
        candidate.terms = list(row.get("terms") or [])
        candidate.score += lexical_weight * float(row["score"]) / best
    similarities = [1.0 - float(row["context_distance"]) for row in semantic]
    high, low = max(similarities, default=1.0), min(similarities, default=0.0)
    for rank, (row, similarity) in enumerate(zip(semantic, similarities, strict=True), 1):
        candidate = found.setdefault(row["id"], Candidate(row))
        candidate.semantic_rank = rank
        candidate.distance = float(row["distance"])
        scaled = (similarity - low) / (high - low) if high > low else 1.0
        candidate.score += (1.0 - lexical_weight) * scaled

    def order(c: Candidate) -> tuple[float, int, float, UUID]:
        # An ID (a UUID) orders as its text does.
        best = min(r for r in (c.lexical_rank, c.semantic_rank) if r is not None)
        return (-c.score, best, -c.row["updated_at"].timestamp(), c.row["id"])

    return sorted(found.values(), key=order)


def _now(conn: Conn) -> datetime:
    row = conn.execute("SELECT statement_timestamp() AS now").fetchone()
    assert row is not None
    return row["now"]  # type: ignore[no-any-return]


def _search_scope(req: SearchRequest) -> tuple[str, dict[str, Any]]:
    scope, values = "true", dict[str, Any]()
    if "projectId" in req.model_fields_set:
        scope = in_notebook(req.projectId)
        values["project_id"] = req.projectId
    if req.kind is not None:
        scope += " AND m.kind = %(kind)s"
        values["kind"] = req.kind
    if req.connectionId is not None:
        scope += " AND m.connection_id = %(connection_id)s"
        values["connection_id"] = req.connectionId
    return scope, values


def plan_for_this_tenant(conn: Conn) -> None:
    """Plan the retrieval statements for the tenant at hand, for the rest of the transaction.

    psycopg prepares a statement after its fifth run on a connection, and PostgreSQL may
    then keep one generic plan for every tenant that connection serves: built without the
    account's size or the profile, it cannot use the partial HNSW index, and a 100,000-note
    account got an exact scan (~0.5 s) after small accounts had primed the plan. A custom
    plan costs well under a millisecond to make.
    """
    set_locally(conn, PLAN)


def walk_for_this_tenant(conn: Conn) -> None:
    """Plan the semantic statement for the tenant at hand and set its HNSW walk, for the
    rest of the transaction: keep walking until enough rows pass the tenant and scope
    filters (iterative scan), with ``HNSW_EF_SEARCH`` candidates per step."""
    set_locally(conn, WALK)


#: The settings of ``plan_for_this_tenant`` and ``walk_for_this_tenant``.
PLAN = {"plan_cache_mode": "force_custom_plan"}
WALK = {**PLAN, "hnsw.iterative_scan": "relaxed_order", "hnsw.ef_search": str(HNSW_EF_SEARCH)}


def lexical_candidates(
    conn: Conn,
    principal: Principal,
    words: str,
    scope: str,
    values: dict[str, Any],
    k1: float = BM25_K1,
) -> list[dict[str, Any]]:
    """BM25 matches of any of the words; a substring match if none is searchable.

    ``k1`` is BM25's term-frequency saturation (other values only for ``bench.crossval``)."""
    plan_for_this_tenant(conn)
    values = params(principal, query=words, k1=k1, **values)
    found = bm25(conn, principal, words, scope)
    if found is None:
        pattern = "%" + words.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        statement = SUBSTRING.format(columns=ROW_COLUMNS, visible=VISIBLE, scope=scope)
        return conn.execute(
            statement, {**values, "pattern": pattern, "substring_score": SUBSTRING_SCORE}
        ).fetchall()
    statement, words_values = found
    return conn.execute(statement, {**values, **words_values}).fetchall()


def word_counts_params(principal: Principal, query: str) -> dict[str, Any]:
    """``WORD_COUNTS``'s parameters: postings are counted only for a caller who sees the
    whole account, the only one whose words are split by their counts (see ``bm25``)."""
    return {
        "account_id": principal.account_id,
        "query": query,
        "budget": CANDIDATE_BUDGET if sees_whole_account(principal) else 0,
    }


def sees_whole_account(principal: Principal) -> bool:
    """Whether the caller may see every note of the account (personal and all notebooks)."""
    return principal.personal and principal.all_notebooks


def bm25(
    conn: Conn, principal: Principal, query: str, scope: str
) -> tuple[str, dict[str, Any]] | None:
    """The BM25 statement for ``query`` and its word parameters; None without words.

    The words find candidates rarest first while their notes add up to at most
    ``CANDIDATE_BUDGET`` (the rarest finds them unless it is common too); the rest are
    common and only rank. A common word's share of the account's notes is estimated from
    the id of its ``CANDIDATE_BUDGET``-th note (``estimated_notes``): ids are random, so
    that many notes spread over that fraction of the id space. When even the rarest word
    is common, every word only ranks, and the candidates are the notes with both of the
    two rarest (``FOUND_COMMON``). Only a caller who may see every note of the account
    gets this split, since it depends on notes outside the scope; for anyone else every
    word finds candidates, and the counts are exact over what they may see.
    """
    sees_all = sees_whole_account(principal)
    rows = conn.execute(WORD_COUNTS, word_counts_params(principal, query)).fetchall()
    if not rows:
        return None
    rows.sort(key=lambda r: (estimated_notes(r), r["word"]))
    # Even the rarest word is common: candidates from the two rarest (FOUND_COMMON).
    everything_common = sees_all and rows[0]["notes"] >= CANDIDATE_BUDGET
    finding: list[str] = []
    common: list[str] = []
    frequencies: list[float] = []
    spent = 0
    for row in rows:
        capped = row["notes"] >= CANDIDATE_BUDGET
        if everything_common or (
            sees_all and finding and (common or capped or spent + row["notes"] > CANDIDATE_BUDGET)
        ):
            common.append(row["word"])
            frequencies.append(min(estimated_notes(row), float(row["corpus"] or 1)))
        else:
            finding.append(row["word"])
            frequencies.append(float(row["notes"]))
            spent += row["notes"]
    values: dict[str, Any] = {
        "words": [row["word"] for row in rows],
        "finding": finding,
        # Document frequencies are given only to a caller who sees the whole account.
        "counted": [row["word"] for row in rows] if sees_all else [],
        "df": frequencies if sees_all else [],
        "corpus": rows[0]["corpus"] if sees_all else None,
    }
    found = FOUND_ANY
    if everything_common:
        found = FOUND_COMMON
        values.update(
            rarest=rows[0]["word"],
            next=rows[1]["word"] if len(rows) > 1 else None,
            budget=CANDIDATE_BUDGET,
        )
    statement = BM25.format(found=found, columns=ROW_COLUMNS, visible=VISIBLE, scope=scope)
    return statement, values


def estimated_notes(row: dict[str, Any]) -> float:
    """How many notes have a word of ``WORD_COUNTS``: its count, or past the budget, the
    count divided by the share of the id space its last counted posting reached."""
    if row["notes"] < CANDIDATE_BUDGET:
        return float(row["notes"])
    return float(row["notes"] / (row["last"].int / 2**128))


def semantic_candidates(
    conn: Conn,
    store: Store,
    principal: Principal,
    vector: QueryVector,
    scope: str,
    values: dict[str, Any],
) -> list[dict[str, Any]]:
    if vector.vector is None:
        return []
    rows = semantic_rows(conn, store, principal, vector.vector, scope, values)
    neighbours = (
        neighbour_rows(conn, store, principal, vector.vector, scope, values, rows)
        if CONTEXT_WEIGHT
        else []
    )
    return in_context(rows, neighbours, CONTEXT_WEIGHT, store.max_distance)


def semantic_rows(
    conn: Conn,
    store: Store,
    principal: Principal,
    vector: list[float],
    scope: str,
    values: dict[str, Any],
) -> list[dict[str, Any]]:
    """The nearest ``limit`` notes by distance (no threshold), nearest first."""
    walk_for_this_tenant(conn)
    statement = SEMANTIC.format(columns=ROW_COLUMNS, visible=VISIBLE, scope=scope, dims=len(vector))
    rows = conn.execute(
        statement, semantic_params(principal, vector, store.profile, values)
    ).fetchall()
    # Iterative scans may return rows slightly out of order: rank by distance here.
    return sorted(rows, key=lambda r: (r["distance"], r["id"]))


def neighbour_rows(
    conn: Conn,
    store: Store,
    principal: Principal,
    vector: list[float],
    scope: str,
    values: dict[str, Any],
    rows: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """The neighbours of ``rows`` (``NEIGHBOURS``), each naming the row in ``neighbour_of``;
    only rows that name a source have any."""
    sourced = [row["id"] for row in rows if row["source_agent"] is not None]
    if not sourced:
        return []
    statement = NEIGHBOURS.format(
        columns=ROW_COLUMNS,
        visible=VISIBLE,
        scope=scope,
        dims=len(vector),
        same_sequence=SAME_SEQUENCE,
    )
    found = semantic_params(principal, vector, store.profile, values)
    found["ids"] = sourced
    return conn.execute(statement, found).fetchall()


def in_context(
    rows: list[dict[str, Any]],
    neighbours: list[dict[str, Any]],
    weight: float,
    max_distance: float,
) -> list[dict[str, Any]]:
    """The semantic candidates ranked by similarity in context: a note's own similarity
    plus ``weight`` times its more similar neighbour's (``CONTEXT_WEIGHT``).

    A neighbour that was not a candidate becomes one (the turn that answers a question
    rarely shares its words or meaning: "Take a look at this."). Each row gets
    ``context_distance`` (1 - similarity in context), which ranks and fuses it and must be
    within ``max_distance``; ``distance`` stays the note's own.
    """
    similarity = {row["id"]: 1.0 - float(row["distance"]) for row in rows}
    found = {row["id"]: row for row in rows}
    beside: dict[Any, list[Any]] = {}
    for row in neighbours:
        if row["id"] not in found:
            similarity[row["id"]] = 1.0 - float(row["distance"])
            found[row["id"]] = {k: v for k, v in row.items() if k != "neighbour_of"}
        beside.setdefault(row["id"], []).append(row["neighbour_of"])
        beside.setdefault(row["neighbour_of"], []).append(row["id"])
    ranked = []
    for note_id, row in found.items():
        context = max((similarity[other] for other in beside.get(note_id, ())), default=0.0)
        distance = 1.0 - (similarity[note_id] + weight * max(context, 0.0))
        if distance <= max_distance:
            ranked.append({**row, "context_distance": distance})
    return sorted(ranked, key=lambda r: (r["context_distance"], r["id"]))


def semantic_params(
    principal: Principal, vector: list[float], profile: str | None, values: dict[str, Any]
) -> dict[str, Any]:
    """``SEMANTIC``'s parameters: the scope's, the query vector, the profile, the account."""
    return params(
        principal,
        vector=vector_literal(vector),
        profile=profile,
        account=principal.account_id,
        **values,
    )


def semantic_read(
    store: Store, principal: Principal, vector: QueryVector, scope: str, values: dict[str, Any]
) -> list[dict[str, Any]]:
    """``semantic_candidates`` in a tenant transaction of their own (none without a vector)."""
    if vector.vector is None:
        return []
    with transaction(store.pool, principal.account_id) as conn:
        return semantic_candidates(conn, store, principal, vector, scope, values)


def above_floor(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if not rows:
        return rows
    floor = rows[0]["score"] * RELATIVE_FLOOR
    return [r for r in rows if r["score"] >= floor]


def _search_item(candidate: Candidate, matches: bool) -> SearchItem:
    evidence = (
        MatchEvidence(
            lexical=candidate.lexical_rank is not None,
            semantic=candidate.semantic_rank is not None,
            terms=candidate.terms,
            distance=None if candidate.distance is None else round(candidate.distance, 6),
        )
        if matches
        else None
    )
    return SearchItem(
        memory=memory_of(candidate.row), score=round(candidate.score, 6), matches=evidence
    )


def _profile(
    conn: Conn, principal: Principal, scope: str, values: dict[str, Any]
) -> list[dict[str, Any]]:
    return conn.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memories m"
        f" WHERE m.kind = ANY(%(kinds)s) AND m.archived_at IS NULL AND {VISIBLE} AND {scope}"
        " ORDER BY m.updated_at DESC, m.id LIMIT %(limit)s",
        params(principal, kinds=list(PROFILE_KINDS), **values),
    ).fetchall()


def _handoff(conn: Conn, principal: Principal, req: RecallRequest) -> dict[str, Any] | None:
    return conn.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE m.kind = 'handoff'"
        " AND m.task_id = %(task_id)s AND m.project_id IS NOT DISTINCT FROM %(project_id)s"
        f" AND m.archived_at IS NULL AND {VISIBLE}",
        params(principal, task_id=req.taskId, project_id=req.projectId),
    ).fetchone()


def item_chars(memory: Memory) -> int:
    """What a note costs against the recall budget: its content plus its metadata."""
    provenance = memory.provenance
    metadata = (memory.kind, memory.taskId, provenance.sourceAgent, provenance.sourceRef)
    return len(memory.content) + sum(len(m) for m in metadata if m)


def _shortened(memory: Memory, budget: int) -> tuple[Memory | None, bool]:
    """Fit one note into ``budget`` by cutting its content; None if even that fails.

    Used for the first note recall returns (the handoff, or the best match), so an
    oversized note yields its beginning rather than nothing.
    """
    cost = item_chars(memory)
    if cost <= budget:
        return memory, False
    keep = len(memory.content) - (cost - budget)
    if keep <= 0:
        return None, False
    return memory.model_copy(update={"content": memory.content[:keep]}), True


def _pack(
    retrieval: Retrieval,
    candidates: list[Candidate],
    handoff_row: dict[str, Any] | None,
    limit: int,
    max_chars: int,
) -> RecallResult:
    used, omitted = 0, 0
    handoff: Memory | None = None
    handoff_truncated = False
    if handoff_row is not None:
        handoff, handoff_truncated = _shortened(memory_of(handoff_row), max_chars)
        if handoff is None:
            omitted += 1
        else:
            used += item_chars(handoff)
    items: list[RecallItem] = []
    for candidate in candidates:
        if handoff_row is not None and candidate.row["id"] == handoff_row["id"]:
            continue
        memory: Memory | None = memory_of(candidate.row)
        truncated = False
        if not items and used == 0 and memory is not None:
            memory, truncated = _shortened(memory, max_chars)
        if memory is None or len(items) >= limit or used + item_chars(memory) > max_chars:
            omitted += 1
            continue
        used += item_chars(memory)
        items.append(
            RecallItem(
                memory=memory,
                score=round(candidate.score, 6) if candidate.score else None,
                contentTruncated=truncated,
            )
        )
    return RecallResult(
        retrieval=retrieval,
        items=items,
        handoff=handoff,
        handoffTruncated=handoff_truncated,
        usedChars=used,
        omitted=omitted,
    )
