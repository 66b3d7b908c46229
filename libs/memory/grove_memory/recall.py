"""Finding notes: full-text search, and recall (bounded context for an agent).

Search uses ``websearch_to_tsquery`` (every word must match; quotes and ``-word``
work). Recall ranks notes matching any query word, drops those under a relevance
floor, and packs the best into an item and character budget. A query with no
searchable words (only stop words or punctuation) falls back to a case-insensitive
substring match. Archived and expired notes never appear; recall never searches a
notebook the caller did not name.
"""

from __future__ import annotations

from typing import Any

from grove_auth.principal import Principal
from grove_contracts.notes import RecallRequest, SearchRequest
from grove_db.pool import Conn, transaction
from grove_memory.rows import MEMORY_COLUMNS, memory_json
from grove_memory.scope import VISIBLE, check_project, params
from grove_memory.store import Store, require

#: Recall drops items scoring under this share of the best item's score.
RELATIVE_FLOOR = 0.2
#: Score given to substring matches when the query has no searchable words.
SUBSTRING_SCORE = 0.05
PROFILE_KINDS = ("preference", "fact", "decision")
LEXICAL_NOTICE = "lexical retrieval only: embeddings are not available in this deployment"

SEARCH_QUERY = "websearch_to_tsquery('english', %(query)s)"
# Any of the query's words: the stemmed lexemes of the query, OR-ed together.
ANY_WORD_QUERY = """(
    SELECT to_tsquery('simple', string_agg(quote_literal(lexeme), ' | '))
    FROM unnest(tsvector_to_array(to_tsvector('english', %(query)s))) AS lexeme
)"""

RANKED = """
    WITH q AS (SELECT {tsquery} AS tsq)
    SELECT {columns}, ts_rank_cd(m.content_tsv, q.tsq, 32) AS score
    FROM memories m, q
    WHERE q.tsq IS NOT NULL AND numnode(q.tsq) > 0 AND m.content_tsv @@ q.tsq
      AND m.archived_at IS NULL AND {visible} AND {scope}
    ORDER BY score DESC, m.updated_at DESC, m.id
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

PARSES_TO_NOTHING = "SELECT numnode({tsquery}) = 0 AS empty"


def search(store: Store, principal: Principal, req: SearchRequest) -> dict[str, Any]:
    """Ranked full-text search over every granted scope (or ``projectId`` if given)."""
    require(principal, "read")
    scope, values = _search_scope(req)
    values.update(kind=req.kind, limit=req.limit)
    if req.kind is not None:
        scope += " AND m.kind = %(kind)s"
    with transaction(store.pool, principal.account_id) as conn:
        if "projectId" in req.model_fields_set:
            check_project(conn, principal, req.projectId)
        rows = _ranked(conn, principal, SEARCH_QUERY, req.query, scope, values)
    return {
        "mode": "lexical",
        "items": [{"memory": memory_json(r), "score": round(r["score"], 6)} for r in rows],
    }


def recall(store: Store, principal: Principal, req: RecallRequest) -> dict[str, Any]:
    """The most relevant notes within the budget, or a profile when there is no query."""
    require(principal, "read")
    scope = "(m.project_id IS NOT DISTINCT FROM %(project_id)s"
    if req.includePersonal and req.projectId is not None:
        scope += " OR m.project_id IS NULL"
    scope += ")"
    values: dict[str, Any] = {"project_id": req.projectId, "limit": req.limit * 4}
    with transaction(store.pool, principal.account_id) as conn:
        check_project(conn, principal, req.projectId)
        handoff = _handoff(conn, principal, req) if req.taskId else None
        query = (req.query or "").strip()
        if query:
            rows = _ranked(conn, principal, ANY_WORD_QUERY, query, scope, values)
            rows = _above_floor(rows)
        else:
            rows = _profile(conn, principal, scope, values)
    return _pack(rows, handoff, req.limit, req.maxChars)


def _search_scope(req: SearchRequest) -> tuple[str, dict[str, Any]]:
    if "projectId" not in req.model_fields_set:
        return "true", {}
    return "m.project_id IS NOT DISTINCT FROM %(project_id)s", {"project_id": req.projectId}


def _ranked(
    conn: Conn, principal: Principal, tsquery: str, query: str, scope: str, values: dict[str, Any]
) -> list[dict[str, Any]]:
    values = params(principal, query=query, **values)
    empty = conn.execute(PARSES_TO_NOTHING.format(tsquery=tsquery), values).fetchone()
    if empty is None or empty["empty"] is None or empty["empty"]:
        pattern = "%" + query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        statement = SUBSTRING.format(columns=MEMORY_COLUMNS, visible=VISIBLE, scope=scope)
        return conn.execute(
            statement, {**values, "pattern": pattern, "substring_score": SUBSTRING_SCORE}
        ).fetchall()
    statement = RANKED.format(tsquery=tsquery, columns=MEMORY_COLUMNS, visible=VISIBLE, scope=scope)
    return conn.execute(statement, values).fetchall()


def _above_floor(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if not rows:
        return rows
    floor = rows[0]["score"] * RELATIVE_FLOOR
    return [r for r in rows if r["score"] >= floor]


def _profile(
    conn: Conn, principal: Principal, scope: str, values: dict[str, Any]
) -> list[dict[str, Any]]:
    return conn.execute(
        f"SELECT {MEMORY_COLUMNS}, NULL::float8 AS score FROM memories m"
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


def item_chars(memory: dict[str, Any]) -> int:
    """What a note costs against the recall budget: its content plus its metadata."""
    provenance = memory["provenance"]
    metadata = (
        memory["kind"],
        memory["taskId"],
        provenance["sourceAgent"],
        provenance["sourceRef"],
    )
    return len(memory["content"]) + sum(len(m) for m in metadata if m)


def _shortened(memory: dict[str, Any], budget: int) -> tuple[dict[str, Any] | None, bool]:
    """Fit one note into ``budget`` by cutting its content; None if even that fails.

    Used for the first note recall returns (the handoff, or the best match), so an
    oversized note yields its beginning rather than nothing.
    """
    cost = item_chars(memory)
    if cost <= budget:
        return memory, False
    keep = len(memory["content"]) - (cost - budget)
    if keep <= 0:
        return None, False
    return {**memory, "content": memory["content"][:keep]}, True


def _pack(
    rows: list[dict[str, Any]], handoff_row: dict[str, Any] | None, limit: int, max_chars: int
) -> dict[str, Any]:
    used, omitted = 0, 0
    handoff, handoff_truncated = None, False
    if handoff_row is not None:
        handoff, handoff_truncated = _shortened(memory_json(handoff_row), max_chars)
        if handoff is None:
            omitted += 1
        else:
            used += item_chars(handoff)
    items: list[dict[str, Any]] = []
    for row in rows:
        memory: dict[str, Any] | None = memory_json(row)
        assert memory is not None
        if handoff_row is not None and memory["id"] == str(handoff_row["id"]):
            continue
        truncated = False
        if not items and used == 0:
            memory, truncated = _shortened(memory, max_chars)
        if memory is None or len(items) >= limit or used + item_chars(memory) > max_chars:
            omitted += 1
            continue
        used += item_chars(memory)
        score = row["score"]
        items.append(
            {
                "memory": memory,
                "score": None if score is None else round(score, 6),
                "contentTruncated": truncated,
            }
        )
    return {
        "mode": "lexical",
        "notice": LEXICAL_NOTICE,
        "items": items,
        "handoff": handoff,
        "handoffTruncated": handoff_truncated,
        "usedChars": used,
        "omitted": omitted,
    }
