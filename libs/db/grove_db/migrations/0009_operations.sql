-- Operations: per-credential rate-limit windows shared by every replica, and an index
-- that keeps the worker's queue gauges cheap as finished jobs accumulate.

-- Not tenant data: one row per credential bucket ("api:<credential id>"), rewritten in
-- place. UNLOGGED because losing the counters in a crash only resets the windows.
CREATE UNLOGGED TABLE rate_limits (
    bucket       text PRIMARY KEY,
    window_start timestamptz NOT NULL,
    hits         integer NOT NULL
);

CREATE INDEX jobs_failed ON jobs (kind) WHERE status = 'failed';
