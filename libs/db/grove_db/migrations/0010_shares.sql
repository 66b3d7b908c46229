-- Public share links: read-only capability links to one note or one notebook.
--
-- The link's token is never stored, only its keyed hash. grove-share connects as its own
-- role, which holds no table privileges at all: it can only call the SECURITY DEFINER
-- functions below, each keyed by a token hash, with a fixed search_path and EXECUTE
-- revoked from PUBLIC (granted to the share role by `grove migrate`, see share_grants.sql).

CREATE TABLE shares (
    account_id   uuid NOT NULL REFERENCES accounts (id),
    id           uuid NOT NULL,
    token_hash   bytea NOT NULL UNIQUE,
    target_type  text NOT NULL CHECK (target_type IN ('note', 'notebook')),
    memory_id    uuid,
    project_id   uuid,
    title        text CHECK (char_length(title) BETWEEN 1 AND 200),
    indexable    boolean NOT NULL DEFAULT false,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz,
    revoked_at   timestamptz,
    PRIMARY KEY (id),
    UNIQUE (account_id, id),
    FOREIGN KEY (account_id, memory_id) REFERENCES memories (account_id, id),
    FOREIGN KEY (account_id, project_id) REFERENCES projects (account_id, id),
    CHECK ((target_type = 'note') = (memory_id IS NOT NULL)),
    CHECK ((target_type = 'notebook') = (project_id IS NOT NULL))
);
CREATE INDEX shares_account_created ON shares (account_id, created_at DESC, id DESC);
-- A shared notebook's direct members, newest first.
CREATE INDEX memories_project_created ON memories (project_id, created_at DESC, id DESC)
    WHERE deleted_at IS NULL AND archived_at IS NULL;

-- The token hash being resolved: lets a lookup find exactly one share before it knows
-- the account, and nothing else (like grove_key_lookup for API keys).
CREATE FUNCTION grove_share_lookup() RETURNS bytea
    LANGUAGE sql STABLE
    AS $$ SELECT decode(nullif(current_setting('grove.share_lookup', true), ''), 'hex') $$;

ALTER TABLE shares ENABLE ROW LEVEL SECURITY;
ALTER TABLE shares FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant ON shares
    USING (account_id = grove_current_account() OR token_hash = grove_share_lookup())
    WITH CHECK (account_id = grove_current_account());

-- The live share behind a token hash, or no row: unknown, revoked, expired, a deleted
-- account, or a target that is deleted, archived or expired. Internal: it sets the tenant
-- for the rest of the calling function, which clears it again before returning.
CREATE FUNCTION grove_share_live(p_token_hash bytea)
    RETURNS TABLE (share_id uuid, account_id uuid, target_type text, memory_id uuid,
                   project_id uuid, title text, indexable boolean)
    LANGUAGE plpgsql
    SET search_path = public, pg_temp
    AS $$
DECLARE
    found_account uuid;
BEGIN
    PERFORM set_config('grove.account_id', '', true);
    PERFORM set_config('grove.share_lookup', encode(p_token_hash, 'hex'), true);
    SELECT s.account_id INTO found_account FROM shares s
    WHERE s.token_hash = p_token_hash AND s.revoked_at IS NULL
      AND (s.expires_at IS NULL OR s.expires_at > statement_timestamp());
    PERFORM set_config('grove.share_lookup', '', true);
    IF found_account IS NULL THEN
        RETURN;
    END IF;
    PERFORM set_config('grove.account_id', found_account::text, true);
    RETURN QUERY
        SELECT s.id, s.account_id, s.target_type, s.memory_id, s.project_id, s.title, s.indexable
        FROM shares s
        JOIN accounts a ON a.id = s.account_id AND a.deleted_at IS NULL
        LEFT JOIN memories m ON m.id = s.memory_id
        LEFT JOIN projects p ON p.id = s.project_id
        WHERE s.token_hash = p_token_hash
          AND CASE s.target_type
                WHEN 'note' THEN m.deleted_at IS NULL AND m.archived_at IS NULL
                                 AND (m.expires_at IS NULL
                                      OR m.expires_at > statement_timestamp())
                ELSE p.deleted_at IS NULL AND p.archived_at IS NULL
              END;
END $$;

