"""``grove indexes``: an HNSW index of its own for every account with many vectors.

One HNSW graph over every account's vectors serves a large account badly: its filtered
walk visits the other accounts' nodes to find its own (among 1,000,000 notes the
100,000-note account's search statements took 65 ms at p50 against 25 ms alone in a
database). An account with at least ``min_vectors`` current vectors of a profile gets a
partial index ``WHERE account_id = '<id>' AND profile = '<profile>'``; the semantic
statement names its account and profile as values and is planned per tenant, so the
planner takes the account's own, smaller graph. Small accounts keep the exact path (their
vectors through the account's b-tree, sorted).

A profile of more dimensions than an HNSW index takes (``reindex.HNSW_MAX_DIMENSIONS``,
pgvector's 2,000; say a 4,096-dimension model) gets no index: each account over the
threshold is named on stderr as skipped, and its statements stay exact.

Indexes are built ``CONCURRENTLY`` (saves go on) one at a time, and an account's index
is dropped once the account is deleted or holds fewer than half the threshold (so an
account near it is not rebuilt back and forth). Run it with the migration credentials
from a schedule (``deploy/k8s/base/indexes-cronjob.yaml``) or after a bulk import.
"""

from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql

from grove_cli.reindex import HNSW_MAX_DIMENSIONS, too_large_for_hnsw
from grove_db.pool import set_tenant

#: Vectors from which an account gets its own graph. Below it the planner's exact path
#: (the account's vectors through its b-tree, sorted) is fast and exact.
DEFAULT_MIN_VECTORS = 20_000
PREFIX = "embeddings_account_"
#: ``embeddings_account_<32 hex>_<profile>`` fits PostgreSQL's 63-character names.
NAME = re.compile(r"^embeddings_account_([0-9a-f]{32})_([a-z][a-z0-9_]{0,11})$")
MAX_PROFILE = 12
#: Held for the run (released with the session): two runs would build the same index twice.
LOCK_KEY = 0x67726F76651D  # "grove", then 0x1D

#: An account's current vectors of the profile (what its statements search), and their size.
SIZE = """
    SELECT count(*) AS vectors, max(vector_dims(e.embedding)) AS dimensions
    FROM embeddings e
    JOIN memories m ON m.account_id = e.account_id AND m.id = e.memory_id
                   AND m.version = e.version
    WHERE e.account_id = %(account)s AND e.profile = %(profile)s AND m.deleted_at IS NULL
"""

#: Per-account indexes that exist, valid or not (a failed concurrent build leaves one invalid).
#: Run without parameters, so ``%`` is LIKE's own.
EXISTING = """
    SELECT c.relname AS name, i.indisvalid AS valid
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
    WHERE i.indrelid = 'embeddings'::regclass AND c.relname LIKE 'embeddings\\_account\\_%'
"""


@dataclass(frozen=True)
class Change:
    """What ``ensure`` did to one account's index."""

    action: str  # "built" or "dropped"
    account_id: UUID
    vectors: int
    seconds: float


def index_name(account_id: UUID, profile: str) -> str:
    return f"{PREFIX}{account_id.hex}_{profile}"


def ensure(
    migration_url: str, profile: str, min_vectors: int = DEFAULT_MIN_VECTORS
) -> list[Change]:
    """Build the missing indexes of accounts at or over ``min_vectors``, drop those of
    accounts gone or under half of it; return what changed, in the order done."""
    if not NAME.match(index_name(UUID(int=0), profile)):
        raise ValueError(
            f"profile: at most {MAX_PROFILE} lowercase letters, digits and _ for"
            " per-account indexes"
        )
    changes: list[Change] = []
    with psycopg.connect(migration_url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_try_advisory_lock(%s)", (LOCK_KEY,)).fetchone()
        if not row or not row[0]:
            raise ValueError("another grove indexes is running on this database")
        try:
            _ensure(conn, profile, min_vectors, changes)
        finally:
            # Released here, not left to the backend's exit after the socket closes: a run
            # straight after this one would otherwise race that exit and be refused.
            conn.execute("SELECT pg_advisory_unlock(%s)", (LOCK_KEY,))
    return changes


def _ensure(
    conn: psycopg.Connection[tuple[Any, ...]],
    profile: str,
    min_vectors: int,
    changes: list[Change],
) -> None:
    """``ensure``'s work, under its lock."""
    sizes = _sizes(conn, profile)
    indexed = set()
    for name, valid in conn.execute(EXISTING).fetchall():
        match = NAME.match(name)
        if not match or match.group(2) != profile:
            continue
        account_id = UUID(hex=match.group(1))
        vectors = sizes.get(account_id, (0, 0))[0]
        if valid and vectors * 2 >= min_vectors:
            indexed.add(account_id)
            continue
        started = time.monotonic()
        _drop(conn, account_id, profile)  # an invalid one (a failed build) is built again
        if valid:
            changes.append(Change("dropped", account_id, vectors, time.monotonic() - started))
    for account_id, (vectors, dimensions) in sorted(sizes.items(), key=lambda i: -i[1][0]):
        if vectors >= min_vectors and account_id not in indexed:
            if dimensions > HNSW_MAX_DIMENSIONS:
                what = f"account {account_id} ({vectors} vectors)"
                print(too_large_for_hnsw(what, dimensions), file=sys.stderr)
                continue
            started = time.monotonic()
            _build(conn, account_id, profile, dimensions)
            changes.append(Change("built", account_id, vectors, time.monotonic() - started))


def _sizes(conn: psycopg.Connection[tuple[Any, ...]], profile: str) -> dict[UUID, tuple[int, int]]:
    """Vectors and dimensions per live account (row-level security: one account at a time;
    the schema owner may list the accounts)."""
    sizes = {}
    rows = conn.execute("SELECT id FROM accounts WHERE deleted_at IS NULL").fetchall()
    for (account_id,) in rows:
        with conn.transaction():
            set_tenant(conn, account_id)
            row = conn.execute(SIZE, {"account": account_id, "profile": profile}).fetchone()
        if row and row[0]:
            sizes[account_id] = (int(row[0]), int(row[1]))
    return sizes


def _build(
    conn: psycopg.Connection[tuple[Any, ...]], account_id: UUID, profile: str, dimensions: int
) -> None:
    conn.execute(
        sql.SQL(
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON embeddings"
            " USING hnsw ((embedding::vector({dims})) vector_cosine_ops)"
            " WHERE account_id = {account} AND profile = {profile}"
        ).format(
            name=sql.Identifier(index_name(account_id, profile)),
            dims=sql.Literal(dimensions),
            account=sql.Literal(str(account_id)),
            profile=sql.Literal(profile),
        )
    )


def _drop(conn: psycopg.Connection[tuple[Any, ...]], account_id: UUID, profile: str) -> None:
    conn.execute(
        sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {name}").format(
            name=sql.Identifier(index_name(account_id, profile))
        )
    )


def report(changes: list[Change]) -> None:
    for change in changes:
        print(
            f"{change.action} the index of account {change.account_id}"
            f" ({change.vectors} vectors) in {change.seconds:.1f} s",
            file=sys.stderr,
        )
