--
-- PostgreSQL database dump
--

\restrict grove

-- Dumped from database version 18.6
-- Dumped by pg_dump version 18.6

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET transaction_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: public; Type: SCHEMA; Schema: -; Owner: -
--

-- *not* creating schema, since initdb creates it


--
-- Name: vector; Type: EXTENSION; Schema: -; Owner: -
--

CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public;


--
-- Name: EXTENSION vector; Type: COMMENT; Schema: -; Owner: -
--

COMMENT ON EXTENSION vector IS 'vector data type and ivfflat and hnsw access methods';


--
-- Name: grove_add_usage(uuid, text, bigint, bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.grove_add_usage(p_account uuid, p_kind text, p_items bigint, p_bytes bigint) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
DECLARE
    used record;
    own record;
    item_limit bigint;
    byte_limit bigint;
BEGIN
    INSERT INTO account_usage AS u (account_id, kind, items, bytes)
        VALUES (p_account, p_kind, p_items, p_bytes)
        ON CONFLICT (account_id, kind)
        DO UPDATE SET items = u.items + excluded.items, bytes = u.bytes + excluded.bytes
        RETURNING u.items, u.bytes INTO used;
    IF p_items <= 0 AND p_bytes <= 0 THEN
        RETURN;
    END IF;
    SELECT q.items, q.bytes INTO own FROM account_quotas q
        WHERE q.account_id = p_account AND q.kind = p_kind;
    item_limit := coalesce(own.items,
        nullif(current_setting('grove.quota_' || p_kind, true), '')::bigint, 0);
    byte_limit := coalesce(own.bytes, CASE p_kind
        WHEN 'notes' THEN nullif(current_setting('grove.quota_note_bytes', true), '')::bigint
        WHEN 'files' THEN nullif(current_setting('grove.quota_file_bytes', true), '')::bigint
        END, 0);
    IF p_items > 0 AND item_limit > 0 AND used.items > item_limit THEN
        RAISE EXCEPTION USING ERRCODE = 'GQ001', MESSAGE = format(
            'this account may hold at most %s %s; remove some first', item_limit,
            CASE p_kind WHEN 'shares' THEN 'unrevoked share links'
                        WHEN 'files' THEN 'stored file versions' ELSE p_kind END);
    END IF;
    IF p_bytes > 0 AND byte_limit > 0 AND used.bytes > byte_limit THEN
        RAISE EXCEPTION USING ERRCODE = 'GQ001', MESSAGE = CASE p_kind
            WHEN 'files' THEN format('this account may hold at most %s bytes of files (every'
                ' version counts until it is purged); delete some first', byte_limit)
            ELSE format('this account may hold at most %s bytes of notes; remove or shorten'
                ' some first', byte_limit) END;
    END IF;
END $$;


--
-- Name: grove_console_session_drop(bytea); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.grove_console_session_drop(p_id bytea) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
    DELETE FROM console_sessions WHERE id_hash = p_id;
$$;


--
-- Name: grove_console_session_get(bytea); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.grove_console_session_get(p_id bytea) RETURNS bytea
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
    SELECT sealed FROM console_sessions WHERE id_hash = p_id AND expires_at > now();
$$;


--
-- Name: grove_console_session_put(bytea, bytea, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.grove_console_session_put(p_id bytea, p_sealed bytea, p_expires timestamp with time zone) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
    DELETE FROM console_sessions WHERE id_hash IN (
        SELECT id_hash FROM console_sessions WHERE expires_at < now() LIMIT 100);
    INSERT INTO console_sessions (id_hash, sealed, expires_at) VALUES (p_id, p_sealed, p_expires)
    ON CONFLICT (id_hash) DO UPDATE SET sealed = EXCLUDED.sealed, expires_at = EXCLUDED.expires_at;
$$;


--
-- Name: grove_current_account(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.grove_current_account() RETURNS uuid
    LANGUAGE sql STABLE
    AS $$ SELECT nullif(current_setting('grove.account_id', true), '')::uuid $$;


--
-- Name: grove_current_org(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.grove_current_org() RETURNS uuid
    LANGUAGE sql STABLE
    AS $$ SELECT nullif(current_setting('grove.org_id', true), '')::uuid $$;


--
-- Name: grove_current_project(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.grove_current_project() RETURNS uuid
    LANGUAGE sql STABLE
    AS $$ SELECT nullif(current_setting('grove.project_id', true), '')::uuid $$;


--
-- Name: grove_found_org(uuid, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.grove_found_org(p_org uuid, p_name text) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
        INSERT INTO orgs (id, name, created_by) VALUES (p_org, p_name, grove_current_account());
        INSERT INTO org_members (org_id, account_id, role)
            VALUES (p_org, grove_current_account(), 'owner');
    $$;


--
-- Name: grove_keep_note_bands(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.grove_keep_note_bands() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
BEGIN
    IF OLD.deleted_at IS NULL AND OLD.file_id IS NULL THEN
        DELETE FROM note_bands b WHERE b.memory_id = OLD.id AND b.account_id = OLD.account_id;
    END IF;
    IF NEW.deleted_at IS NULL AND NEW.file_id IS NULL THEN
        INSERT INTO note_bands (account_id, band, memory_id, project_id)
            SELECT DISTINCT NEW.account_id, u.band, NEW.id, NEW.project_id
            FROM unnest(grove_note_bands(NEW.account_id, NEW.project_id,
                                         tsvector_to_array(NEW.content_tsv))) AS u (band);
    END IF;
    RETURN NULL;
END $$;


--
-- Name: grove_key_lookup(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.grove_key_lookup() RETURNS bytea
    LANGUAGE sql STABLE
    AS $$ SELECT decode(nullif(current_setting('grove.key_lookup', true), ''), 'hex') $$;


--
-- Name: grove_note_bands(uuid, uuid, text[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.grove_note_bands(account uuid, project uuid, lexemes text[]) RETURNS bigint[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog'
    AS $$
    WITH low AS (
        SELECT l.word FROM unnest(lexemes) AS l (word)
        ORDER BY hashtextextended(l.word, 0), l.word LIMIT 7
    )
    SELECT coalesce(array_agg(hashtextextended(a.word || ' ' || b.word,
                                               uuid_hash_extended(coalesce(project, account), 0))),
                    '{}')
    FROM low AS a JOIN low AS b ON a.word < b.word
$$;


--
-- Name: grove_note_bands_inserted(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.grove_note_bands_inserted() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
DECLARE
    accounts uuid[];
    bands bigint[];
    notes uuid[];
    notebooks uuid[];
BEGIN
    SELECT array_agg(d.account_id), array_agg(d.band), array_agg(d.id), array_agg(d.project_id)
    INTO accounts, bands, notes, notebooks
    FROM (SELECT DISTINCT n.account_id, u.band, n.id, n.project_id
          FROM new_rows n
          CROSS JOIN LATERAL unnest(grove_note_bands(n.account_id, n.project_id,
                                                     tsvector_to_array(n.content_tsv))) AS u (band)
          WHERE n.deleted_at IS NULL AND n.file_id IS NULL) AS d;
    INSERT INTO note_bands (account_id, band, memory_id, project_id)
        SELECT * FROM unnest(accounts, bands, notes, notebooks);
    RETURN NULL;
END $$;


--
-- Name: grove_note_words(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.grove_note_words() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
DECLARE
    before text[] := '{}';
BEGIN
    IF OLD.deleted_at IS NULL THEN
        before := tsvector_to_array(OLD.content_tsv);
    END IF;
    DELETE FROM note_words w
        WHERE w.account_id = NEW.account_id AND w.memory_id = NEW.id
          AND w.word = ANY(before)
          AND (NEW.deleted_at IS NOT NULL OR NOT w.word = ANY(tsvector_to_array(NEW.content_tsv)));
    IF NEW.deleted_at IS NULL THEN
        INSERT INTO note_words AS w (account_id, word, memory_id, tf, project_id)
            SELECT NEW.account_id, u.lexeme, NEW.id,
                   least(coalesce(array_length(u.positions, 1), 1), 32767), NEW.project_id
            FROM unnest(NEW.content_tsv) AS u
        ON CONFLICT (account_id, word, memory_id) DO UPDATE
            SET tf = excluded.tf, project_id = excluded.project_id
            WHERE w.tf IS DISTINCT FROM excluded.tf
               OR w.project_id IS DISTINCT FROM excluded.project_id;
    END IF;
    RETURN NULL;
END $$;


--
-- Name: grove_note_words_inserted(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.grove_note_words_inserted() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
DECLARE
    accounts uuid[];
    words text[];
    notes uuid[];
    frequencies integer[];
    notebooks uuid[];
BEGIN
    SELECT array_agg(n.account_id), array_agg(u.lexeme), array_agg(n.id),
           array_agg(least(coalesce(array_length(u.positions, 1), 1), 32767)),
           array_agg(n.project_id)
    INTO accounts, words, notes, frequencies, notebooks
    FROM new_rows n CROSS JOIN LATERAL unnest(n.content_tsv) AS u
    WHERE n.deleted_at IS NULL;
    INSERT INTO note_words (account_id, word, memory_id, tf, project_id)
        SELECT * FROM unnest(accounts, words, notes, frequencies, notebooks);
    RETURN NULL;
END $$;


--
-- Name: grove_org_role(uuid); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.grove_org_role(org uuid) RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
        SELECT role FROM org_members
        WHERE org_id = org AND account_id = grove_current_account()
    $$;


--
-- Name: grove_owns_schema(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.grove_owns_schema() RETURNS boolean
    LANGUAGE sql STABLE
    AS $$ SELECT pg_has_role(current_user,
                             (SELECT relowner FROM pg_class WHERE oid = 'accounts'::regclass),
                             'MEMBER') $$;


--
-- Name: grove_project_role(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.grove_project_role() RETURNS text
    LANGUAGE sql STABLE
    AS $$
        SELECT pm.role FROM project_members pm
        JOIN org_projects p ON p.org_id = pm.org_id AND p.id = pm.project_id
        JOIN orgs o ON o.id = pm.org_id
        WHERE pm.org_id = grove_current_org() AND pm.project_id = grove_current_project()
          AND pm.account_id = grove_current_account()
          AND p.deleted_at IS NULL AND o.deleted_at IS NULL
    $$;


--
-- Name: grove_provision_owner(text, text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.grove_provision_owner(p_issuer text, p_subject text, p_name text) RETURNS uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_account uuid;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(p_issuer || '#' || p_subject, 15));
    IF EXISTS (SELECT 1 FROM identity_tombstones
               WHERE issuer = p_issuer AND subject = p_subject) THEN
        RETURN NULL;
    END IF;
    EXECUTE format('SET LOCAL grove.owner_issuer = %L', p_issuer);
    EXECUTE format('SET LOCAL grove.owner_subject = %L', p_subject);
    SELECT account_id INTO v_account FROM account_owners
        WHERE issuer = p_issuer AND subject = p_subject;
    IF NOT FOUND THEN
        v_account := gen_random_uuid();
        EXECUTE format('SET LOCAL grove.account_id = %L', v_account);
        INSERT INTO accounts (id, name) VALUES (v_account, p_name);
        INSERT INTO account_owners (account_id, issuer, subject)
            VALUES (v_account, p_issuer, p_subject);
    END IF;
    RETURN v_account;
END $$;


--
-- Name: grove_public_rate_hit(text, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.grove_public_rate_hit(p_key text, p_window integer) RETURNS TABLE(hits integer, remaining double precision)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$ SELECT * FROM grove_rate_hit('share:' || left(p_key, 200), p_window) $$;


--
-- Name: grove_public_share(bytea); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.grove_public_share(p_token_hash bytea) RETURNS TABLE(share_id uuid, target_type text, title text, indexable boolean, updated_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    l record;
    shelf record;
    changed timestamptz;
BEGIN
    SELECT * INTO l FROM grove_share_live(p_token_hash);
    IF FOUND AND l.target_type = 'note' THEN
        SELECT m.updated_at INTO changed FROM memories m
        WHERE m.account_id = l.account_id AND m.id = l.memory_id;
        RETURN QUERY SELECT l.share_id, l.target_type, l.title, l.indexable, changed;
    ELSIF FOUND THEN
        SELECT p.name, p.updated_at INTO shelf FROM projects p
        WHERE p.account_id = l.account_id AND p.id = l.project_id;
        SELECT max(n.updated_at) INTO changed FROM memories n
        WHERE n.account_id = l.account_id AND n.project_id = l.project_id
          AND n.file_id IS NULL AND n.deleted_at IS NULL AND n.archived_at IS NULL
          AND (n.expires_at IS NULL OR n.expires_at > statement_timestamp());
        RETURN QUERY SELECT l.share_id, l.target_type, coalesce(l.title, shelf.name),
                            l.indexable, greatest(shelf.updated_at, changed);
    END IF;
    SET LOCAL grove.account_id = '';
END $$;


--
-- Name: grove_public_share_notes(bytea, timestamp with time zone, uuid, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.grove_public_share_notes(p_token_hash bytea, p_before_created timestamp with time zone, p_before_id uuid, p_limit integer) RETURNS TABLE(id uuid, kind text, content text, created_at timestamp with time zone, updated_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    l record;
BEGIN
    SELECT * INTO l FROM grove_share_live(p_token_hash);
    IF FOUND AND l.target_type = 'note' THEN
        RETURN QUERY
            SELECT m.id, m.kind, m.content, m.created_at, m.updated_at
            FROM memories m
            WHERE m.account_id = l.account_id AND m.id = l.memory_id
              AND p_before_created IS NULL;
    ELSIF FOUND THEN
        -- Saved live direct members, by the memories_notebook_saved index.
        RETURN QUERY
            SELECT m.id, m.kind, m.content, m.created_at, m.updated_at
            FROM memories m
            WHERE m.account_id = l.account_id AND m.project_id = l.project_id
              AND m.file_id IS NULL
              AND m.deleted_at IS NULL AND m.archived_at IS NULL
              AND (m.expires_at IS NULL OR m.expires_at > statement_timestamp())
              AND (p_before_created IS NULL
                   OR (m.created_at, m.id) < (p_before_created, p_before_id))
            ORDER BY m.created_at DESC, m.id DESC
            LIMIT least(greatest(p_limit, 1), 51);
    END IF;
    SET LOCAL grove.account_id = '';
END $$;


--
-- Name: grove_queue_enrichment(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.grove_queue_enrichment() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
DECLARE
    unfiled boolean := false;
    notebooks uuid[] := '{}';
    queued integer := 0;
    more integer := 0;
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT coalesce(array_agg(DISTINCT project_id) FILTER (WHERE project_id IS NOT NULL), '{}'),
               coalesce(bool_or(project_id IS NULL AND deleted_at IS NULL AND archived_at IS NULL), false)
        INTO notebooks, unfiled
        FROM new_rows WHERE kind <> 'passage';
    ELSIF TG_OP = 'DELETE' THEN
        SELECT coalesce(array_agg(DISTINCT project_id) FILTER (WHERE project_id IS NOT NULL), '{}')
        INTO notebooks FROM old_rows WHERE kind <> 'passage';
    ELSE
        WITH changed AS (
            SELECT n.project_id AS now_in, o.project_id AS was_in,
                   n.project_id IS NULL AND n.deleted_at IS NULL AND n.archived_at IS NULL
                       AS left_unfiled
            FROM new_rows n JOIN old_rows o ON o.account_id = n.account_id AND o.id = n.id
            WHERE n.kind <> 'passage'
              AND (n.version <> o.version
                   OR n.project_id IS DISTINCT FROM o.project_id
                   OR n.archived_at IS DISTINCT FROM o.archived_at
                   OR n.deleted_at IS DISTINCT FROM o.deleted_at
                   OR n.swept_at IS DISTINCT FROM o.swept_at)
        )
        SELECT coalesce(array_agg(DISTINCT p) FILTER (WHERE p IS NOT NULL), '{}'),
               coalesce(bool_or(left_unfiled), false)
        INTO notebooks, unfiled
        FROM changed CROSS JOIN LATERAL (VALUES (now_in), (was_in)) AS v (p);
    END IF;
    IF cardinality(notebooks) = 0 AND NOT unfiled THEN
        RETURN NULL;
    END IF;
    INSERT INTO jobs (account_id, kind, payload, run_after)
    SELECT grove_current_account(), 'brief_notebook', jsonb_build_object('notebookId', p),
           now() + interval '2 seconds'
    FROM unnest(notebooks) AS p
    WHERE grove_current_account() IS NOT NULL
    ON CONFLICT (account_id, kind, (coalesce(payload->>'notebookId', '')))
        WHERE status = 'queued' AND kind IN ('classify_notes', 'brief_notebook')
    DO NOTHING;
    GET DIAGNOSTICS queued = ROW_COUNT;
    IF unfiled THEN
        INSERT INTO jobs (account_id, kind, run_after)
        SELECT grove_current_account(), 'classify_notes', now() + interval '2 seconds'
        WHERE grove_current_account() IS NOT NULL
        ON CONFLICT (account_id, kind, (coalesce(payload->>'notebookId', '')))
            WHERE status = 'queued' AND kind IN ('classify_notes', 'brief_notebook')
        DO NOTHING;
        GET DIAGNOSTICS more = ROW_COUNT;
    END IF;
    -- Wake the workers, who listen on the one server. On a Citus cluster this trigger
    -- runs on a worker node's shard, where nobody listens and a NOTIFY would forbid the
    -- two-phase commit a save spanning nodes needs: the workers' poll finds the jobs
    -- (they run two seconds later anyway).
    IF queued + more > 0 AND to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
        PERFORM pg_notify('grove_jobs', '');
    END IF;
    RETURN NULL;
END $$;


--
-- Name: grove_rate_hit(text, integer, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.grove_rate_hit(p_bucket text, p_window integer, p_now timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS TABLE(hits integer, remaining double precision)
    LANGUAGE sql
    SET search_path TO 'public', 'pg_temp'
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


--
-- Name: grove_share_live(bytea); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.grove_share_live(p_token_hash bytea) RETURNS TABLE(share_id uuid, account_id uuid, target_type text, memory_id uuid, project_id uuid, title text, indexable boolean)
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    found_account uuid;
BEGIN
    SET LOCAL grove.account_id = '';
    EXECUTE format('SET LOCAL grove.share_lookup = %L', encode(p_token_hash, 'hex'));
    SELECT k.account_id INTO found_account FROM share_lookup k
    WHERE k.token_hash = p_token_hash;
    SET LOCAL grove.share_lookup = '';
    IF found_account IS NULL THEN
        RETURN;
    END IF;
    EXECUTE format('SET LOCAL grove.account_id = %L', found_account);
    RETURN QUERY
        SELECT s.id, s.account_id, s.target_type, s.memory_id, s.project_id, s.title, s.indexable
        FROM shares s
        JOIN accounts a ON a.id = s.account_id AND a.deleted_at IS NULL
        LEFT JOIN memories m ON m.account_id = found_account AND m.id = s.memory_id
        LEFT JOIN projects p ON p.account_id = found_account AND p.id = s.project_id
        WHERE s.account_id = found_account AND s.token_hash = p_token_hash
          AND s.revoked_at IS NULL
          AND (s.expires_at IS NULL OR s.expires_at > statement_timestamp())
          AND CASE s.target_type
                WHEN 'note' THEN m.file_id IS NULL
                                 AND m.deleted_at IS NULL AND m.archived_at IS NULL
                                 AND (m.expires_at IS NULL
                                      OR m.expires_at > statement_timestamp())
                ELSE p.deleted_at IS NULL AND p.archived_at IS NULL
              END;
END $$;


--
-- Name: grove_share_lookup(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.grove_share_lookup() RETURNS bytea
    LANGUAGE sql STABLE
    AS $$ SELECT decode(nullif(current_setting('grove.share_lookup', true), ''), 'hex') $$;


--
-- Name: grove_track_file_usage(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.grove_track_file_usage() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
DECLARE
    delta record;
BEGIN
    IF TG_OP = 'INSERT' THEN
        FOR delta IN SELECT account_id, count(*) FILTER (WHERE ordinal = 0) AS items,
                            sum(octet_length(data)) AS bytes
                     FROM new_rows GROUP BY account_id LOOP
            PERFORM grove_add_usage(delta.account_id, 'files', delta.items, delta.bytes);
        END LOOP;
    ELSE
        FOR delta IN SELECT account_id, count(*) FILTER (WHERE ordinal = 0) AS items,
                            sum(octet_length(data)) AS bytes
                     FROM old_rows GROUP BY account_id LOOP
            PERFORM grove_add_usage(delta.account_id, 'files', -delta.items, -delta.bytes);
        END LOOP;
    END IF;
    RETURN NULL;
END $$;


--
-- Name: grove_track_usage(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.grove_track_usage() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
DECLARE
    parts text[] := '{}';
    kind text := coalesce(TG_ARGV[3], quote_literal(TG_ARGV[0]));
    delta record;
BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        parts := parts || format('SELECT account_id, %s AS kind, 1 AS items, %s AS bytes'
                                 ' FROM new_rows WHERE %s', kind, TG_ARGV[2], TG_ARGV[1]);
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        parts := parts || format('SELECT account_id, %s, -1, -(%s) FROM old_rows WHERE %s',
                                 kind, TG_ARGV[2], TG_ARGV[1]);
    END IF;
    FOR delta IN EXECUTE
        'SELECT account_id, kind, sum(items)::bigint AS items, sum(bytes)::bigint AS bytes'
        || ' FROM (' || array_to_string(parts, ' UNION ALL ') || ') d GROUP BY account_id, kind'
    LOOP
        IF delta.items <> 0 OR delta.bytes <> 0 THEN
            PERFORM grove_add_usage(delta.account_id, delta.kind, delta.items, delta.bytes);
        END IF;
    END LOOP;
    RETURN NULL;
END $$;


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: account_enrichment; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.account_enrichment (
    account_id uuid NOT NULL,
    day date NOT NULL,
    used integer DEFAULT 0 NOT NULL,
    CONSTRAINT account_enrichment_used_check CHECK ((used >= 0))
);

ALTER TABLE ONLY public.account_enrichment FORCE ROW LEVEL SECURITY;


--
-- Name: account_owners; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.account_owners (
    account_id uuid NOT NULL,
    issuer text NOT NULL,
    subject text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT account_owners_issuer_check CHECK (((char_length(issuer) >= 1) AND (char_length(issuer) <= 500))),
    CONSTRAINT account_owners_subject_check CHECK (((char_length(subject) >= 1) AND (char_length(subject) <= 500)))
);

ALTER TABLE ONLY public.account_owners FORCE ROW LEVEL SECURITY;


--
-- Name: account_quotas; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.account_quotas (
    account_id uuid NOT NULL,
    kind text NOT NULL,
    items bigint,
    bytes bigint,
    CONSTRAINT account_quotas_bytes_check CHECK ((bytes >= 0)),
    CONSTRAINT account_quotas_items_check CHECK ((items >= 0)),
    CONSTRAINT account_quotas_kind_check CHECK ((kind = ANY (ARRAY['notes'::text, 'passages'::text, 'notebooks'::text, 'shares'::text, 'conversations'::text, 'files'::text])))
);

ALTER TABLE ONLY public.account_quotas FORCE ROW LEVEL SECURITY;


--
-- Name: account_usage; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.account_usage (
    account_id uuid NOT NULL,
    kind text NOT NULL,
    items bigint DEFAULT 0 NOT NULL,
    bytes bigint DEFAULT 0 NOT NULL,
    CONSTRAINT account_usage_kind_check CHECK ((kind = ANY (ARRAY['notes'::text, 'passages'::text, 'notebooks'::text, 'shares'::text, 'conversations'::text, 'files'::text])))
);

ALTER TABLE ONLY public.account_usage FORCE ROW LEVEL SECURITY;


--
-- Name: accounts; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.accounts (
    id uuid NOT NULL,
    name text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    deleted_at timestamp with time zone,
    automatic_capture_paused boolean DEFAULT false NOT NULL,
    CONSTRAINT accounts_name_check CHECK (((char_length(name) >= 1) AND (char_length(name) <= 200)))
);

ALTER TABLE ONLY public.accounts FORCE ROW LEVEL SECURITY;


--
-- Name: api_key_lookup; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.api_key_lookup (
    key_hash bytea NOT NULL,
    account_id uuid NOT NULL
);

ALTER TABLE ONLY public.api_key_lookup FORCE ROW LEVEL SECURITY;


--
-- Name: api_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.api_keys (
    account_id uuid NOT NULL,
    id uuid NOT NULL,
    connection_id uuid NOT NULL,
    prefix text NOT NULL,
    key_hash bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    revoked_at timestamp with time zone
);

ALTER TABLE ONLY public.api_keys FORCE ROW LEVEL SECURITY;


--
-- Name: connection_projects; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.connection_projects (
    account_id uuid NOT NULL,
    connection_id uuid NOT NULL,
    project_id uuid NOT NULL
);

ALTER TABLE ONLY public.connection_projects FORCE ROW LEVEL SECURITY;


--
-- Name: connections; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.connections (
    account_id uuid NOT NULL,
    id uuid NOT NULL,
    name text NOT NULL,
    personal boolean NOT NULL,
    all_projects boolean NOT NULL,
    can_read boolean NOT NULL,
    can_write boolean NOT NULL,
    can_delete boolean NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    revoked_at timestamp with time zone,
    last_contact_at timestamp with time zone,
    oauth_client_id text,
    oauth_subject text,
    approved_at timestamp with time zone,
    authorized_after timestamp with time zone,
    request_id uuid,
    request_expires_at timestamp with time zone,
    request jsonb,
    CONSTRAINT connections_name_check CHECK (((char_length(name) >= 1) AND (char_length(name) <= 200))),
    CONSTRAINT connections_oauth_client_id_check CHECK (((char_length(oauth_client_id) >= 1) AND (char_length(oauth_client_id) <= 300))),
    CONSTRAINT connections_request_check CHECK (((request IS NULL) OR (octet_length((request)::text) <= 4096)))
);

ALTER TABLE ONLY public.connections FORCE ROW LEVEL SECURITY;


--
-- Name: console_sessions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.console_sessions (
    id_hash bytea NOT NULL,
    sealed bytea NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT console_sessions_id_hash_check CHECK ((octet_length(id_hash) = 32)),
    CONSTRAINT console_sessions_sealed_check CHECK ((octet_length(sealed) <= 16384))
);


--
-- Name: conversation_turns; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.conversation_turns (
    account_id uuid NOT NULL,
    conversation_id uuid NOT NULL,
    id uuid NOT NULL,
    ordinal integer NOT NULL,
    query text NOT NULL,
    format text NOT NULL,
    context jsonb,
    request_hash text NOT NULL,
    status text NOT NULL,
    attempts integer DEFAULT 1 NOT NULL,
    lease_expires_at timestamp with time zone,
    outcome text,
    answer_text text,
    answer_format text,
    generator text,
    citations jsonb DEFAULT '[]'::jsonb NOT NULL,
    sources jsonb DEFAULT '[]'::jsonb NOT NULL,
    context_coverage jsonb,
    error text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    completed_at timestamp with time zone,
    CONSTRAINT conversation_turns_answer_format_check CHECK ((answer_format = ANY (ARRAY['plain'::text, 'markdown'::text]))),
    CONSTRAINT conversation_turns_check CHECK (((status = 'in_progress'::text) = (lease_expires_at IS NOT NULL))),
    CONSTRAINT conversation_turns_format_check CHECK ((format = ANY (ARRAY['plain'::text, 'markdown'::text]))),
    CONSTRAINT conversation_turns_ordinal_check CHECK (((ordinal >= 1) AND (ordinal <= 100))),
    CONSTRAINT conversation_turns_outcome_check CHECK ((outcome = ANY (ARRAY['answered'::text, 'no_evidence'::text, 'disabled'::text]))),
    CONSTRAINT conversation_turns_query_check CHECK (((char_length(query) >= 1) AND (char_length(query) <= 6000))),
    CONSTRAINT conversation_turns_status_check CHECK ((status = ANY (ARRAY['in_progress'::text, 'completed'::text, 'failed'::text])))
);

ALTER TABLE ONLY public.conversation_turns FORCE ROW LEVEL SECURITY;


--
-- Name: conversations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.conversations (
    account_id uuid NOT NULL,
    id uuid NOT NULL,
    request_hash text NOT NULL,
    all_scopes boolean NOT NULL,
    project_id uuid,
    include_personal boolean NOT NULL,
    title text,
    version integer DEFAULT 1 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    deleted_at timestamp with time zone,
    CONSTRAINT conversations_check CHECK (((NOT all_scopes) OR (project_id IS NULL))),
    CONSTRAINT conversations_title_check CHECK (((char_length(title) >= 1) AND (char_length(title) <= 200)))
);

ALTER TABLE ONLY public.conversations FORCE ROW LEVEL SECURITY;


--
-- Name: embeddings; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.embeddings (
    account_id uuid NOT NULL,
    memory_id uuid NOT NULL,
    version integer NOT NULL,
    profile text NOT NULL,
    dimensions integer NOT NULL,
    embedding public.vector NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT embeddings_check CHECK ((public.vector_dims(embedding) = dimensions)),
    CONSTRAINT embeddings_dimensions_check CHECK (((dimensions >= 1) AND (dimensions <= 16000))),
    CONSTRAINT embeddings_profile_check CHECK (((char_length(profile) >= 1) AND (char_length(profile) <= 50)))
);

ALTER TABLE ONLY public.embeddings FORCE ROW LEVEL SECURITY;


--
-- Name: file_chunks; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.file_chunks (
    account_id uuid NOT NULL,
    file_id uuid NOT NULL,
    version integer NOT NULL,
    ordinal integer NOT NULL,
    data bytea NOT NULL,
    CONSTRAINT file_chunks_data_check CHECK (((octet_length(data) >= 1) AND (octet_length(data) <= 262144))),
    CONSTRAINT file_chunks_ordinal_check CHECK ((ordinal >= 0)),
    CONSTRAINT file_chunks_version_check CHECK ((version >= 1))
);
ALTER TABLE ONLY public.file_chunks ALTER COLUMN data SET STORAGE EXTERNAL;

ALTER TABLE ONLY public.file_chunks FORCE ROW LEVEL SECURITY;


--
-- Name: files; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.files (
    account_id uuid NOT NULL,
    id uuid NOT NULL,
    project_id uuid,
    name text NOT NULL,
    media_type text NOT NULL,
    version integer DEFAULT 1 NOT NULL,
    size_bytes bigint NOT NULL,
    sha256 bytea NOT NULL,
    indexing text DEFAULT 'pending'::text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    archived_at timestamp with time zone,
    deleted_at timestamp with time zone,
    indexing_error text,
    passages integer DEFAULT 0 NOT NULL,
    CONSTRAINT files_indexing_check CHECK ((indexing = ANY (ARRAY['pending'::text, 'ready'::text, 'failed'::text, 'disabled'::text]))),
    CONSTRAINT files_indexing_error_check CHECK ((char_length(indexing_error) <= 500)),
    CONSTRAINT files_media_type_check CHECK (((char_length(media_type) >= 1) AND (char_length(media_type) <= 200))),
    CONSTRAINT files_name_check CHECK (((char_length(name) >= 1) AND (char_length(name) <= 255))),
    CONSTRAINT files_passages_check CHECK ((passages >= 0)),
    CONSTRAINT files_sha256_check CHECK ((octet_length(sha256) = 32)),
    CONSTRAINT files_size_bytes_check CHECK ((size_bytes >= 0)),
    CONSTRAINT files_version_check CHECK ((version >= 1))
);

ALTER TABLE ONLY public.files FORCE ROW LEVEL SECURITY;


--
-- Name: identity_tombstones; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.identity_tombstones (
    issuer text NOT NULL,
    subject text NOT NULL,
    deleted_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: imports; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.imports (
    account_id uuid NOT NULL,
    id uuid NOT NULL,
    state text NOT NULL,
    counts jsonb DEFAULT '{}'::jsonb NOT NULL,
    warnings jsonb DEFAULT '[]'::jsonb NOT NULL,
    error text,
    line integer,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT imports_state_check CHECK ((state = ANY (ARRAY['running'::text, 'done'::text, 'failed'::text])))
);

ALTER TABLE ONLY public.imports FORCE ROW LEVEL SECURITY;


--
-- Name: jobs; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.jobs (
    account_id uuid NOT NULL,
    id bigint NOT NULL,
    kind text NOT NULL,
    memory_id uuid,
    version integer,
    payload jsonb DEFAULT '{}'::jsonb NOT NULL,
    status text DEFAULT 'queued'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    run_after timestamp with time zone DEFAULT now() NOT NULL,
    lease_owner text,
    heartbeat_at timestamp with time zone,
    last_error text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    lease_expires_at timestamp with time zone,
    profile text,
    finished_at timestamp with time zone,
    CONSTRAINT jobs_status_check CHECK ((status = ANY (ARRAY['queued'::text, 'running'::text, 'done'::text, 'failed'::text])))
);

ALTER TABLE ONLY public.jobs FORCE ROW LEVEL SECURITY;


--
-- Name: jobs_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.jobs ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.jobs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: memories; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.memories (
    account_id uuid NOT NULL,
    id uuid NOT NULL,
    project_id uuid,
    kind text NOT NULL,
    content text NOT NULL,
    task_id text,
    capture text DEFAULT 'explicit'::text NOT NULL,
    source_agent text,
    source_ref text,
    retention_days integer,
    expires_at timestamp with time zone,
    archived_at timestamp with time zone,
    deleted_at timestamp with time zone,
    version integer DEFAULT 1 NOT NULL,
    indexing text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    content_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, content)) STORED,
    indexing_error text,
    swept_at timestamp with time zone,
    superseded_at timestamp with time zone,
    file_id uuid,
    file_version integer,
    file_span jsonb,
    saved_by text,
    connection_id uuid,
    CONSTRAINT memories_capture_check CHECK ((capture = ANY (ARRAY['explicit'::text, 'automatic'::text]))),
    CONSTRAINT memories_check CHECK (((kind <> 'handoff'::text) OR (task_id IS NOT NULL))),
    CONSTRAINT memories_content_check CHECK (((char_length(content) >= 1) AND (char_length(content) <= 6000))),
    CONSTRAINT memories_file_version_check CHECK ((file_version >= 1)),
    CONSTRAINT memories_indexing_check CHECK ((indexing = ANY (ARRAY['pending'::text, 'ready'::text, 'failed'::text, 'disabled'::text]))),
    CONSTRAINT memories_kind_check CHECK ((kind = ANY (ARRAY['preference'::text, 'fact'::text, 'decision'::text, 'solution'::text, 'handoff'::text, 'passage'::text]))),
    CONSTRAINT memories_passage_check CHECK ((((kind = 'passage'::text) = (file_id IS NOT NULL)) AND ((file_id IS NULL) = (file_version IS NULL)) AND ((file_id IS NULL) = (file_span IS NULL)))),
    CONSTRAINT memories_retention_days_check CHECK (((retention_days >= 1) AND (retention_days <= 365))),
    CONSTRAINT memories_saved_by_check CHECK ((saved_by = ANY (ARRAY['owner'::text, 'connection'::text]))),
    CONSTRAINT memories_saver_check CHECK (((NOT (saved_by IS DISTINCT FROM 'connection'::text)) = (connection_id IS NOT NULL))),
    CONSTRAINT memories_source_agent_check CHECK ((char_length(source_agent) <= 100)),
    CONSTRAINT memories_source_ref_check CHECK ((char_length(source_ref) <= 500)),
    CONSTRAINT memories_task_id_check CHECK (((char_length(task_id) >= 1) AND (char_length(task_id) <= 200)))
);

ALTER TABLE ONLY public.memories FORCE ROW LEVEL SECURITY;


--
-- Name: memory_revisions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.memory_revisions (
    account_id uuid NOT NULL,
    memory_id uuid NOT NULL,
    version integer NOT NULL,
    content text NOT NULL,
    kind text NOT NULL,
    project_id uuid,
    task_id text,
    capture text NOT NULL,
    source_agent text,
    source_ref text,
    retention_days integer,
    expires_at timestamp with time zone,
    operation_id uuid,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    saved_by text,
    connection_id uuid,
    CONSTRAINT memory_revisions_saved_by_check CHECK ((saved_by = ANY (ARRAY['owner'::text, 'connection'::text]))),
    CONSTRAINT memory_revisions_saver_check CHECK (((NOT (saved_by IS DISTINCT FROM 'connection'::text)) = (connection_id IS NOT NULL)))
);

ALTER TABLE ONLY public.memory_revisions FORCE ROW LEVEL SECURITY;


--
-- Name: note_bands; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.note_bands (
    account_id uuid NOT NULL,
    band bigint NOT NULL,
    memory_id uuid NOT NULL,
    project_id uuid
);

ALTER TABLE ONLY public.note_bands REPLICA IDENTITY FULL;

ALTER TABLE ONLY public.note_bands FORCE ROW LEVEL SECURITY;


--
-- Name: note_suggestions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.note_suggestions (
    account_id uuid NOT NULL,
    memory_id uuid NOT NULL,
    version integer NOT NULL,
    kind text,
    project_id uuid,
    confidence real NOT NULL,
    evidence jsonb DEFAULT '[]'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT note_suggestions_confidence_check CHECK (((confidence >= (0)::double precision) AND (confidence <= (1)::double precision))),
    CONSTRAINT note_suggestions_evidence_check CHECK ((jsonb_typeof(evidence) = 'array'::text)),
    CONSTRAINT note_suggestions_kind_check CHECK ((kind = ANY (ARRAY['preference'::text, 'fact'::text, 'decision'::text, 'solution'::text, 'handoff'::text]))),
    CONSTRAINT note_suggestions_version_check CHECK ((version >= 1))
);

ALTER TABLE ONLY public.note_suggestions FORCE ROW LEVEL SECURITY;


--
-- Name: note_words; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.note_words (
    account_id uuid NOT NULL,
    word text NOT NULL,
    memory_id uuid NOT NULL,
    tf smallint DEFAULT 1 NOT NULL,
    project_id uuid
);

ALTER TABLE ONLY public.note_words FORCE ROW LEVEL SECURITY;


--
-- Name: notebook_briefs; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.notebook_briefs (
    account_id uuid NOT NULL,
    project_id uuid NOT NULL,
    fingerprint text NOT NULL,
    notes integer NOT NULL,
    text text NOT NULL,
    citations jsonb NOT NULL,
    generator text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT notebook_briefs_citations_check CHECK ((jsonb_typeof(citations) = 'array'::text)),
    CONSTRAINT notebook_briefs_generator_check CHECK (((char_length(generator) >= 1) AND (char_length(generator) <= 50))),
    CONSTRAINT notebook_briefs_notes_check CHECK ((notes >= 0)),
    CONSTRAINT notebook_briefs_text_check CHECK ((char_length(text) <= 4000))
);

ALTER TABLE ONLY public.notebook_briefs FORCE ROW LEVEL SECURITY;


--
-- Name: operation_tombstones; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.operation_tombstones (
    id uuid NOT NULL,
    arguments_hash text NOT NULL,
    deleted_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: operations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.operations (
    account_id uuid NOT NULL,
    id uuid NOT NULL,
    name text NOT NULL,
    request_hash text NOT NULL,
    memory_id uuid,
    status integer,
    response jsonb,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    arguments_hash text
);

ALTER TABLE ONLY public.operations FORCE ROW LEVEL SECURITY;


--
-- Name: org_members; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.org_members (
    org_id uuid NOT NULL,
    account_id uuid NOT NULL,
    role text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT org_members_role_check CHECK ((role = ANY (ARRAY['owner'::text, 'member'::text])))
);


--
-- Name: org_projects; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.org_projects (
    org_id uuid NOT NULL,
    id uuid NOT NULL,
    name text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    deleted_at timestamp with time zone,
    CONSTRAINT org_projects_name_check CHECK (((char_length(name) >= 1) AND (char_length(name) <= 200)))
);

ALTER TABLE ONLY public.org_projects FORCE ROW LEVEL SECURITY;


--
-- Name: orgs; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.orgs (
    id uuid NOT NULL,
    name text NOT NULL,
    project_memory_enabled boolean DEFAULT true NOT NULL,
    created_by uuid NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    deleted_at timestamp with time zone,
    CONSTRAINT orgs_name_check CHECK (((char_length(name) >= 1) AND (char_length(name) <= 200)))
);

ALTER TABLE ONLY public.orgs FORCE ROW LEVEL SECURITY;


--
-- Name: project_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.project_keys (
    org_id uuid NOT NULL,
    project_id uuid NOT NULL,
    id uuid NOT NULL,
    created_by uuid NOT NULL,
    name text NOT NULL,
    prefix text NOT NULL,
    key_hash bytea NOT NULL,
    can_read boolean NOT NULL,
    can_write boolean NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    revoked_at timestamp with time zone,
    CONSTRAINT project_keys_can_read_check CHECK (can_read),
    CONSTRAINT project_keys_name_check CHECK (((char_length(name) >= 1) AND (char_length(name) <= 200)))
);

ALTER TABLE ONLY public.project_keys FORCE ROW LEVEL SECURITY;


--
-- Name: project_members; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.project_members (
    org_id uuid NOT NULL,
    project_id uuid NOT NULL,
    account_id uuid NOT NULL,
    role text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT project_members_role_check CHECK ((role = ANY (ARRAY['viewer'::text, 'contributor'::text, 'admin'::text])))
);

ALTER TABLE ONLY public.project_members FORCE ROW LEVEL SECURITY;


--
-- Name: project_memories; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.project_memories (
    org_id uuid NOT NULL,
    project_id uuid NOT NULL,
    key text NOT NULL COLLATE pg_catalog."C",
    title text NOT NULL,
    body text NOT NULL,
    body_sha256 bytea NOT NULL,
    kind text NOT NULL,
    authority text NOT NULL,
    prov_source text NOT NULL,
    prov_ref text NOT NULL,
    prov_verification text NOT NULL,
    prov_observed_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone,
    embedding public.vector,
    embedding_space text,
    embedding_dims integer,
    version integer DEFAULT 1 NOT NULL,
    written_by uuid NOT NULL,
    written_by_key uuid,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    tsv tsvector GENERATED ALWAYS AS ((setweight(to_tsvector('english'::regconfig, title), 'A'::"char") || setweight(to_tsvector('english'::regconfig, body), 'B'::"char"))) STORED,
    CONSTRAINT project_memories_authority_check CHECK ((authority = ANY (ARRAY['observed'::text, 'verified'::text, 'pinned'::text]))),
    CONSTRAINT project_memories_body_check CHECK (((octet_length(body) >= 1) AND (octet_length(body) <= 8000))),
    CONSTRAINT project_memories_body_sha256_check CHECK ((octet_length(body_sha256) = 32)),
    CONSTRAINT project_memories_check CHECK (((kind <> 'state'::text) OR (expires_at IS NOT NULL))),
    CONSTRAINT project_memories_check1 CHECK ((((embedding IS NULL) = (embedding_space IS NULL)) AND ((embedding IS NULL) = (embedding_dims IS NULL)))),
    CONSTRAINT project_memories_check2 CHECK (((authority <> 'verified'::text) OR (prov_verification = 'source_verified'::text))),
    CONSTRAINT project_memories_check3 CHECK (((authority <> 'pinned'::text) OR (prov_verification = 'owner_confirmed'::text))),
    CONSTRAINT project_memories_key_check CHECK (((char_length(key) >= 1) AND (char_length(key) <= 256))),
    CONSTRAINT project_memories_kind_check CHECK ((kind = ANY (ARRAY['fact'::text, 'decision'::text, 'preference'::text, 'state'::text, 'rule'::text, 'authority'::text]))),
    CONSTRAINT project_memories_prov_verification_check CHECK ((prov_verification = ANY (ARRAY['unverified'::text, 'source_verified'::text, 'owner_confirmed'::text]))),
    CONSTRAINT project_memories_title_check CHECK (((char_length(title) >= 1) AND (char_length(title) <= 200)))
);

ALTER TABLE ONLY public.project_memories FORCE ROW LEVEL SECURITY;


--
-- Name: project_memory_audit; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.project_memory_audit (
    org_id uuid NOT NULL,
    project_id uuid NOT NULL,
    id bigint NOT NULL,
    actor uuid NOT NULL,
    credential text NOT NULL,
    credential_id uuid NOT NULL,
    action text NOT NULL,
    key text NOT NULL COLLATE pg_catalog."C",
    body_sha256 bytea NOT NULL,
    at timestamp with time zone DEFAULT statement_timestamp() NOT NULL,
    CONSTRAINT project_memory_audit_action_check CHECK ((action = ANY (ARRAY['create'::text, 'replace'::text, 'delete'::text]))),
    CONSTRAINT project_memory_audit_credential_check CHECK ((credential = ANY (ARRAY['owner_session'::text, 'project_key'::text])))
);

ALTER TABLE ONLY public.project_memory_audit FORCE ROW LEVEL SECURITY;


--
-- Name: project_memory_audit_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.project_memory_audit ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.project_memory_audit_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: projects; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.projects (
    account_id uuid NOT NULL,
    id uuid NOT NULL,
    parent_id uuid,
    name text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    archived_at timestamp with time zone,
    deleted_at timestamp with time zone,
    CONSTRAINT projects_name_check CHECK (((char_length(name) >= 1) AND (char_length(name) <= 200)))
);

ALTER TABLE ONLY public.projects FORCE ROW LEVEL SECURITY;


--
-- Name: rate_limits; Type: TABLE; Schema: public; Owner: -
--

CREATE UNLOGGED TABLE public.rate_limits (
    bucket text NOT NULL,
    window_start timestamp with time zone NOT NULL,
    hits integer NOT NULL
);


--
-- Name: schema_migrations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.schema_migrations (
    version integer NOT NULL,
    name text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: share_lookup; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.share_lookup (
    token_hash bytea NOT NULL,
    account_id uuid NOT NULL
);

ALTER TABLE ONLY public.share_lookup FORCE ROW LEVEL SECURITY;


--
-- Name: shares; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.shares (
    account_id uuid NOT NULL,
    id uuid NOT NULL,
    token_hash bytea NOT NULL,
    target_type text NOT NULL,
    memory_id uuid,
    project_id uuid,
    title text,
    indexable boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone,
    revoked_at timestamp with time zone,
    CONSTRAINT shares_check CHECK (((target_type = 'note'::text) = (memory_id IS NOT NULL))),
    CONSTRAINT shares_check1 CHECK (((target_type = 'notebook'::text) = (project_id IS NOT NULL))),
    CONSTRAINT shares_target_type_check CHECK ((target_type = ANY (ARRAY['note'::text, 'notebook'::text]))),
    CONSTRAINT shares_title_check CHECK (((char_length(title) >= 1) AND (char_length(title) <= 200)))
);

ALTER TABLE ONLY public.shares FORCE ROW LEVEL SECURITY;


--
-- Name: turn_proposals; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.turn_proposals (
    account_id uuid NOT NULL,
    conversation_id uuid NOT NULL,
    turn_id uuid NOT NULL,
    id uuid NOT NULL,
    ordinal integer NOT NULL,
    source text NOT NULL,
    summary text NOT NULL,
    change jsonb NOT NULL,
    preview jsonb NOT NULL,
    state text DEFAULT 'proposed'::text NOT NULL,
    applied jsonb,
    outcome jsonb,
    undo_outcome jsonb,
    events jsonb DEFAULT '[]'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT turn_proposals_check CHECK (((state = 'proposed'::text) = (applied IS NULL))),
    CONSTRAINT turn_proposals_ordinal_check CHECK (((ordinal >= 1) AND (ordinal <= 5))),
    CONSTRAINT turn_proposals_source_check CHECK ((source = ANY (ARRAY['deterministic'::text, 'model'::text]))),
    CONSTRAINT turn_proposals_state_check CHECK ((state = ANY (ARRAY['proposed'::text, 'applied'::text, 'undone'::text]))),
    CONSTRAINT turn_proposals_summary_check CHECK (((char_length(summary) >= 1) AND (char_length(summary) <= 200)))
);

ALTER TABLE ONLY public.turn_proposals FORCE ROW LEVEL SECURITY;


--
-- Name: account_enrichment account_enrichment_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.account_enrichment
    ADD CONSTRAINT account_enrichment_pkey PRIMARY KEY (account_id, day);


--
-- Name: account_owners account_owners_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.account_owners
    ADD CONSTRAINT account_owners_pkey PRIMARY KEY (issuer, subject);


--
-- Name: account_quotas account_quotas_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.account_quotas
    ADD CONSTRAINT account_quotas_pkey PRIMARY KEY (account_id, kind);


--
-- Name: account_usage account_usage_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.account_usage
    ADD CONSTRAINT account_usage_pkey PRIMARY KEY (account_id, kind);


--
-- Name: accounts accounts_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.accounts
    ADD CONSTRAINT accounts_pkey PRIMARY KEY (id);


--
-- Name: api_key_lookup api_key_lookup_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_key_lookup
    ADD CONSTRAINT api_key_lookup_pkey PRIMARY KEY (key_hash);


--
-- Name: api_keys api_keys_key_hash_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_key_hash_key UNIQUE (key_hash);


--
-- Name: api_keys api_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_pkey PRIMARY KEY (account_id, id);


--
-- Name: connection_projects connection_projects_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.connection_projects
    ADD CONSTRAINT connection_projects_pkey PRIMARY KEY (account_id, connection_id, project_id);


--
-- Name: connections connections_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.connections
    ADD CONSTRAINT connections_pkey PRIMARY KEY (account_id, id);


--
-- Name: console_sessions console_sessions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.console_sessions
    ADD CONSTRAINT console_sessions_pkey PRIMARY KEY (id_hash);


--
-- Name: conversation_turns conversation_turns_account_id_conversation_id_ordinal_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.conversation_turns
    ADD CONSTRAINT conversation_turns_account_id_conversation_id_ordinal_key UNIQUE (account_id, conversation_id, ordinal);


--
-- Name: conversation_turns conversation_turns_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.conversation_turns
    ADD CONSTRAINT conversation_turns_pkey PRIMARY KEY (account_id, conversation_id, id);


--
-- Name: conversations conversations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.conversations
    ADD CONSTRAINT conversations_pkey PRIMARY KEY (account_id, id);


--
-- Name: embeddings embeddings_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.embeddings
    ADD CONSTRAINT embeddings_pkey PRIMARY KEY (account_id, memory_id, version, profile);


--
-- Name: file_chunks file_chunks_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.file_chunks
    ADD CONSTRAINT file_chunks_pkey PRIMARY KEY (account_id, file_id, version, ordinal);


--
-- Name: files files_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.files
    ADD CONSTRAINT files_pkey PRIMARY KEY (account_id, id);


--
-- Name: identity_tombstones identity_tombstones_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.identity_tombstones
    ADD CONSTRAINT identity_tombstones_pkey PRIMARY KEY (issuer, subject);


--
-- Name: imports imports_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.imports
    ADD CONSTRAINT imports_pkey PRIMARY KEY (account_id, id);


--
-- Name: jobs jobs_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.jobs
    ADD CONSTRAINT jobs_pkey PRIMARY KEY (account_id, id);


--
-- Name: memories memories_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.memories
    ADD CONSTRAINT memories_pkey PRIMARY KEY (account_id, id);


--
-- Name: memory_revisions memory_revisions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.memory_revisions
    ADD CONSTRAINT memory_revisions_pkey PRIMARY KEY (account_id, memory_id, version);


--
-- Name: note_suggestions note_suggestions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.note_suggestions
    ADD CONSTRAINT note_suggestions_pkey PRIMARY KEY (account_id, memory_id);


--
-- Name: note_words note_words_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.note_words
    ADD CONSTRAINT note_words_pkey PRIMARY KEY (account_id, word, memory_id) INCLUDE (tf, project_id);


--
-- Name: notebook_briefs notebook_briefs_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.notebook_briefs
    ADD CONSTRAINT notebook_briefs_pkey PRIMARY KEY (account_id, project_id);


--
-- Name: operation_tombstones operation_tombstones_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.operation_tombstones
    ADD CONSTRAINT operation_tombstones_pkey PRIMARY KEY (id, arguments_hash);


--
-- Name: operations operations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.operations
    ADD CONSTRAINT operations_pkey PRIMARY KEY (account_id, id);


--
-- Name: org_members org_members_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.org_members
    ADD CONSTRAINT org_members_pkey PRIMARY KEY (org_id, account_id);


--
-- Name: org_projects org_projects_org_id_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.org_projects
    ADD CONSTRAINT org_projects_org_id_id_key UNIQUE (org_id, id);


--
-- Name: org_projects org_projects_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.org_projects
    ADD CONSTRAINT org_projects_pkey PRIMARY KEY (id);


--
-- Name: orgs orgs_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.orgs
    ADD CONSTRAINT orgs_pkey PRIMARY KEY (id);


--
-- Name: project_keys project_keys_key_hash_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.project_keys
    ADD CONSTRAINT project_keys_key_hash_key UNIQUE (key_hash);


--
-- Name: project_keys project_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.project_keys
    ADD CONSTRAINT project_keys_pkey PRIMARY KEY (id);


--
-- Name: project_members project_members_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.project_members
    ADD CONSTRAINT project_members_pkey PRIMARY KEY (org_id, project_id, account_id);


--
-- Name: project_memories project_memories_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.project_memories
    ADD CONSTRAINT project_memories_pkey PRIMARY KEY (org_id, project_id, key);


--
-- Name: project_memory_audit project_memory_audit_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.project_memory_audit
    ADD CONSTRAINT project_memory_audit_pkey PRIMARY KEY (id);


--
-- Name: projects projects_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.projects
    ADD CONSTRAINT projects_pkey PRIMARY KEY (account_id, id);


--
-- Name: rate_limits rate_limits_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.rate_limits
    ADD CONSTRAINT rate_limits_pkey PRIMARY KEY (bucket);


--
-- Name: schema_migrations schema_migrations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.schema_migrations
    ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (version);


--
-- Name: share_lookup share_lookup_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.share_lookup
    ADD CONSTRAINT share_lookup_pkey PRIMARY KEY (token_hash);


--
-- Name: shares shares_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shares
    ADD CONSTRAINT shares_pkey PRIMARY KEY (account_id, id);


--
-- Name: shares shares_token_hash_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shares
    ADD CONSTRAINT shares_token_hash_key UNIQUE (token_hash);


--
-- Name: turn_proposals turn_proposals_account_id_conversation_id_turn_id_ordinal_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.turn_proposals
    ADD CONSTRAINT turn_proposals_account_id_conversation_id_turn_id_ordinal_key UNIQUE (account_id, conversation_id, turn_id, ordinal);


--
-- Name: turn_proposals turn_proposals_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.turn_proposals
    ADD CONSTRAINT turn_proposals_pkey PRIMARY KEY (account_id, id);


--
-- Name: account_owners_account; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX account_owners_account ON public.account_owners USING btree (account_id);


--
-- Name: connections_oauth_client; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX connections_oauth_client ON public.connections USING btree (account_id, oauth_client_id) WHERE (oauth_client_id IS NOT NULL);


--
-- Name: connections_request; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX connections_request ON public.connections USING btree (account_id, request_id) WHERE (request_id IS NOT NULL);


--
-- Name: console_sessions_expiry; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX console_sessions_expiry ON public.console_sessions USING btree (expires_at);


--
-- Name: conversations_account_created; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX conversations_account_created ON public.conversations USING btree (account_id, created_at DESC, id DESC) WHERE (deleted_at IS NULL);


--
-- Name: embeddings_minilm_hnsw; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX embeddings_minilm_hnsw ON public.embeddings USING hnsw (((embedding)::public.vector(384)) public.vector_cosine_ops) WHERE (profile = 'minilm'::text);


--
-- Name: files_newest; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX files_newest ON public.files USING btree (account_id, created_at DESC, id DESC) WHERE (deleted_at IS NULL);


--
-- Name: jobs_claimable; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX jobs_claimable ON public.jobs USING btree (run_after, id) WHERE (status = 'queued'::text);


--
-- Name: jobs_claimable_by_account; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX jobs_claimable_by_account ON public.jobs USING btree (account_id, run_after, id) WHERE (status = 'queued'::text);


--
-- Name: jobs_enrichment_queued; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX jobs_enrichment_queued ON public.jobs USING btree (account_id, kind, COALESCE((payload ->> 'notebookId'::text), ''::text)) WHERE ((status = 'queued'::text) AND (kind = ANY (ARRAY['classify_notes'::text, 'brief_notebook'::text])));


--
-- Name: jobs_failed; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX jobs_failed ON public.jobs USING btree (kind) WHERE (status = 'failed'::text);


--
-- Name: jobs_leased; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX jobs_leased ON public.jobs USING btree (lease_expires_at) WHERE (status = 'running'::text);


--
-- Name: jobs_memory; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX jobs_memory ON public.jobs USING btree (account_id, memory_id);


--
-- Name: jobs_memory_kind; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX jobs_memory_kind ON public.jobs USING btree (account_id, memory_id, kind) WHERE (status = 'queued'::text);


--
-- Name: memories_account_created; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX memories_account_created ON public.memories USING btree (account_id, created_at DESC, id);


--
-- Name: memories_account_updated; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX memories_account_updated ON public.memories USING btree (account_id, updated_at DESC, id);


--
-- Name: memories_connection_updated; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX memories_connection_updated ON public.memories USING btree (account_id, connection_id, updated_at DESC, id) WHERE (connection_id IS NOT NULL);


--
-- Name: memories_file; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX memories_file ON public.memories USING btree (account_id, file_id, file_version) WHERE (file_id IS NOT NULL);


--
-- Name: memories_handoff_task; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX memories_handoff_task ON public.memories USING btree (account_id, COALESCE(project_id, '00000000-0000-0000-0000-000000000000'::uuid), task_id) WHERE ((kind = 'handoff'::text) AND (deleted_at IS NULL) AND (superseded_at IS NULL));


--
-- Name: memories_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX memories_id ON public.memories USING btree (id);


--
-- Name: memories_live_scope; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX memories_live_scope ON public.memories USING btree (account_id, project_id, expires_at, created_at) WHERE ((deleted_at IS NULL) AND (archived_at IS NULL));


--
-- Name: memories_notebook_saved; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX memories_notebook_saved ON public.memories USING btree (project_id, created_at DESC, id DESC) WHERE ((project_id IS NOT NULL) AND (file_id IS NULL) AND (deleted_at IS NULL) AND (archived_at IS NULL));


--
-- Name: memories_sequence; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX memories_sequence ON public.memories USING btree (account_id, COALESCE(project_id, '00000000-0000-0000-0000-000000000000'::uuid), source_agent, created_at, id) WHERE (source_agent IS NOT NULL);


--
-- Name: memory_revisions_connection; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX memory_revisions_connection ON public.memory_revisions USING btree (account_id, connection_id, created_at, memory_id, version) WHERE (connection_id IS NOT NULL);


--
-- Name: memory_revisions_saved; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX memory_revisions_saved ON public.memory_revisions USING btree (account_id, created_at, memory_id, version);


--
-- Name: note_bands_band; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX note_bands_band ON public.note_bands USING btree (band);


--
-- Name: note_bands_memory; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX note_bands_memory ON public.note_bands USING btree (memory_id);


--
-- Name: note_suggestions_project; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX note_suggestions_project ON public.note_suggestions USING btree (account_id, project_id) WHERE (project_id IS NOT NULL);


--
-- Name: org_members_account; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX org_members_account ON public.org_members USING btree (account_id);


--
-- Name: project_members_account; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX project_members_account ON public.project_members USING btree (account_id);


--
-- Name: project_memories_kind; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX project_memories_kind ON public.project_memories USING btree (org_id, project_id, kind, key);


--
-- Name: project_memories_space; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX project_memories_space ON public.project_memories USING btree (org_id, project_id, embedding_space, embedding_dims) WHERE (embedding IS NOT NULL);


--
-- Name: project_memories_tsv; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX project_memories_tsv ON public.project_memories USING gin (tsv);


--
-- Name: project_memory_audit_project; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX project_memory_audit_project ON public.project_memory_audit USING btree (org_id, project_id, id);


--
-- Name: projects_parent; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX projects_parent ON public.projects USING btree (account_id, parent_id);


--
-- Name: projects_sibling_name; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX projects_sibling_name ON public.projects USING btree (account_id, COALESCE(parent_id, '00000000-0000-0000-0000-000000000000'::uuid), lower(name)) WHERE (deleted_at IS NULL);


--
-- Name: shares_account_created; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX shares_account_created ON public.shares USING btree (account_id, created_at DESC, id DESC);


--
-- Name: memories enrichment_deletes; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER enrichment_deletes AFTER DELETE ON public.memories REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.grove_queue_enrichment();


--
-- Name: memories enrichment_inserts; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER enrichment_inserts AFTER INSERT ON public.memories REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.grove_queue_enrichment();


--
-- Name: memories enrichment_updates; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER enrichment_updates AFTER UPDATE ON public.memories REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.grove_queue_enrichment();


--
-- Name: memories note_bands; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER note_bands AFTER UPDATE OF content, deleted_at, project_id ON public.memories FOR EACH ROW WHEN (((old.content_tsv IS DISTINCT FROM new.content_tsv) OR (old.project_id IS DISTINCT FROM new.project_id) OR (old.deleted_at IS DISTINCT FROM new.deleted_at))) EXECUTE FUNCTION public.grove_keep_note_bands();


--
-- Name: memories note_bands_inserts; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER note_bands_inserts AFTER INSERT ON public.memories REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.grove_note_bands_inserted();


--
-- Name: memories note_words; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER note_words AFTER UPDATE OF content, deleted_at, project_id ON public.memories FOR EACH ROW WHEN (((old.content_tsv IS DISTINCT FROM new.content_tsv) OR (old.project_id IS DISTINCT FROM new.project_id) OR (old.deleted_at IS DISTINCT FROM new.deleted_at))) EXECUTE FUNCTION public.grove_note_words();


--
-- Name: memories note_words_inserts; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER note_words_inserts AFTER INSERT ON public.memories REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.grove_note_words_inserted();


--
-- Name: conversations usage_deletes; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER usage_deletes AFTER DELETE ON public.conversations REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.grove_track_usage('conversations', 'deleted_at IS NULL', '0');


--
-- Name: file_chunks usage_deletes; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER usage_deletes AFTER DELETE ON public.file_chunks REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.grove_track_file_usage();


--
-- Name: memories usage_deletes; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER usage_deletes AFTER DELETE ON public.memories REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.grove_track_usage('notes', 'deleted_at IS NULL', 'octet_length(content)', 'CASE WHEN file_id IS NULL THEN ''notes'' ELSE ''passages'' END');


--
-- Name: projects usage_deletes; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER usage_deletes AFTER DELETE ON public.projects REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.grove_track_usage('notebooks', 'deleted_at IS NULL', '0');


--
-- Name: shares usage_deletes; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER usage_deletes AFTER DELETE ON public.shares REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.grove_track_usage('shares', 'revoked_at IS NULL', '0');


--
-- Name: conversations usage_inserts; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER usage_inserts AFTER INSERT ON public.conversations REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.grove_track_usage('conversations', 'deleted_at IS NULL', '0');


--
-- Name: file_chunks usage_inserts; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER usage_inserts AFTER INSERT ON public.file_chunks REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.grove_track_file_usage();


--
-- Name: memories usage_inserts; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER usage_inserts AFTER INSERT ON public.memories REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.grove_track_usage('notes', 'deleted_at IS NULL', 'octet_length(content)', 'CASE WHEN file_id IS NULL THEN ''notes'' ELSE ''passages'' END');


--
-- Name: projects usage_inserts; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER usage_inserts AFTER INSERT ON public.projects REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.grove_track_usage('notebooks', 'deleted_at IS NULL', '0');


--
-- Name: shares usage_inserts; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER usage_inserts AFTER INSERT ON public.shares REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.grove_track_usage('shares', 'revoked_at IS NULL', '0');


--
-- Name: conversations usage_updates; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER usage_updates AFTER UPDATE ON public.conversations REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.grove_track_usage('conversations', 'deleted_at IS NULL', '0');


--
-- Name: memories usage_updates; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER usage_updates AFTER UPDATE ON public.memories REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.grove_track_usage('notes', 'deleted_at IS NULL', 'octet_length(content)', 'CASE WHEN file_id IS NULL THEN ''notes'' ELSE ''passages'' END');


--
-- Name: projects usage_updates; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER usage_updates AFTER UPDATE ON public.projects REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.grove_track_usage('notebooks', 'deleted_at IS NULL', '0');


--
-- Name: shares usage_updates; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER usage_updates AFTER UPDATE ON public.shares REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.grove_track_usage('shares', 'revoked_at IS NULL', '0');


--
-- Name: account_owners account_owners_account_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.account_owners
    ADD CONSTRAINT account_owners_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);


--
-- Name: account_quotas account_quotas_account_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.account_quotas
    ADD CONSTRAINT account_quotas_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);


--
-- Name: account_usage account_usage_account_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.account_usage
    ADD CONSTRAINT account_usage_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);


--
-- Name: api_key_lookup api_key_lookup_account_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_key_lookup
    ADD CONSTRAINT api_key_lookup_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);


--
-- Name: api_keys api_keys_account_id_connection_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_account_id_connection_id_fkey FOREIGN KEY (account_id, connection_id) REFERENCES public.connections(account_id, id);


--
-- Name: connection_projects connection_projects_account_id_connection_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.connection_projects
    ADD CONSTRAINT connection_projects_account_id_connection_id_fkey FOREIGN KEY (account_id, connection_id) REFERENCES public.connections(account_id, id);


--
-- Name: connection_projects connection_projects_account_id_project_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.connection_projects
    ADD CONSTRAINT connection_projects_account_id_project_id_fkey FOREIGN KEY (account_id, project_id) REFERENCES public.projects(account_id, id);


--
-- Name: connections connections_account_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.connections
    ADD CONSTRAINT connections_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);


--
-- Name: conversation_turns conversation_turns_account_id_conversation_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.conversation_turns
    ADD CONSTRAINT conversation_turns_account_id_conversation_id_fkey FOREIGN KEY (account_id, conversation_id) REFERENCES public.conversations(account_id, id);


--
-- Name: conversations conversations_account_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.conversations
    ADD CONSTRAINT conversations_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);


--
-- Name: conversations conversations_account_id_project_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.conversations
    ADD CONSTRAINT conversations_account_id_project_id_fkey FOREIGN KEY (account_id, project_id) REFERENCES public.projects(account_id, id);


--
-- Name: embeddings embeddings_account_id_memory_id_version_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.embeddings
    ADD CONSTRAINT embeddings_account_id_memory_id_version_fkey FOREIGN KEY (account_id, memory_id, version) REFERENCES public.memory_revisions(account_id, memory_id, version);


--
-- Name: file_chunks file_chunks_account_id_file_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.file_chunks
    ADD CONSTRAINT file_chunks_account_id_file_id_fkey FOREIGN KEY (account_id, file_id) REFERENCES public.files(account_id, id);


--
-- Name: files files_account_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.files
    ADD CONSTRAINT files_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);


--
-- Name: files files_account_id_project_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.files
    ADD CONSTRAINT files_account_id_project_id_fkey FOREIGN KEY (account_id, project_id) REFERENCES public.projects(account_id, id);


--
-- Name: imports imports_account_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.imports
    ADD CONSTRAINT imports_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);


--
-- Name: jobs jobs_account_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.jobs
    ADD CONSTRAINT jobs_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);


--
-- Name: jobs jobs_account_id_memory_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.jobs
    ADD CONSTRAINT jobs_account_id_memory_id_fkey FOREIGN KEY (account_id, memory_id) REFERENCES public.memories(account_id, id);


--
-- Name: memories memories_account_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.memories
    ADD CONSTRAINT memories_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);


--
-- Name: memories memories_account_id_project_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.memories
    ADD CONSTRAINT memories_account_id_project_id_fkey FOREIGN KEY (account_id, project_id) REFERENCES public.projects(account_id, id);


--
-- Name: memories memories_file_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.memories
    ADD CONSTRAINT memories_file_fkey FOREIGN KEY (account_id, file_id) REFERENCES public.files(account_id, id);


--
-- Name: memory_revisions memory_revisions_account_id_memory_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.memory_revisions
    ADD CONSTRAINT memory_revisions_account_id_memory_id_fkey FOREIGN KEY (account_id, memory_id) REFERENCES public.memories(account_id, id);


--
-- Name: note_suggestions note_suggestions_account_id_memory_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.note_suggestions
    ADD CONSTRAINT note_suggestions_account_id_memory_id_fkey FOREIGN KEY (account_id, memory_id) REFERENCES public.memories(account_id, id) ON DELETE CASCADE;


--
-- Name: note_suggestions note_suggestions_account_id_project_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.note_suggestions
    ADD CONSTRAINT note_suggestions_account_id_project_id_fkey FOREIGN KEY (account_id, project_id) REFERENCES public.projects(account_id, id) ON DELETE CASCADE;


--
-- Name: notebook_briefs notebook_briefs_account_id_project_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.notebook_briefs
    ADD CONSTRAINT notebook_briefs_account_id_project_id_fkey FOREIGN KEY (account_id, project_id) REFERENCES public.projects(account_id, id) ON DELETE CASCADE;


--
-- Name: operations operations_account_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.operations
    ADD CONSTRAINT operations_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);


--
-- Name: operations operations_account_id_memory_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.operations
    ADD CONSTRAINT operations_account_id_memory_id_fkey FOREIGN KEY (account_id, memory_id) REFERENCES public.memories(account_id, id);


--
-- Name: org_members org_members_account_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.org_members
    ADD CONSTRAINT org_members_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);


--
-- Name: org_members org_members_org_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.org_members
    ADD CONSTRAINT org_members_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.orgs(id);


--
-- Name: org_projects org_projects_org_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.org_projects
    ADD CONSTRAINT org_projects_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.orgs(id);


--
-- Name: orgs orgs_created_by_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.orgs
    ADD CONSTRAINT orgs_created_by_fkey FOREIGN KEY (created_by) REFERENCES public.accounts(id);


--
-- Name: project_keys project_keys_created_by_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.project_keys
    ADD CONSTRAINT project_keys_created_by_fkey FOREIGN KEY (created_by) REFERENCES public.accounts(id);


--
-- Name: project_keys project_keys_org_id_project_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.project_keys
    ADD CONSTRAINT project_keys_org_id_project_id_fkey FOREIGN KEY (org_id, project_id) REFERENCES public.org_projects(org_id, id);


--
-- Name: project_members project_members_account_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.project_members
    ADD CONSTRAINT project_members_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);


--
-- Name: project_members project_members_org_id_account_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.project_members
    ADD CONSTRAINT project_members_org_id_account_id_fkey FOREIGN KEY (org_id, account_id) REFERENCES public.org_members(org_id, account_id);


--
-- Name: project_members project_members_org_id_project_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.project_members
    ADD CONSTRAINT project_members_org_id_project_id_fkey FOREIGN KEY (org_id, project_id) REFERENCES public.org_projects(org_id, id);


--
-- Name: project_memories project_memories_org_id_project_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.project_memories
    ADD CONSTRAINT project_memories_org_id_project_id_fkey FOREIGN KEY (org_id, project_id) REFERENCES public.org_projects(org_id, id);


--
-- Name: project_memories project_memories_written_by_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.project_memories
    ADD CONSTRAINT project_memories_written_by_fkey FOREIGN KEY (written_by) REFERENCES public.accounts(id);


--
-- Name: project_memories project_memories_written_by_key_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.project_memories
    ADD CONSTRAINT project_memories_written_by_key_fkey FOREIGN KEY (written_by_key) REFERENCES public.project_keys(id);


--
-- Name: project_memory_audit project_memory_audit_actor_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.project_memory_audit
    ADD CONSTRAINT project_memory_audit_actor_fkey FOREIGN KEY (actor) REFERENCES public.accounts(id);


--
-- Name: project_memory_audit project_memory_audit_org_id_project_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.project_memory_audit
    ADD CONSTRAINT project_memory_audit_org_id_project_id_fkey FOREIGN KEY (org_id, project_id) REFERENCES public.org_projects(org_id, id);


--
-- Name: projects projects_account_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.projects
    ADD CONSTRAINT projects_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);


--
-- Name: projects projects_account_id_parent_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.projects
    ADD CONSTRAINT projects_account_id_parent_id_fkey FOREIGN KEY (account_id, parent_id) REFERENCES public.projects(account_id, id);


--
-- Name: share_lookup share_lookup_account_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.share_lookup
    ADD CONSTRAINT share_lookup_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);


--
-- Name: shares shares_account_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shares
    ADD CONSTRAINT shares_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);


--
-- Name: shares shares_account_id_memory_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shares
    ADD CONSTRAINT shares_account_id_memory_id_fkey FOREIGN KEY (account_id, memory_id) REFERENCES public.memories(account_id, id);


--
-- Name: shares shares_account_id_project_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shares
    ADD CONSTRAINT shares_account_id_project_id_fkey FOREIGN KEY (account_id, project_id) REFERENCES public.projects(account_id, id);


--
-- Name: turn_proposals turn_proposals_account_id_conversation_id_turn_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.turn_proposals
    ADD CONSTRAINT turn_proposals_account_id_conversation_id_turn_id_fkey FOREIGN KEY (account_id, conversation_id, turn_id) REFERENCES public.conversation_turns(account_id, conversation_id, id);


--
-- Name: account_enrichment; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.account_enrichment ENABLE ROW LEVEL SECURITY;

--
-- Name: account_owners; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.account_owners ENABLE ROW LEVEL SECURITY;

--
-- Name: account_quotas; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.account_quotas ENABLE ROW LEVEL SECURITY;

--
-- Name: account_usage; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.account_usage ENABLE ROW LEVEL SECURITY;

--
-- Name: accounts; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.accounts ENABLE ROW LEVEL SECURITY;

--
-- Name: project_members admin_inserts; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY admin_inserts ON public.project_members FOR INSERT WITH CHECK (((org_id = public.grove_current_org()) AND (project_id = public.grove_current_project()) AND ((( SELECT public.grove_project_role() AS grove_project_role) = 'admin'::text) OR (public.grove_org_role(org_id) = 'owner'::text))));


--
-- Name: project_keys admin_manages; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY admin_manages ON public.project_keys USING (((org_id = public.grove_current_org()) AND (project_id = public.grove_current_project()) AND (( SELECT public.grove_project_role() AS grove_project_role) = 'admin'::text)));


--
-- Name: api_key_lookup; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.api_key_lookup ENABLE ROW LEVEL SECURITY;

--
-- Name: api_keys; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.api_keys ENABLE ROW LEVEL SECURITY;

--
-- Name: connection_projects; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.connection_projects ENABLE ROW LEVEL SECURITY;

--
-- Name: connections; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.connections ENABLE ROW LEVEL SECURITY;

--
-- Name: console_sessions; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.console_sessions ENABLE ROW LEVEL SECURITY;

--
-- Name: project_memories contributor_writes; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY contributor_writes ON public.project_memories USING (((org_id = public.grove_current_org()) AND (project_id = public.grove_current_project()) AND (( SELECT public.grove_project_role() AS grove_project_role) = ANY (ARRAY['contributor'::text, 'admin'::text]))));


--
-- Name: project_memory_audit contributor_writes; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY contributor_writes ON public.project_memory_audit USING (((org_id = public.grove_current_org()) AND (project_id = public.grove_current_project()) AND (( SELECT public.grove_project_role() AS grove_project_role) = ANY (ARRAY['contributor'::text, 'admin'::text]))));


--
-- Name: conversation_turns; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.conversation_turns ENABLE ROW LEVEL SECURITY;

--
-- Name: conversations; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.conversations ENABLE ROW LEVEL SECURITY;

--
-- Name: orgs creator_inserts; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY creator_inserts ON public.orgs FOR INSERT WITH CHECK ((created_by = public.grove_current_account()));


--
-- Name: embeddings; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.embeddings ENABLE ROW LEVEL SECURITY;

--
-- Name: file_chunks; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.file_chunks ENABLE ROW LEVEL SECURITY;

--
-- Name: files; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.files ENABLE ROW LEVEL SECURITY;

--
-- Name: imports; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.imports ENABLE ROW LEVEL SECURITY;

--
-- Name: jobs; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.jobs ENABLE ROW LEVEL SECURITY;

--
-- Name: project_keys key_lookup; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY key_lookup ON public.project_keys FOR SELECT USING ((key_hash = public.grove_key_lookup()));


--
-- Name: project_members manager_deletes; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY manager_deletes ON public.project_members FOR DELETE USING (((org_id = public.grove_current_org()) AND (project_id = public.grove_current_project()) AND ((( SELECT public.grove_project_role() AS grove_project_role) = 'admin'::text) OR (public.grove_org_role(org_id) = 'owner'::text))));


--
-- Name: org_members manager_inserts; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY manager_inserts ON public.org_members FOR INSERT WITH CHECK (((org_id = public.grove_current_org()) AND ((public.grove_org_role(org_id) = 'owner'::text) OR ((role = 'member'::text) AND (( SELECT public.grove_project_role() AS grove_project_role) = 'admin'::text)))));


--
-- Name: org_projects manager_updates; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY manager_updates ON public.org_projects FOR UPDATE USING (((org_id = public.grove_current_org()) AND ((public.grove_org_role(org_id) = 'owner'::text) OR ((id = public.grove_current_project()) AND (( SELECT public.grove_project_role() AS grove_project_role) = 'admin'::text)))));


--
-- Name: project_members manager_updates; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY manager_updates ON public.project_members FOR UPDATE USING (((org_id = public.grove_current_org()) AND (project_id = public.grove_current_project()) AND ((( SELECT public.grove_project_role() AS grove_project_role) = 'admin'::text) OR (public.grove_org_role(org_id) = 'owner'::text))));


--
-- Name: org_members member_reads; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY member_reads ON public.org_members FOR SELECT USING (((account_id = public.grove_current_account()) OR (public.grove_org_role(org_id) IS NOT NULL)));


--
-- Name: org_projects member_reads; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY member_reads ON public.org_projects FOR SELECT USING (((org_id = public.grove_current_org()) AND (public.grove_org_role(org_id) IS NOT NULL)));


--
-- Name: orgs member_reads; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY member_reads ON public.orgs FOR SELECT USING ((public.grove_org_role(id) IS NOT NULL));


--
-- Name: project_members member_reads; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY member_reads ON public.project_members FOR SELECT USING (((account_id = public.grove_current_account()) OR ((org_id = public.grove_current_org()) AND (public.grove_org_role(org_id) IS NOT NULL))));


--
-- Name: project_memories member_reads; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY member_reads ON public.project_memories FOR SELECT USING (((org_id = public.grove_current_org()) AND (project_id = public.grove_current_project()) AND (( SELECT public.grove_project_role() AS grove_project_role) IS NOT NULL)));


--
-- Name: project_memory_audit member_reads; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY member_reads ON public.project_memory_audit FOR SELECT USING (((org_id = public.grove_current_org()) AND (project_id = public.grove_current_project()) AND (( SELECT public.grove_project_role() AS grove_project_role) IS NOT NULL)));


--
-- Name: memories; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.memories ENABLE ROW LEVEL SECURITY;

--
-- Name: memory_revisions; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.memory_revisions ENABLE ROW LEVEL SECURITY;

--
-- Name: note_bands; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.note_bands ENABLE ROW LEVEL SECURITY;

--
-- Name: note_suggestions; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.note_suggestions ENABLE ROW LEVEL SECURITY;

--
-- Name: note_words; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.note_words ENABLE ROW LEVEL SECURITY;

--
-- Name: notebook_briefs; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.notebook_briefs ENABLE ROW LEVEL SECURITY;

--
-- Name: operations; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.operations ENABLE ROW LEVEL SECURITY;

--
-- Name: org_members; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.org_members ENABLE ROW LEVEL SECURITY;

--
-- Name: org_projects; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.org_projects ENABLE ROW LEVEL SECURITY;

--
-- Name: orgs; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.orgs ENABLE ROW LEVEL SECURITY;

--
-- Name: org_projects owner_inserts; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY owner_inserts ON public.org_projects FOR INSERT WITH CHECK (((org_id = public.grove_current_org()) AND (public.grove_org_role(org_id) = 'owner'::text)));


--
-- Name: accounts owner_lists; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY owner_lists ON public.accounts FOR SELECT USING (public.grove_owns_schema());


--
-- Name: conversations owner_probes; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY owner_probes ON public.conversations FOR SELECT TO grove_migrator USING ((current_setting('grove.id_probe'::text, true) = 'on'::text));


--
-- Name: memories owner_probes; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY owner_probes ON public.memories FOR SELECT TO grove_migrator USING ((current_setting('grove.id_probe'::text, true) = 'on'::text));


--
-- Name: projects owner_probes; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY owner_probes ON public.projects FOR SELECT TO grove_migrator USING ((current_setting('grove.id_probe'::text, true) = 'on'::text));


--
-- Name: orgs owner_updates; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY owner_updates ON public.orgs FOR UPDATE USING ((public.grove_org_role(id) = 'owner'::text)) WITH CHECK ((public.grove_org_role(id) = 'owner'::text));


--
-- Name: project_keys; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.project_keys ENABLE ROW LEVEL SECURITY;

--
-- Name: project_members; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.project_members ENABLE ROW LEVEL SECURITY;

--
-- Name: project_memories; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.project_memories ENABLE ROW LEVEL SECURITY;

--
-- Name: project_memory_audit; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.project_memory_audit ENABLE ROW LEVEL SECURITY;

--
-- Name: projects; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.projects ENABLE ROW LEVEL SECURITY;

--
-- Name: jobs queue; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY queue ON public.jobs USING ((current_setting('grove.queue'::text, true) = 'claim'::text)) WITH CHECK ((current_setting('grove.queue'::text, true) = 'claim'::text));


--
-- Name: org_members self_leaves; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY self_leaves ON public.org_members FOR DELETE USING ((account_id = public.grove_current_account()));


--
-- Name: project_members self_leaves; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY self_leaves ON public.project_members FOR DELETE USING ((account_id = public.grove_current_account()));


--
-- Name: share_lookup; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.share_lookup ENABLE ROW LEVEL SECURITY;

--
-- Name: shares; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.shares ENABLE ROW LEVEL SECURITY;

--
-- Name: account_enrichment tenant; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant ON public.account_enrichment USING ((account_id = public.grove_current_account())) WITH CHECK ((account_id = public.grove_current_account()));


--
-- Name: account_owners tenant; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant ON public.account_owners USING (((account_id = public.grove_current_account()) OR ((issuer = current_setting('grove.owner_issuer'::text, true)) AND (subject = current_setting('grove.owner_subject'::text, true))))) WITH CHECK ((account_id = public.grove_current_account()));


--
-- Name: account_quotas tenant; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant ON public.account_quotas USING ((account_id = public.grove_current_account()));


--
-- Name: account_usage tenant; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant ON public.account_usage USING ((account_id = public.grove_current_account()));


--
-- Name: accounts tenant; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant ON public.accounts USING ((id = public.grove_current_account())) WITH CHECK ((id = public.grove_current_account()));


--
-- Name: api_key_lookup tenant; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant ON public.api_key_lookup USING (((account_id = public.grove_current_account()) OR (key_hash = public.grove_key_lookup()))) WITH CHECK ((account_id = public.grove_current_account()));


--
-- Name: api_keys tenant; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant ON public.api_keys USING (((account_id = public.grove_current_account()) OR (key_hash = public.grove_key_lookup()))) WITH CHECK ((account_id = public.grove_current_account()));


--
-- Name: connection_projects tenant; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant ON public.connection_projects USING ((account_id = public.grove_current_account())) WITH CHECK ((account_id = public.grove_current_account()));


--
-- Name: connections tenant; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant ON public.connections USING ((account_id = public.grove_current_account())) WITH CHECK ((account_id = public.grove_current_account()));


--
-- Name: conversation_turns tenant; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant ON public.conversation_turns USING ((account_id = public.grove_current_account())) WITH CHECK ((account_id = public.grove_current_account()));


--
-- Name: conversations tenant; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant ON public.conversations USING ((account_id = public.grove_current_account())) WITH CHECK ((account_id = public.grove_current_account()));


--
-- Name: embeddings tenant; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant ON public.embeddings USING ((account_id = public.grove_current_account())) WITH CHECK ((account_id = public.grove_current_account()));


--
-- Name: file_chunks tenant; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant ON public.file_chunks USING ((account_id = public.grove_current_account())) WITH CHECK ((account_id = public.grove_current_account()));


--
-- Name: files tenant; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant ON public.files USING ((account_id = public.grove_current_account())) WITH CHECK ((account_id = public.grove_current_account()));


--
-- Name: imports tenant; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant ON public.imports USING ((account_id = public.grove_current_account())) WITH CHECK ((account_id = public.grove_current_account()));


--
-- Name: jobs tenant; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant ON public.jobs USING ((account_id = public.grove_current_account())) WITH CHECK ((account_id = public.grove_current_account()));


--
-- Name: memories tenant; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant ON public.memories USING ((account_id = public.grove_current_account())) WITH CHECK ((account_id = public.grove_current_account()));


--
-- Name: memory_revisions tenant; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant ON public.memory_revisions USING ((account_id = public.grove_current_account())) WITH CHECK ((account_id = public.grove_current_account()));


--
-- Name: note_bands tenant; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant ON public.note_bands USING ((account_id = public.grove_current_account())) WITH CHECK ((account_id = public.grove_current_account()));


--
-- Name: note_suggestions tenant; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant ON public.note_suggestions USING ((account_id = public.grove_current_account())) WITH CHECK ((account_id = public.grove_current_account()));


--
-- Name: note_words tenant; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant ON public.note_words USING ((account_id = public.grove_current_account())) WITH CHECK ((account_id = public.grove_current_account()));


--
-- Name: notebook_briefs tenant; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant ON public.notebook_briefs USING ((account_id = public.grove_current_account())) WITH CHECK ((account_id = public.grove_current_account()));


--
-- Name: operations tenant; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant ON public.operations USING ((account_id = public.grove_current_account())) WITH CHECK ((account_id = public.grove_current_account()));


--
-- Name: projects tenant; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant ON public.projects USING ((account_id = public.grove_current_account())) WITH CHECK ((account_id = public.grove_current_account()));


--
-- Name: share_lookup tenant; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant ON public.share_lookup USING (((account_id = public.grove_current_account()) OR (token_hash = public.grove_share_lookup()))) WITH CHECK ((account_id = public.grove_current_account()));


--
-- Name: shares tenant; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant ON public.shares USING (((account_id = public.grove_current_account()) OR (token_hash = public.grove_share_lookup()))) WITH CHECK ((account_id = public.grove_current_account()));


--
-- Name: turn_proposals tenant; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant ON public.turn_proposals USING ((account_id = public.grove_current_account())) WITH CHECK ((account_id = public.grove_current_account()));


--
-- Name: turn_proposals; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.turn_proposals ENABLE ROW LEVEL SECURITY;

--
-- Name: SCHEMA public; Type: ACL; Schema: -; Owner: -
--

GRANT USAGE ON SCHEMA public TO grove_app;
GRANT USAGE ON SCHEMA public TO grove_share;
GRANT USAGE ON SCHEMA public TO grove_console;


--
-- Name: FUNCTION grove_add_usage(p_account uuid, p_kind text, p_items bigint, p_bytes bigint); Type: ACL; Schema: public; Owner: -
--

REVOKE ALL ON FUNCTION public.grove_add_usage(p_account uuid, p_kind text, p_items bigint, p_bytes bigint) FROM PUBLIC;


--
-- Name: FUNCTION grove_console_session_drop(p_id bytea); Type: ACL; Schema: public; Owner: -
--

REVOKE ALL ON FUNCTION public.grove_console_session_drop(p_id bytea) FROM PUBLIC;
GRANT ALL ON FUNCTION public.grove_console_session_drop(p_id bytea) TO grove_console;


--
-- Name: FUNCTION grove_console_session_get(p_id bytea); Type: ACL; Schema: public; Owner: -
--

REVOKE ALL ON FUNCTION public.grove_console_session_get(p_id bytea) FROM PUBLIC;
GRANT ALL ON FUNCTION public.grove_console_session_get(p_id bytea) TO grove_console;


--
-- Name: FUNCTION grove_console_session_put(p_id bytea, p_sealed bytea, p_expires timestamp with time zone); Type: ACL; Schema: public; Owner: -
--

REVOKE ALL ON FUNCTION public.grove_console_session_put(p_id bytea, p_sealed bytea, p_expires timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION public.grove_console_session_put(p_id bytea, p_sealed bytea, p_expires timestamp with time zone) TO grove_console;


--
-- Name: FUNCTION grove_found_org(p_org uuid, p_name text); Type: ACL; Schema: public; Owner: -
--

REVOKE ALL ON FUNCTION public.grove_found_org(p_org uuid, p_name text) FROM PUBLIC;
GRANT ALL ON FUNCTION public.grove_found_org(p_org uuid, p_name text) TO grove_app;


--
-- Name: FUNCTION grove_org_role(org uuid); Type: ACL; Schema: public; Owner: -
--

REVOKE ALL ON FUNCTION public.grove_org_role(org uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION public.grove_org_role(org uuid) TO grove_app;


--
-- Name: FUNCTION grove_provision_owner(p_issuer text, p_subject text, p_name text); Type: ACL; Schema: public; Owner: -
--

REVOKE ALL ON FUNCTION public.grove_provision_owner(p_issuer text, p_subject text, p_name text) FROM PUBLIC;
GRANT ALL ON FUNCTION public.grove_provision_owner(p_issuer text, p_subject text, p_name text) TO grove_app;


--
-- Name: FUNCTION grove_public_rate_hit(p_key text, p_window integer); Type: ACL; Schema: public; Owner: -
--

REVOKE ALL ON FUNCTION public.grove_public_rate_hit(p_key text, p_window integer) FROM PUBLIC;
GRANT ALL ON FUNCTION public.grove_public_rate_hit(p_key text, p_window integer) TO grove_share;


--
-- Name: FUNCTION grove_public_share(p_token_hash bytea); Type: ACL; Schema: public; Owner: -
--

REVOKE ALL ON FUNCTION public.grove_public_share(p_token_hash bytea) FROM PUBLIC;
GRANT ALL ON FUNCTION public.grove_public_share(p_token_hash bytea) TO grove_share;


--
-- Name: FUNCTION grove_public_share_notes(p_token_hash bytea, p_before_created timestamp with time zone, p_before_id uuid, p_limit integer); Type: ACL; Schema: public; Owner: -
--

REVOKE ALL ON FUNCTION public.grove_public_share_notes(p_token_hash bytea, p_before_created timestamp with time zone, p_before_id uuid, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION public.grove_public_share_notes(p_token_hash bytea, p_before_created timestamp with time zone, p_before_id uuid, p_limit integer) TO grove_share;


--
-- Name: FUNCTION grove_queue_enrichment(); Type: ACL; Schema: public; Owner: -
--

REVOKE ALL ON FUNCTION public.grove_queue_enrichment() FROM PUBLIC;


--
-- Name: FUNCTION grove_share_live(p_token_hash bytea); Type: ACL; Schema: public; Owner: -
--

REVOKE ALL ON FUNCTION public.grove_share_live(p_token_hash bytea) FROM PUBLIC;


--
-- Name: FUNCTION grove_track_file_usage(); Type: ACL; Schema: public; Owner: -
--

REVOKE ALL ON FUNCTION public.grove_track_file_usage() FROM PUBLIC;


--
-- Name: FUNCTION grove_track_usage(); Type: ACL; Schema: public; Owner: -
--

REVOKE ALL ON FUNCTION public.grove_track_usage() FROM PUBLIC;


--
-- Name: TABLE account_enrichment; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.account_enrichment TO grove_app;


--
-- Name: TABLE account_owners; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.account_owners TO grove_app;


--
-- Name: TABLE account_quotas; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.account_quotas TO grove_app;


--
-- Name: TABLE account_usage; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.account_usage TO grove_app;


--
-- Name: TABLE accounts; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.accounts TO grove_app;


--
-- Name: COLUMN accounts.deleted_at; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(deleted_at) ON TABLE public.accounts TO grove_app;


--
-- Name: TABLE api_key_lookup; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT ON TABLE public.api_key_lookup TO grove_app;


--
-- Name: TABLE api_keys; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,UPDATE ON TABLE public.api_keys TO grove_app;


--
-- Name: TABLE connection_projects; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.connection_projects TO grove_app;


--
-- Name: TABLE connections; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,UPDATE ON TABLE public.connections TO grove_app;


--
-- Name: TABLE conversation_turns; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT ON TABLE public.conversation_turns TO grove_app;


--
-- Name: COLUMN conversation_turns.status; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(status) ON TABLE public.conversation_turns TO grove_app;


--
-- Name: COLUMN conversation_turns.attempts; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(attempts) ON TABLE public.conversation_turns TO grove_app;


--
-- Name: COLUMN conversation_turns.lease_expires_at; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(lease_expires_at) ON TABLE public.conversation_turns TO grove_app;


--
-- Name: COLUMN conversation_turns.outcome; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(outcome) ON TABLE public.conversation_turns TO grove_app;


--
-- Name: COLUMN conversation_turns.answer_text; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(answer_text) ON TABLE public.conversation_turns TO grove_app;


--
-- Name: COLUMN conversation_turns.answer_format; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(answer_format) ON TABLE public.conversation_turns TO grove_app;


--
-- Name: COLUMN conversation_turns.generator; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(generator) ON TABLE public.conversation_turns TO grove_app;


--
-- Name: COLUMN conversation_turns.citations; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(citations) ON TABLE public.conversation_turns TO grove_app;


--
-- Name: COLUMN conversation_turns.sources; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(sources) ON TABLE public.conversation_turns TO grove_app;


--
-- Name: COLUMN conversation_turns.context_coverage; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(context_coverage) ON TABLE public.conversation_turns TO grove_app;


--
-- Name: COLUMN conversation_turns.error; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(error) ON TABLE public.conversation_turns TO grove_app;


--
-- Name: COLUMN conversation_turns.completed_at; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(completed_at) ON TABLE public.conversation_turns TO grove_app;


--
-- Name: TABLE conversations; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT ON TABLE public.conversations TO grove_app;


--
-- Name: COLUMN conversations.title; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(title) ON TABLE public.conversations TO grove_app;


--
-- Name: COLUMN conversations.version; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(version) ON TABLE public.conversations TO grove_app;


--
-- Name: COLUMN conversations.updated_at; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(updated_at) ON TABLE public.conversations TO grove_app;


--
-- Name: COLUMN conversations.deleted_at; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(deleted_at) ON TABLE public.conversations TO grove_app;


--
-- Name: TABLE embeddings; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,UPDATE ON TABLE public.embeddings TO grove_app;


--
-- Name: TABLE file_chunks; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE ON TABLE public.file_chunks TO grove_app;


--
-- Name: TABLE files; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,UPDATE ON TABLE public.files TO grove_app;


--
-- Name: TABLE identity_tombstones; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT ON TABLE public.identity_tombstones TO grove_app;


--
-- Name: TABLE imports; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,UPDATE ON TABLE public.imports TO grove_app;


--
-- Name: TABLE jobs; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,UPDATE ON TABLE public.jobs TO grove_app;


--
-- Name: TABLE memories; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,UPDATE ON TABLE public.memories TO grove_app;


--
-- Name: TABLE memory_revisions; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT ON TABLE public.memory_revisions TO grove_app;


--
-- Name: TABLE note_bands; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE ON TABLE public.note_bands TO grove_app;


--
-- Name: TABLE note_suggestions; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.note_suggestions TO grove_app;


--
-- Name: TABLE note_words; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.note_words TO grove_app;


--
-- Name: TABLE notebook_briefs; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.notebook_briefs TO grove_app;


--
-- Name: TABLE operation_tombstones; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT ON TABLE public.operation_tombstones TO grove_app;


--
-- Name: TABLE operations; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,UPDATE ON TABLE public.operations TO grove_app;


--
-- Name: TABLE org_members; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.org_members TO grove_app;


--
-- Name: TABLE org_projects; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,UPDATE ON TABLE public.org_projects TO grove_app;


--
-- Name: TABLE orgs; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,UPDATE ON TABLE public.orgs TO grove_app;


--
-- Name: TABLE project_keys; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,UPDATE ON TABLE public.project_keys TO grove_app;


--
-- Name: TABLE project_members; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.project_members TO grove_app;


--
-- Name: TABLE project_memories; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.project_memories TO grove_app;


--
-- Name: TABLE project_memory_audit; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT ON TABLE public.project_memory_audit TO grove_app;


--
-- Name: TABLE projects; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,UPDATE ON TABLE public.projects TO grove_app;


--
-- Name: TABLE rate_limits; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.rate_limits TO grove_app;


--
-- Name: TABLE share_lookup; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT ON TABLE public.share_lookup TO grove_app;


--
-- Name: TABLE shares; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT ON TABLE public.shares TO grove_app;


--
-- Name: COLUMN shares.revoked_at; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(revoked_at) ON TABLE public.shares TO grove_app;


--
-- Name: TABLE turn_proposals; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT ON TABLE public.turn_proposals TO grove_app;


--
-- Name: COLUMN turn_proposals.state; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(state) ON TABLE public.turn_proposals TO grove_app;


--
-- Name: COLUMN turn_proposals.applied; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(applied) ON TABLE public.turn_proposals TO grove_app;


--
-- Name: COLUMN turn_proposals.outcome; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(outcome) ON TABLE public.turn_proposals TO grove_app;


--
-- Name: COLUMN turn_proposals.undo_outcome; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(undo_outcome) ON TABLE public.turn_proposals TO grove_app;


--
-- Name: COLUMN turn_proposals.events; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(events) ON TABLE public.turn_proposals TO grove_app;


--
-- PostgreSQL database dump complete
--

\unrestrict grove

