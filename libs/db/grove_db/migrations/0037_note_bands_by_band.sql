-- The near-duplicate bands (0035, 0036) indexed by the band alone, each band hashed with
-- its note's scope, and by the note: the same lookups for under half the bands' WAL.
--
-- note_bands' primary key (account, band, note) INCLUDE (notebook) held 68 bytes an
-- entry, 176 MB at 100,000 notes. A save inserts 21 entries at random places in it, and
-- after each checkpoint the first change to each of its pages copies the whole page into
-- the WAL: saves into a 100,000-note account wrote 119-120 KB of WAL each against 67-69
-- KB without the bands, and ran 2-5% slower (bench.ingest --saves-at).
--
-- A band is now hashed with its note's scope (the notebook's id, or the account's for
-- personal notes: ids are unique across both), so that its rows are the scope's notes
-- sharing that pair of words and nothing else, and the index is on the band alone: the
-- account, notebook and note are read from the row. B-tree deduplication keeps a band
-- once with its rows, and a save's 21 rows are appended together. A note's own rows
-- (which an edit deletes) are found by a second index, on the note: its 21 entries land
-- on one page. In process, saves into 100,000 notes wrote 85-91 KB of WAL each and took
-- 1.35-1.47 ms, against 119-120 KB and 1.42-1.62 ms with the old key and 1.26-1.30 ms
-- without bands (three rounds of 2,000 saves, each from a checkpoint).
--
-- The rows have no primary key: nothing looks one up but by its band or its note. Every
-- band is computed again, for the new hash.

DROP TRIGGER note_bands ON memories;
DROP TRIGGER note_bands_inserts ON memories;
DROP TABLE note_bands;
DROP FUNCTION grove_keep_note_bands();
DROP FUNCTION grove_note_bands_inserted();
DROP FUNCTION grove_note_bands(text[]);

-- A note's bands: of its 7 words of least hash, each of the 21 pairs, hashed with the
-- note's scope, its notebook (project) or, for a personal note, its account.
CREATE FUNCTION grove_note_bands(account uuid, project uuid, lexemes text[]) RETURNS bigint[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog AS $$
    WITH low AS (
        SELECT l.word FROM unnest(lexemes) AS l (word)
        ORDER BY hashtextextended(l.word, 0), l.word LIMIT 7
    )
    SELECT coalesce(array_agg(hashtextextended(a.word || ' ' || b.word,
                                               uuid_hash_extended(coalesce(project, account), 0))),
                    '{}')
    FROM low AS a JOIN low AS b ON a.word < b.word
$$;

CREATE TABLE note_bands (
    account_id uuid NOT NULL,
    band       bigint NOT NULL,
    memory_id  uuid NOT NULL,
    project_id uuid
);

CREATE FUNCTION grove_note_bands_inserted() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
BEGIN
    INSERT INTO note_bands (account_id, band, memory_id, project_id)
        SELECT DISTINCT n.account_id, u.band, n.id, n.project_id
        FROM new_rows n
        CROSS JOIN LATERAL unnest(grove_note_bands(n.account_id, n.project_id,
                                                   tsvector_to_array(n.content_tsv))) AS u (band)
        WHERE n.deleted_at IS NULL AND n.file_id IS NULL;
    RETURN NULL;
END $$;

CREATE FUNCTION grove_keep_note_bands() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
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

-- Every saved note not forgotten, read as the owner before the policy is forced, then
-- the index built over them.
ALTER TABLE memories NO FORCE ROW LEVEL SECURITY;
INSERT INTO note_bands (account_id, band, memory_id, project_id)
    SELECT DISTINCT m.account_id, u.band, m.id, m.project_id
    FROM memories m
    CROSS JOIN LATERAL unnest(grove_note_bands(m.account_id, m.project_id,
                                               tsvector_to_array(m.content_tsv))) AS u (band)
    WHERE m.deleted_at IS NULL AND m.file_id IS NULL;
ALTER TABLE memories FORCE ROW LEVEL SECURITY;
CREATE INDEX note_bands_band ON note_bands (band);
CREATE INDEX note_bands_memory ON note_bands (memory_id);

-- Logical replication (a Citus shard move, an upgrade by replication) finds a deleted row
-- by all its columns.
ALTER TABLE note_bands REPLICA IDENTITY FULL;
ALTER TABLE note_bands ENABLE ROW LEVEL SECURITY;
ALTER TABLE note_bands FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant ON note_bands USING (account_id = grove_current_account())
    WITH CHECK (account_id = grove_current_account());

CREATE TRIGGER note_bands AFTER UPDATE OF content, deleted_at, project_id ON memories
    FOR EACH ROW
    WHEN (OLD.content_tsv IS DISTINCT FROM NEW.content_tsv
          OR OLD.project_id IS DISTINCT FROM NEW.project_id
          OR OLD.deleted_at IS DISTINCT FROM NEW.deleted_at)
    EXECUTE FUNCTION grove_keep_note_bands();
CREATE TRIGGER note_bands_inserts AFTER INSERT ON memories
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION grove_note_bands_inserted();
