"""Exact vector search for large embedding profiles: what a query costs with no ANN index.

pgvector's HNSW index takes at most 2,000 dimensions on ``vector``, so a 4,096-dimension
profile (say a Qwen embedding model behind an OpenAI-compatible endpoint) has none: the
semantic statement (``grove_memory.search.recall.SEMANTIC``) reads every current vector of the
profile in the account and sorts them. Two accounts of 10,000 notes each (bench.bulk's
varied texts, bulk-loaded; ``--other-notes`` for a larger other account), so the scan is
scoped to one account in a table holding another's too, each note with a vector in three
profiles written server-side from a fixed seed (random unit vectors: the point is cost,
not meaning):

- ``minilm``, 384 dimensions, with the migration's HNSW index (``embeddings_minilm_hnsw``):
  the planner's choice, HNSW or exact, is printed;
- ``exact384``, the same vectors under a profile with no index: 384 dimensions exact;
- ``openai``, 4,096 dimensions, no index possible: exact.

For each, the service's semantic statement as it runs it (runtime role, tenant
transaction, ``walk_for_this_tenant``, the pooled connection preparing it) with recall's
40 candidates and search's 200, for ``--queries`` query vectors (a note's vector of the
measured account plus noise): median and p95 ms, the plan (``EXPLAIN (ANALYZE, BUFFERS)``
of one query each in ``bench/results/explain-exact.txt``; an exact plan says how it read
the vectors: the whole table filtered, or the account's by key), and for ``minilm`` the HNSW
candidates' recall@10 against ``exact384``'s. Then the storage: what each profile's
vectors (both accounts') added to ``embeddings`` (heap, TOAST and indexes:
``pg_total_relation_size``); ``bench/results/exact.json`` keeps the figures.

Run: ``python -m bench.exact`` (~3 minutes here; ``--other-notes 100000``, ~12).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
import uuid
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg

from bench import bulk
from bench.stack import RESULTS, stack
from grove_auth.principal import Principal
from grove_cli import admin
from grove_db.pool import open_pool, transaction
from grove_memory.rows import MEMORY_COLUMNS
from grove_memory.scope import VISIBLE
from grove_memory.search import recall

NOTES = 10_000
DEFAULT_QUERIES = 100
WARMUP = 5
#: Recall's semantic candidates (4 x its default limit of 10) and search's.
LIMITS = (40, 200)


@dataclass(frozen=True)
class Profile:
    name: str
    dimensions: int
    #: The profile whose vectors it copies (same vectors, another profile), if any.
    copy_of: str | None = None


PROFILES = (
    Profile("exact384", 384),
    Profile("minilm", 384, copy_of="exact384"),
    Profile("openai", 4096),
)

# Each note's vector: l2-normalized standard normals drawn per row (the correlated
# ``m.id`` makes the subquery run once per note, not once for all).
RANDOM_VECTORS = """
    INSERT INTO embeddings (account_id, memory_id, version, profile, dimensions, embedding)
    SELECT m.account_id, m.id, m.version, %(profile)s, %(dimensions)s, l2_normalize(
        (SELECT array_agg(random_normal()) FROM generate_series(1, %(dimensions)s)
         WHERE m.id IS NOT NULL)::vector)
    FROM memories m WHERE m.account_id = %(account)s ORDER BY m.id
"""
COPIED_VECTORS = """
    INSERT INTO embeddings (account_id, memory_id, version, profile, dimensions, embedding)
    SELECT account_id, memory_id, version, %(profile)s, dimensions, embedding
    FROM embeddings WHERE account_id = %(account)s AND profile = %(source)s
"""
SIZE = """
    SELECT pg_total_relation_size('embeddings') AS total,
           pg_relation_size('embeddings') AS heap,
           pg_total_relation_size(c.reltoastrelid) AS toast,
           pg_indexes_size('embeddings') AS indexes
    FROM pg_class c WHERE c.oid = 'embeddings'::regclass
