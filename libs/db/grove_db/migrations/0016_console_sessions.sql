-- The owner website's sessions (grove-console), held server-side: the browser has only a
-- random cookie; the row is keyed by its SHA-256 and holds the owner's tokens sealed
-- (AES-GCM) with a key derived from GROVE_SECRET_KEY, so a database dump opens nothing.
-- No role reads the table: grove-console's role may only call the three functions below.
CREATE TABLE console_sessions (
    id_hash    bytea PRIMARY KEY CHECK (octet_length(id_hash) = 32),
    sealed     bytea NOT NULL CHECK (octet_length(sealed) <= 16384),
    expires_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);
ALTER TABLE console_sessions ENABLE ROW LEVEL SECURITY;  -- and no policy: nobody but the owner
REVOKE ALL ON console_sessions FROM PUBLIC;

-- Store (or replace) a session; sweeps up to 100 expired ones so the table stays small.
CREATE FUNCTION grove_console_session_put(p_id bytea, p_sealed bytea, p_expires timestamptz)
RETURNS void LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
    DELETE FROM console_sessions WHERE id_hash IN (
        SELECT id_hash FROM console_sessions WHERE expires_at < now() LIMIT 100);
    INSERT INTO console_sessions (id_hash, sealed, expires_at) VALUES (p_id, p_sealed, p_expires)
    ON CONFLICT (id_hash) DO UPDATE SET sealed = EXCLUDED.sealed, expires_at = EXCLUDED.expires_at;
$$;

-- A live session's sealed data, or NULL.
CREATE FUNCTION grove_console_session_get(p_id bytea)
RETURNS bytea LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
    SELECT sealed FROM console_sessions WHERE id_hash = p_id AND expires_at > now();
$$;

-- Sign-out: the session is gone at once.
CREATE FUNCTION grove_console_session_drop(p_id bytea)
RETURNS void LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
    DELETE FROM console_sessions WHERE id_hash = p_id;
$$;

REVOKE EXECUTE ON FUNCTION grove_console_session_put(bytea, bytea, timestamptz),
    grove_console_session_get(bytea), grove_console_session_drop(bytea) FROM PUBLIC;
