"""Many tenants in one database: by default 1,000,000 notes over 1,000 accounts.

One account of ``--largest`` notes (100,000) and the rest spread log-uniformly from 10
to 10,000 notes (seeded), scaled so that all of them add up to about ``--notes``. Every
account's notes are drawn from bench.bulk's varied notes (the largest account takes them
all) with their cached MiniLM vectors, each copy nudged by a little seeded noise so that
no two accounts hold the same vector. The HNSW index is dropped for the load and built
again after it (its build time is reported), then ``grove indexes`` gives every account
over ``--min-vectors`` a graph of its own, as a deployment's schedule would.

Then, per bucket of account size (up to 100, 1,000 and 10,000 notes, and the largest),
for up to ``--per-bucket`` accounts of each: recall and search over HTTP (p50/p95/p99 of
all their requests together), the search's own SQL as the service runs it on a
connection that prepares statements like the pool's (``bench.floor``), and the semantic
candidates' recall@10 against an exact scan (search's 200, and recall's 40); and the
sizes of the largest tables and indexes. ``bench/results/scale-tenants.json`` keeps the
figures.

With ``--citus`` the same run is made twice, on one server and then on a Citus cluster
on loopback (a coordinator and two workers, ``grove migrate --citus``), and the cluster's
figures are printed beside the single server's with their ratio. On the cluster the
services' roles refuse any statement that touches more than one shard
(``citus.refuse_fan_out``): every recall, search and floor statement measured for one
account must be a router query (one task on one node), or the run fails. Last, the
largest account is moved to a shard of its own (Citus's
``isolate_tenant_to_new_shard(..., 'CASCADE')``, which gives it an HNSW graph of its
own) and measured again.
"""

from __future__ import annotations

import argparse
import json
import random
import time
import uuid
from typing import Any

import numpy as np

from bench import bulk, floor, latency
from bench.stack import RESULTS, Stack, stack
from grove_cli import admin, indexes
from grove_db import citus
from grove_memory.inference import InferenceClient
from grove_memory.search import recall

#: Workers of the cluster ``--citus`` compares with one server (plus a coordinator).
CITUS_WORKERS = 2
#: Recall's semantic candidates at its default limit of 10 (four per answer).
RECALL_LIMIT = 40
BUCKETS = ((100, "<= 100"), (1000, "<= 1,000"), (10000, "<= 10,000"))
HNSW = "embeddings_minilm_hnsw"
CREATE_HNSW = (
    f"CREATE INDEX {HNSW} ON embeddings"
    " USING hnsw ((embedding::vector(384)) vector_cosine_ops) WHERE profile = 'minilm'"
)
CITUS_SIZES = """
    SELECT table_name::text AS name, citus_total_relation_size(table_name) AS bytes
    FROM citus_tables ORDER BY 2 DESC LIMIT 10
"""
SIZES = """
    SELECT c.relname AS name, pg_relation_size(c.oid) AS bytes FROM pg_class c
    WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'i')
    ORDER BY pg_relation_size(c.oid) DESC LIMIT 10
"""


def account_sizes(notes: int, accounts: int, largest: int, seed: int = 7) -> list[int]:
    """The largest account first, then ``accounts - 1`` sizes between 10 and 10,000."""
    rng = random.Random(seed)  # noqa: S311 - reproducible sizes, not cryptography
    drawn = [10 ** rng.uniform(1, 4) for _ in range(accounts - 1)]
    scale = max(notes - largest, 0) / max(sum(drawn), 1)
    return [largest] + [min(max(round(d * scale), 10), 10000) for d in drawn]


def bucket(size: int, largest: int) -> str:
    """The bucket an account of ``size`` notes is reported in."""
    if size >= largest:
        return f"{largest:,} (largest)"
    return next((label for cap, label in BUCKETS if size <= cap), f"<= {largest:,}")


def load(running: Stack, sizes: list[int], texts: list[str], vectors: Any, seed: int = 7) -> Any:
    """Create the accounts and bulk-load their notes; returns ``[(account_id, size)]`` and
    the seconds the HNSW build took."""
    superuser = running.db.grove_superuser_url
    rng = np.random.default_rng(seed)
    accounts: list[tuple[str, int]] = []
    with floor.connect(superuser) as conn:
        conn.execute(f"DROP INDEX IF EXISTS {HNSW}")
        conn.commit()
    try:
        for n, size in enumerate(sizes):
            account = str(admin.create_account(running.db.migration_url, f"tenant {n}"))
            chosen = (
                np.arange(len(texts))
                if size >= len(texts)
                else rng.choice(len(texts), size, replace=False)
            )
            nudged = vectors[chosen] + rng.normal(0, 0.01, (len(chosen), vectors.shape[1]))
            nudged /= np.linalg.norm(nudged, axis=1, keepdims=True)
            bulk.load(superuser, account, [texts[i] for i in chosen], nudged, analyze=False)
            accounts.append((account, len(chosen)))
    finally:
        with floor.connect(superuser) as conn:
            conn.execute("SET maintenance_work_mem = '2GB'")
            started = time.perf_counter()
            conn.execute(CREATE_HNSW)
            built = time.perf_counter() - started
            conn.commit()
        bulk.settle(superuser)
    return accounts, built


