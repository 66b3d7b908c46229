-- What a Citus cluster refused of the schema (grove migrate --citus, docs/scaling.md),
-- changed so that it works the same on one server and on the cluster.
--
-- The schema owner's policy on accounts (0002) asks pg_class for the table's owner in a
-- subquery. Citus refuses a policy with a subquery on a distributed or reference table,
-- and accounts is a reference table on a Citus cluster (grove migrate --citus,
-- docs/scaling.md), so the question moves into a function, which the policy calls: the
-- same answer on one server and on every node.

CREATE FUNCTION grove_owns_schema() RETURNS boolean
    LANGUAGE sql STABLE
    AS $$ SELECT pg_has_role(current_user,
                             (SELECT relowner FROM pg_class WHERE oid = 'accounts'::regclass),
                             'MEMBER') $$;

DROP POLICY owner_lists ON accounts;
CREATE POLICY owner_lists ON accounts FOR SELECT USING (grove_owns_schema());

-- The notes' statement-level insert triggers (0036) wrote postings and bands with one
-- INSERT … SELECT reading the transition table. On a Citus cluster the trigger runs on
-- the account's shard, and an INSERT into a distributed table (note_words, note_bands)
-- that reads a transition table fails there ("executor could not find named tuplestore"):
-- Citus plans it again without the trigger's tables. The rows are now read into arrays
-- by a plain local SELECT first, then inserted from the arrays: one statement each, as
-- before, on one server and on a shard.

CREATE OR REPLACE FUNCTION grove_note_bands_inserted() RETURNS trigger
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

CREATE OR REPLACE FUNCTION grove_note_words_inserted() RETURNS trigger
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

-- The enrichment trigger (0034) notifies the workers when it queues a job. On a Citus
-- cluster it runs on the shard's node, where no worker listens, and a transaction that
-- has sent a NOTIFY cannot be prepared for the two-phase commit Citus uses when a save
-- touches more than one node ("cannot PREPARE a transaction that has executed ...
-- NOTIFY"): there it queues without notifying.

CREATE OR REPLACE FUNCTION grove_queue_enrichment() RETURNS trigger
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
