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