def own_indexes(running: Stack, min_vectors: int) -> float:
    """``grove indexes``, as a deployment's schedule runs it; returns the seconds it took."""
    started = time.perf_counter()
    changes = indexes.ensure(running.db.migration_url, "minilm", min_vectors)
    indexes.report(changes)
    return time.perf_counter() - started


def measure(
    running: Stack, accounts: list[tuple[str, int]], queries: list[str], per_bucket: int
) -> dict[str, dict[str, Any]]:
    """Per bucket: HTTP recall and search, the statement floor, ANN recall@10."""
    largest = max(size for _, size in accounts)
    chosen: dict[str, list[tuple[str, int]]] = {}
    for account, size in accounts:
        picked = chosen.setdefault(bucket(size, largest), [])
        if len(picked) < per_bucket:
            picked.append((account, size))
    client = InferenceClient(running.env["GROVE_ASK_ADDRESS"], "minilm")
    vectors = [client.embed_query(query, 30) for query in queries]
    client.close()
    secret = running.env["GROVE_SECRET_KEY"]
    report: dict[str, dict[str, Any]] = {}
    with floor.connect(running.db.runtime_url) as conn:
        for label, members in sorted(chosen.items(), key=lambda item: item[1][0][1]):
            taken: dict[str, list[float]] = {"/v1/recall": [], "/v1/memories/search": []}
            statements: list[float] = []
            ann: list[float] = []
            recall_ann: list[float] = []
            for account, _ in members:
                key = admin.create_key(
                    running.db.migration_url,
                    secret,
                    uuid.UUID(account),
                    "bench",
                    all_notebooks=True,
                ).key
                for path, times in taken.items():
                    times += latency.timings(running.api_url, key, queries, path, warm_up=3)[0]
                batches = [
                    floor.statements(conn, account, q, v, "minilm")
                    for q, v in zip(queries, vectors, strict=True)
                ]
                statements += [floor.run(conn, account, batch) for batch in batches]
                ef = recall.HNSW_EF_SEARCH  # as the service walks
                ann.append(floor.ann_recall(conn, account, batches, ef))
                recall_ann.append(floor.ann_recall(conn, account, batches, ef, RECALL_LIMIT))
            report[label] = {
                "accounts": len(members),
                "notes": [size for _, size in members],
                "recall": latency.percentiles(taken["/v1/recall"]),
                "search": latency.percentiles(taken["/v1/memories/search"]),
                "statements": latency.percentiles(statements),
                "annRecallAt10": sum(ann) / len(ann),
                "recallAnnRecallAt10": sum(recall_ann) / len(recall_ann),
            }
    return report


def sizes_now(running: Stack) -> dict[str, int]:
    """The ten largest tables and indexes, in bytes (on a cluster: the tables over all
    their shards, indexes included)."""
    superuser = running.db.grove_superuser_url
    query = CITUS_SIZES if isinstance(running.db.server, citus.Cluster) else SIZES
    with floor.connect(superuser) as conn:
        return {row["name"]: int(row["bytes"]) for row in conn.execute(query).fetchall()}


def isolate(running: Stack, account: str) -> float:
    """Give ``account`` shards of its own (every co-located table); the seconds it took.

    Writes to the account's shard group wait while it is split (``block_writes``:
    logical replication refuses tables that force row-level security on their owner).
    """
    started = time.perf_counter()
    with floor.connect(running.db.grove_superuser_url) as conn:
        conn.execute(
            "SELECT isolate_tenant_to_new_shard('memories', %s::uuid, 'CASCADE',"
            " shard_transfer_mode => 'block_writes')",
            (account,),
        )
        conn.commit()
    bulk.settle(running.db.grove_superuser_url)
    return time.perf_counter() - started