"""


def load_vectors(superuser: str, accounts: list[uuid.UUID]) -> dict[str, dict[str, int]]:
    """Every profile's vectors for every note of ``accounts``; what each added, in bytes."""
    grown = {}
    with psycopg.connect(superuser, autocommit=True) as conn:
        conn.execute("SELECT setseed(0.4096)")
        before = _size(conn)
        for profile in PROFILES:
            start = time.perf_counter()
            for account in accounts:
                if profile.copy_of:
                    conn.execute(
                        COPIED_VECTORS,
                        {"profile": profile.name, "account": account, "source": profile.copy_of},
                    )
                else:
                    conn.execute(
                        RANDOM_VECTORS,
                        {
                            "profile": profile.name,
                            "dimensions": profile.dimensions,
                            "account": account,
                        },
                    )
            conn.execute("VACUUM (ANALYZE) embeddings")
            after = _size(conn)
            grown[profile.name] = {k: after[k] - before[k] for k in after}
            before = after
            print(
                f"bench: {profile.name} vectors loaded in {time.perf_counter() - start:.0f} s",
                flush=True,
            )
    return grown


def _size(conn: psycopg.Connection[Any]) -> dict[str, int]:
    row = conn.execute(SIZE).fetchone()
    assert row is not None
    return {"total": row[0], "heap": row[1], "toast": row[2], "indexes": row[3]}


def query_vectors(
    superuser: str, account: uuid.UUID, count: int, profile: Profile
) -> list[list[float]]:
    """``count`` queries: notes' vectors of the account (chosen with a fixed seed) plus
    as much noise again, normalized (a cosine of about 0.7 to their note)."""
    with psycopg.connect(superuser) as conn:
        rows = conn.execute(
            "SELECT embedding::real[] FROM embeddings WHERE account_id = %s AND profile = %s"
            " ORDER BY memory_id LIMIT %s",
            (account, profile.name, count * 7),
        ).fetchall()
    rng = np.random.default_rng(profile.dimensions)
    picked = [
        np.asarray(rows[i][0]) for i in rng.choice(len(rows), count, replace=len(rows) < count)
    ]
    queries = []
    for vector in picked:
        noise = rng.normal(size=profile.dimensions)
        query = vector + noise / np.linalg.norm(noise)
        queries.append((query / np.linalg.norm(query)).tolist())
    return queries


def statement(dimensions: int) -> str:
    return recall.SEMANTIC.format(
        columns=MEMORY_COLUMNS, visible=VISIBLE, scope="true", dims=dimensions
    )


def run(
    pool: Any, who: Principal, profile: Profile, query: list[float], limit: int
) -> tuple[float, list[Any]]:
    """The semantic statement as ``recall.semantic_rows`` runs it: ms and the notes' ids."""
    values = recall.semantic_params(who, query, profile.name, {"limit": limit})
    with transaction(pool, who.account_id) as conn:
        start = time.perf_counter()
        recall.walk_for_this_tenant(conn)
        rows = conn.execute(statement(profile.dimensions), values).fetchall()
        elapsed = (time.perf_counter() - start) * 1000
    ranked = sorted(rows, key=lambda r: (r["distance"], r["id"]))
    return elapsed, [row["id"] for row in ranked]


def explain(
    pool: Any, who: Principal, profile: Profile, query: list[float], limit: int
) -> tuple[str, str]:
    """``EXPLAIN (ANALYZE, BUFFERS)`` of one run, and the index it walked (or ``exact``)."""
    values = recall.semantic_params(who, query, profile.name, {"limit": limit})
    with transaction(pool, who.account_id) as conn:
        recall.walk_for_this_tenant(conn)
        rows = conn.execute(
            "EXPLAIN (ANALYZE, BUFFERS) " + statement(profile.dimensions), values
        ).fetchall()
    # The query vector's literal (up to 4,096 numbers, twice) is cut short.
    text = VECTOR_LITERAL.sub(r"'[…]'::vector", "\n".join(next(iter(r.values())) for r in rows))
    used = [word for word in text.replace("(", " ").split() if word.endswith("_hnsw")]
    if used:
        return text, f"HNSW ({used[0]})"
    read = EMBEDDINGS_READ.search(text)
    return text, f"exact ({read.group(1) if read else '?'})"


VECTOR_LITERAL = re.compile(r"'\[[^\]]*\]'::vector")
#: How an exact plan reads the vectors: the whole table filtered, or the account's by key.
EMBEDDINGS_READ = re.compile(r"(Seq Scan|Index Scan using \S+|Bitmap Heap Scan) on embeddings e")


