"""Per-credential and per-account rate limits whose counters live in PostgreSQL, shared by
every replica.

A fixed window per bucket: the first request of a window resets the count, every
request adds one, and a request over the limit learns how long until the window ends.
Within any one window a bucket gets at most ``limit`` requests across all replicas;
across a window boundary a burst can reach twice that.

Windows are measured against the database's clock, or against ``now`` where a caller
gives one (tests: the requests either side of a window's end, without waiting for it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from psycopg_pool import ConnectionPool

from grove_db.pool import transaction

#: The window arithmetic lives in SQL (migrations 0010 and 0027): ``grove_rate_hit`` for the
#: runtime role, ``grove_public_rate_hit`` (buckets prefixed ``share:``) for grove-share's
#: role, which always counts by the database's clock.
FUNCTIONS = {
    "runtime": "SELECT hits, remaining FROM grove_rate_hit(%(bucket)s, %(window)s, %(now)s)",
    "public": "SELECT hits, remaining FROM grove_public_rate_hit(%(bucket)s, %(window)s)",
}


@dataclass(frozen=True)
class RateLimit:
    """At most ``limit`` requests per ``window_seconds`` for each bucket (0: no limit)."""

    limit: int
    window_seconds: int = 60
    door: Literal["runtime", "public"] = "runtime"

    def hit(self, pool: ConnectionPool, bucket: str, now: datetime | None = None) -> int | None:
        """Count one request for ``bucket``: None if allowed, else seconds to wait (≥ 1).

        ``now`` is the instant the request counts at (default: the database's clock);
        the public door always uses the database's clock.
        """
        if self.limit <= 0:
            return None
        params = {"bucket": bucket, "window": self.window_seconds, "now": now}
        with transaction(pool) as conn:
            found = conn.execute(FUNCTIONS[self.door], params).fetchone()
        assert found is not None  # an upsert with RETURNING always yields its row
        return self.wait(found)

    def wait(self, counted: dict[str, Any]) -> int | None:
        """A window's row after one more hit: None if allowed, else seconds to wait (≥ 1)."""
        if counted["hits"] <= self.limit:
            return None
        return max(1, math.ceil(float(counted["remaining"])))

    def refusal(self, wait: int, per: str = "this credential") -> str:
        """What a refused caller is told (every service says the same)."""
        return f"at most {self.limit} requests per minute for {per}; retry in {wait} s"


def request_buckets(
    service: str,
    credential_id: object,
    account_id: object,
    credential: RateLimit,
    account: RateLimit,
) -> list[tuple[RateLimit, str, str]]:
    """The buckets one authenticated request counts in: its credential's for this service,
    and its account's, shared by every credential and by api and mcp (so minting keys does
    not multiply the limit)."""
    return [
        (credential, f"{service}:{credential_id}", "this credential"),
        (account, f"account:{account_id}", "this account"),
    ]


def hit_all(
    pool: ConnectionPool, checks: list[tuple[RateLimit, str, str]], now: datetime | None = None
) -> tuple[str, int] | None:
    """Count one request in each ``(limit, bucket, per)`` at once (one statement, runtime
    role); the first refusal as ``(message, seconds to wait)``, or None if all allow it.
    ``now`` is the instant counted at (default: the database's clock)."""
    for (limit, _, per), wait in zip(checks, hit_each(pool, checks, now), strict=True):
        if wait is not None:
            return limit.refusal(wait, per), wait
    return None


def hit_each(
    pool: ConnectionPool, checks: list[tuple[RateLimit, str, str]], now: datetime | None = None
) -> list[int | None]:
    """``hit_all``, answering for every check: None if allowed, else seconds to wait."""
    counted = [(i, limit, bucket) for i, (limit, bucket, _) in enumerate(checks) if limit.limit > 0]
    if not counted:
        return [None] * len(checks)
    statement = " UNION ALL ".join(
        f"SELECT {i} AS i, hits, remaining FROM grove_rate_hit(%s, %s, %s)" for i, _, _ in counted
    )
    values = [v for _, limit, bucket in counted for v in (bucket, limit.window_seconds, now)]
    with transaction(pool) as conn:
        rows = {row["i"]: row for row in conn.execute(statement, values).fetchall()}
    waits: list[int | None] = [None] * len(checks)
    for i, limit, _ in counted:
        waits[i] = limit.wait(rows[i])
    return waits


#: Windows that ended this long ago are deleted by ``prune`` (every window is a minute).
PRUNE_AFTER_SECONDS = 600
PRUNE_BATCH = 10_000


def prune(pool: ConnectionPool, older_than_seconds: int = PRUNE_AFTER_SECONDS) -> int:
    """Delete the buckets whose window started over ``older_than_seconds`` ago (a bucket
    seen again starts afresh anyway), in batches; how many went."""
    deleted = 0
    while True:
        with transaction(pool) as conn:
            gone = conn.execute(
                "DELETE FROM rate_limits WHERE bucket IN (SELECT bucket FROM rate_limits"
                " WHERE window_start < clock_timestamp() - make_interval(secs => %s)"
                " LIMIT %s FOR UPDATE SKIP LOCKED)",
                (older_than_seconds, PRUNE_BATCH),
            ).rowcount
        deleted += gone
        if gone < PRUNE_BATCH:
            return deleted