def run(args: argparse.Namespace, texts: list[str], vectors: Any, workers: int) -> dict[str, Any]:
    """The benchmark on one server (``workers`` 0) or on a cluster of that many workers."""
    sizes = account_sizes(args.notes, args.accounts, args.largest)
    queries = latency.questions(args.queries)
    where = f"a Citus cluster of {workers} workers" if workers else "one server"
    with stack("minilm", citus_workers=workers, fan_out_refused=bool(workers)) as running:
        started = time.perf_counter()
        accounts, built = load(running, sizes, texts, vectors)
        loaded = time.perf_counter() - started
        total = sum(size for _, size in accounts)
        print(
            f"{where}: {total:,} notes over {len(accounts):,} accounts loaded in {loaded:.0f} s"
            f" (HNSW build {built:.0f} s)",
            flush=True,
        )
        own = own_indexes(running, args.min_vectors) if args.min_vectors else 0.0
        print(f"per-account indexes (grove indexes) in {own:.0f} s", flush=True)
        report = measure(running, accounts, queries, args.per_bucket)
        print(show(report), flush=True)
        isolated: dict[str, Any] = {}
        if workers:
            largest = accounts[0]
            seconds = isolate(running, largest[0])
            isolated = measure(running, [largest], queries, args.per_bucket)
            print(f"the largest account isolated on shards of its own in {seconds:.0f} s:")
            print(show(isolated), flush=True)
            isolated = {"seconds": round(seconds, 1), "buckets": isolated}
        sizes_in_bytes = sizes_now(running)
    return {
        "notes": total,
        "accounts": len(accounts),
        "citusWorkers": workers,
        "loadSeconds": round(loaded, 1),
        "hnswBuildSeconds": round(built, 1),
        "minVectors": args.min_vectors,
        "ownIndexesSeconds": round(own, 1),
        "buckets": report,
        "isolated": isolated,
        "bytes": sizes_in_bytes,
    }


def compare(single: dict[str, Any], cluster: dict[str, Any]) -> str:
    """Per bucket: p95 of recall and search on each, the cluster's over the single
    server's (target: at most 1.5), and the cluster's ANN recall@10 (target: 0.95)."""
    lines = [
        f"{'bucket':<20} {'recall p95 1 / cluster':>24} {'ratio':>6}"
        f" {'search p95 1 / cluster':>24} {'ratio':>6}  ANN@10 cluster (search, recall)"
    ]
    for label, one in single["buckets"].items():
        many = cluster["buckets"][label]
        cells = []
        for kind in ("recall", "search"):
            a, b = one[kind][1], many[kind][1]
            cells.append(f"{f'{a:.1f} / {b:.1f}':>24} {b / a:>6.2f}")
        lines.append(
            f"{label:<20} {' '.join(cells)}"
            f"  {many['annRecallAt10']:.3f} {many['recallAnnRecallAt10']:.3f}"
        )
    return "\n".join(lines)


def show(report: dict[str, dict[str, Any]]) -> str:
    lines = [
        f"{'bucket':<20} {'accounts':>8}  {'recall p50/p95/p99':>22}  {'search p50/p95/p99':>22}"
        f"  {'SQL p50/p95/p99':>22}  ANN@10 (search, recall)"
    ]
    for label, row in report.items():
        cells = ["/".join(f"{x:.1f}" for x in row[k]) for k in ("recall", "search", "statements")]
        lines.append(
            f"{label:<20} {row['accounts']:>8}  {cells[0]:>22}  {cells[1]:>22}  {cells[2]:>22}"
            f"  {row['annRecallAt10']:.3f} {row['recallAnnRecallAt10']:.3f}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notes", type=int, default=1_000_000)
    parser.add_argument("--accounts", type=int, default=1000)
    parser.add_argument("--largest", type=int, default=100_000)
    parser.add_argument("--per-bucket", type=int, default=5)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument(
        "--min-vectors",
        type=int,
        default=indexes.DEFAULT_MIN_VECTORS,
        help="grove indexes' threshold (0: no per-account indexes)",
    )
    parser.add_argument(
        "--citus",
        action="store_true",
        help="also run on a Citus cluster of a coordinator and two workers, and compare",
    )
    args = parser.parse_args()
    texts = bulk.texts(args.largest)
    vectors = bulk.vectors(texts)
    figures = {"single": run(args, texts, vectors, 0)}
    if args.citus:
        figures["citus"] = run(args, texts, vectors, CITUS_WORKERS)
        print(compare(figures["single"], figures["citus"]))
    for name, size in figures["single"]["bytes"].items():
        print(f"{name:<32} {size / 2**20:10.1f} MiB")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "scale-tenants.json").write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
