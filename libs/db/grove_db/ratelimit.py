"""Per-credential rate limits whose counters live in PostgreSQL, shared by every replica.

A fixed window per bucket: the first request of a window resets the count, every
request adds one, and a request over the limit learns how long until the window ends.
Within any one window a bucket gets at most ``limit`` requests across all replicas;
across a window boundary a burst can reach twice that.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from psycopg_pool import ConnectionPool

from grove_db.pool import transaction

HIT = """
    INSERT INTO rate_limits AS r (bucket, window_start, hits)
    VALUES (%(bucket)s,
            to_timestamp(floor(extract(epoch FROM clock_timestamp()) / %(window)s) * %(window)s),
            1)
    ON CONFLICT (bucket) DO UPDATE SET
        hits = CASE WHEN r.window_start = EXCLUDED.window_start THEN r.hits + 1 ELSE 1 END,
        window_start = EXCLUDED.window_start
    RETURNING hits,
        extract(epoch FROM window_start + make_interval(secs => %(window)s)
                           - clock_timestamp()) AS remaining
"""


@dataclass(frozen=True)
class RateLimit:
    """At most ``limit`` requests per ``window_seconds`` for each bucket (0: no limit)."""

    limit: int
    window_seconds: int = 60

    def hit(self, pool: ConnectionPool, bucket: str) -> int | None:
        """Count one request for ``bucket``: None if allowed, else seconds to wait (≥ 1)."""
        if self.limit <= 0:
            return None
        with transaction(pool) as conn:
            row = conn.execute(HIT, {"bucket": bucket, "window": self.window_seconds}).fetchone()
        assert row is not None  # an upsert with RETURNING always yields its row
        if row["hits"] <= self.limit:
            return None
        return max(1, math.ceil(float(row["remaining"])))

    def refusal(self, wait: int) -> str:
        """What a refused caller is told (every service says the same)."""
        return f"at most {self.limit} requests per minute for this credential; retry in {wait} s"