def percentile(times: list[float], share: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=NOTES, help="notes of the measured account")
    parser.add_argument(
        "--other-notes", type=int, help="notes of the other account (default: --notes)"
    )
    parser.add_argument("--queries", type=int, default=DEFAULT_QUERIES)
    args = parser.parse_args()
    other = args.notes if args.other_notes is None else args.other_notes
    texts = bulk.texts(args.notes + other)
    report: dict[str, Any] = {
        "notes": args.notes,
        "other_notes": other,
        "queries": args.queries,
        "cases": [],
    }
    explains = []
    with stack("disabled") as running:
        superuser = running.db.grove_superuser_url
        accounts = []
        for n, part in enumerate((texts[: args.notes], texts[args.notes :])):
            account = admin.create_account(running.db.migration_url, f"exact {n}")
            bulk.load(superuser, str(account), part, None, analyze=False)
            accounts.append(account)
        bulk.settle(superuser)
        grown = load_vectors(superuser, accounts)
        with psycopg.connect(superuser) as conn:
            row = conn.execute("SHOW shared_buffers").fetchone()
        report["shared_buffers"] = row[0] if row else None
        measured = accounts[0]
        who = Principal(measured, uuid.uuid4(), personal=True, all_notebooks=True)
        pool = open_pool(running.db.runtime_url, max_size=1)
        nearest: dict[tuple[str, int], list[list[Any]]] = {}
        print(
            f"\n{args.notes} notes in the measured account, {other} in another;"
            f" {args.queries} queries per case, one at a time (ms per statement)\n"
        )
        print(f"{'profile':<10} {'dims':>5} {'limit':>5}  {'plan':<40} {'median':>7} {'p95':>7}")
        for profile in PROFILES:
            basis = next((p for p in PROFILES if p.name == profile.copy_of), profile)
            queries = query_vectors(superuser, measured, args.queries, basis)
            for limit in LIMITS:
                for query in queries[:WARMUP]:
                    run(pool, who, profile, query, limit)
                times, found = [], []
                for query in queries:
                    elapsed, ids = run(pool, who, profile, query, limit)
                    times.append(elapsed)
                    found.append(ids)
                nearest[(profile.name, limit)] = found
                text, plan = explain(pool, who, profile, queries[0], limit)
                explains.append(f"== {profile.name} ({profile.dimensions}), limit {limit}\n{text}")
                case = {
                    "profile": profile.name,
                    "dimensions": profile.dimensions,
                    "limit": limit,
                    "plan": plan,
                    "median_ms": round(statistics.median(times), 2),
                    "p95_ms": round(percentile(times, 0.95), 2),
                }
                if profile.copy_of:
                    exact = nearest[(profile.copy_of, limit)]
                    hits = [
                        len(set(a[:10]) & set(b[:10])) / 10
                        for a, b in zip(found, exact, strict=True)
                    ]
                    case["recall_at_10"] = round(statistics.mean(hits), 3)
                report["cases"].append(case)
                extra = (
                    f"  recall@10 vs exact {case['recall_at_10']:.3f}" if profile.copy_of else ""
                )
                print(
                    f"{profile.name:<10} {profile.dimensions:>5} {limit:>5}  {plan:<40}"
                    f" {case['median_ms']:>7.1f} {case['p95_ms']:>7.1f}{extra}",
                    flush=True,
                )
        pool.close()
        print(
            f"\nstorage: what each profile's {args.notes + other} vectors added to embeddings"
            f" (shared_buffers {report['shared_buffers']})"
        )
        for name, sizes in grown.items():
            per = sizes["total"] / (args.notes + other)
            print(
                f"{name:<10} total {sizes['total'] / 2**20:7.1f} MiB ({per / 1024:5.1f} KiB a"
                f" vector): heap {sizes['heap'] / 2**20:6.1f}, TOAST"
                f" {sizes['toast'] / 2**20:6.1f}, indexes {sizes['indexes'] / 2**20:6.1f} MiB"
            )
        report["storage"] = grown
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "explain-exact.txt").write_text("\n\n".join(explains) + "\n")
    (RESULTS / "exact.json").write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
