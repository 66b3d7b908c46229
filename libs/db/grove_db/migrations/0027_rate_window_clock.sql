-- Rate-limit windows measured against an instant the caller may give (p_now; the
-- database clock when NULL), so a test can count requests at either side of a window's
-- end without waiting for the minute to turn (grove_db.ratelimit.RateLimit.hit's ``now``).
-- grove-share's door (grove_public_rate_hit) keeps the database clock: its role cannot
-- move a window.

DROP FUNCTION grove_rate_hit(text, integer);

CREATE FUNCTION grove_rate_hit(p_bucket text, p_window integer, p_now timestamptz DEFAULT NULL)
    RETURNS TABLE (hits integer, remaining double precision)
    LANGUAGE sql
    SET search_path = public, pg_temp
    AS $$
    INSERT INTO rate_limits AS r (bucket, window_start, hits)
    VALUES (p_bucket,
            to_timestamp(floor(extract(epoch FROM coalesce(p_now, clock_timestamp()))
                               / p_window) * p_window),
            1)
    ON CONFLICT (bucket) DO UPDATE SET
        hits = CASE WHEN r.window_start = EXCLUDED.window_start THEN r.hits + 1 ELSE 1 END,
        window_start = EXCLUDED.window_start
    RETURNING r.hits,
        extract(epoch FROM r.window_start + make_interval(secs => p_window)
                           - coalesce(p_now, clock_timestamp()))::double precision
$$;