-- What a reader may see of a live share: its type, title (the share's own, else the
-- notebook's name), whether search engines may index it, and when it last changed.
-- Nothing about the account. The share is resolved in its own statement first, so the
-- tenant is set before any note is read.
CREATE FUNCTION grove_public_share(p_token_hash bytea)
    RETURNS TABLE (share_id uuid, target_type text, title text, indexable boolean,
                   updated_at timestamptz)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = public, pg_temp
    AS $$
DECLARE
    l record;
BEGIN
    SELECT * INTO l FROM grove_share_live(p_token_hash);
    IF FOUND THEN
        RETURN QUERY
            SELECT l.share_id, l.target_type, coalesce(l.title, p.name), l.indexable,
                   CASE l.target_type
                       WHEN 'note' THEN m.updated_at
                       ELSE greatest(p.updated_at,
                                     (SELECT max(n.updated_at) FROM memories n
                                      WHERE n.project_id = l.project_id
                                        AND n.deleted_at IS NULL AND n.archived_at IS NULL
                                        AND (n.expires_at IS NULL
                                             OR n.expires_at > statement_timestamp())))
                   END
            FROM (SELECT 1) AS one
            LEFT JOIN memories m ON m.id = l.memory_id
            LEFT JOIN projects p ON p.id = l.project_id;
    END IF;
    PERFORM set_config('grove.account_id', '', true);
END $$;

-- The notes a live share shows: the one note of a note share (grove_share_live checked
-- it is live); the live direct members of a notebook share, newest first, after the
-- keyset (p_before_created, p_before_id) when given, at most 51 (sub-notebooks' notes
-- are not included).
CREATE FUNCTION grove_public_share_notes(
        p_token_hash bytea, p_before_created timestamptz, p_before_id uuid, p_limit integer)
    RETURNS TABLE (id uuid, kind text, content text, created_at timestamptz,
                   updated_at timestamptz)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = public, pg_temp
    AS $$
DECLARE
    l record;
BEGIN
    SELECT * INTO l FROM grove_share_live(p_token_hash);
    IF FOUND AND l.target_type = 'note' THEN
        RETURN QUERY
            SELECT m.id, m.kind, m.content, m.created_at, m.updated_at
            FROM memories m
            WHERE m.id = l.memory_id AND p_before_created IS NULL;
    ELSIF FOUND THEN
        -- Live direct members, by the memories_project_created index.
        RETURN QUERY
            SELECT m.id, m.kind, m.content, m.created_at, m.updated_at
            FROM memories m
            WHERE m.project_id = l.project_id
              AND m.deleted_at IS NULL AND m.archived_at IS NULL
              AND (m.expires_at IS NULL OR m.expires_at > statement_timestamp())
              AND (p_before_created IS NULL
                   OR (m.created_at, m.id) < (p_before_created, p_before_id))
            ORDER BY m.created_at DESC, m.id DESC
            LIMIT least(greatest(p_limit, 1), 51);
    END IF;
    PERFORM set_config('grove.account_id', '', true);
END $$;

-- Rate-limit windows (the statement grove_db.ratelimit runs), and the share service's
-- narrow door to them: its buckets are always prefixed "share:".
CREATE FUNCTION grove_rate_hit(p_bucket text, p_window integer)
    RETURNS TABLE (hits integer, remaining double precision)
    LANGUAGE sql
    SET search_path = public, pg_temp
    AS $$
    INSERT INTO rate_limits AS r (bucket, window_start, hits)
    VALUES (p_bucket,
            to_timestamp(floor(extract(epoch FROM clock_timestamp()) / p_window) * p_window),
            1)
    ON CONFLICT (bucket) DO UPDATE SET
        hits = CASE WHEN r.window_start = EXCLUDED.window_start THEN r.hits + 1 ELSE 1 END,
        window_start = EXCLUDED.window_start
    RETURNING r.hits,
        extract(epoch FROM r.window_start + make_interval(secs => p_window)
                           - clock_timestamp())::double precision
$$;

CREATE FUNCTION grove_public_rate_hit(p_key text, p_window integer)
    RETURNS TABLE (hits integer, remaining double precision)
    LANGUAGE sql SECURITY DEFINER
    SET search_path = public, pg_temp
    AS $$ SELECT * FROM grove_rate_hit('share:' || left(p_key, 200), p_window) $$;

REVOKE ALL ON FUNCTION grove_share_live(bytea) FROM PUBLIC;
REVOKE ALL ON FUNCTION grove_public_share(bytea) FROM PUBLIC;
REVOKE ALL ON FUNCTION grove_public_share_notes(bytea, timestamptz, uuid, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION grove_public_rate_hit(text, integer) FROM PUBLIC;
