-- Passages (issue 23): a file's text, extracted by a fenced job (grove_memory.passages)
-- and split into passages of bounded size, stored as notes of kind 'passage' that name
-- their file, its version and their span in it. As notes they are embedded, indexed for
-- BM25 (note_words) and found by search, recall and Ask like any other, in the file's
-- scope; they are written only by extraction and follow their file: deleted, archived and
-- moved with it, and replaced when a new version is uploaded.
--
-- Their usage is counted apart from notes (account_usage kind 'passages', with its own
-- quota): grove_track_usage takes an optional fourth argument, an expression giving each
-- row's kind.

ALTER TABLE memories
    ADD COLUMN file_id uuid,
    ADD COLUMN file_version integer CHECK (file_version >= 1),
    ADD COLUMN file_span jsonb,
    DROP CONSTRAINT memories_kind_check,
    ADD CONSTRAINT memories_kind_check
        CHECK (kind IN ('preference', 'fact', 'decision', 'solution', 'handoff', 'passage')),
    ADD CONSTRAINT memories_passage_check CHECK (
        (kind = 'passage') = (file_id IS NOT NULL)
        AND (file_id IS NULL) = (file_version IS NULL)
        AND (file_id IS NULL) = (file_span IS NULL)),
    ADD CONSTRAINT memories_file_fkey
        FOREIGN KEY (account_id, file_id) REFERENCES files (account_id, id);

-- A file's passages, for the cascades and the listing's counts.
CREATE INDEX memories_file ON memories (account_id, file_id, file_version)
    WHERE file_id IS NOT NULL;

-- The extraction's state beyond `indexing`: why it failed, and how many passages it made.
ALTER TABLE files
    ADD COLUMN indexing_error text CHECK (char_length(indexing_error) <= 500),
    ADD COLUMN passages integer NOT NULL DEFAULT 0 CHECK (passages >= 0);

ALTER TABLE account_usage DROP CONSTRAINT account_usage_kind_check,
    ADD CONSTRAINT account_usage_kind_check
        CHECK (kind IN ('notes', 'passages', 'notebooks', 'shares', 'conversations'));
ALTER TABLE account_quotas DROP CONSTRAINT account_quotas_kind_check,
    ADD CONSTRAINT account_quotas_kind_check
        CHECK (kind IN ('notes', 'passages', 'notebooks', 'shares', 'conversations'));

CREATE OR REPLACE FUNCTION grove_track_usage() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
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

DROP TRIGGER usage_inserts ON memories;
DROP TRIGGER usage_updates ON memories;
DROP TRIGGER usage_deletes ON memories;
CREATE TRIGGER usage_inserts AFTER INSERT ON memories REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION grove_track_usage('notes', 'deleted_at IS NULL',
        'octet_length(content)', 'CASE WHEN file_id IS NULL THEN ''notes'' ELSE ''passages'' END');
CREATE TRIGGER usage_updates AFTER UPDATE ON memories
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION grove_track_usage('notes', 'deleted_at IS NULL',
        'octet_length(content)', 'CASE WHEN file_id IS NULL THEN ''notes'' ELSE ''passages'' END');
CREATE TRIGGER usage_deletes AFTER DELETE ON memories REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION grove_track_usage('notes', 'deleted_at IS NULL',
        'octet_length(content)', 'CASE WHEN file_id IS NULL THEN ''notes'' ELSE ''passages'' END');

-- Files uploaded before extraction existed are extracted now: their jobs are queued
-- (the worker embeds their passages for its own profile) and they are pending.
ALTER TABLE files ALTER COLUMN indexing SET DEFAULT 'pending';
ALTER TABLE files NO FORCE ROW LEVEL SECURITY;
ALTER TABLE jobs NO FORCE ROW LEVEL SECURITY;
INSERT INTO jobs (account_id, kind, version, payload)
    SELECT account_id, 'extract_file', version, jsonb_build_object('fileId', id)
    FROM files WHERE deleted_at IS NULL AND indexing = 'disabled';
UPDATE files SET indexing = 'pending' WHERE deleted_at IS NULL AND indexing = 'disabled';
ALTER TABLE jobs FORCE ROW LEVEL SECURITY;
ALTER TABLE files FORCE ROW LEVEL SECURITY;
