-- The triggers that keep a note's postings (note_words) and bands (note_bands, 0035):
-- new notes' rows a statement at a time, an edit's old bands deleted by their keys, and
-- nothing done for an edit that changes neither the words, the notebook nor the deletion.
--
-- Edits. 0035's trigger deleted a note's old bands by account and note, which the bands'
-- primary key (account, band, note) does not lead with: PostgreSQL skipped through every
-- band of the account for them (1,847 index searches and 90 ms at 100,000 notes, so an
-- edit took 40 ms). The old bands are the old content's: computed again, they are deleted
-- through the primary key, 21 probes. A note forgotten or a file passage has none.
--
-- New notes. Both were row-level triggers that, for each new note, ran a DELETE of the
-- postings it could not have yet, then inserted its rows with ON CONFLICT, which
-- PostgreSQL runs as a speculative insertion (a probe of the primary key before each row,
-- then a second WAL record to confirm it), and an import's statement of 100 notes ran
-- each trigger 100 times. A note just inserted has no postings or bands: statement-level
-- triggers run one INSERT each over the statement's new notes (their bands made
-- distinct: two pairs of words could hash alike).
--
-- Unchanged notes. A correction sets content and project_id whether or not they change:
-- the row-level triggers, now on updates only, fire only when the words (content_tsv),
-- the notebook or the deletion did change, so a kind or retention fix runs neither.

CREATE FUNCTION grove_note_words_inserted() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
BEGIN
    INSERT INTO note_words (account_id, word, memory_id, tf, project_id)
        SELECT n.account_id, u.lexeme, n.id,
               least(coalesce(array_length(u.positions, 1), 1), 32767), n.project_id
        FROM new_rows n CROSS JOIN LATERAL unnest(n.content_tsv) AS u
        WHERE n.deleted_at IS NULL;
    RETURN NULL;
END $$;

CREATE FUNCTION grove_note_bands_inserted() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
BEGIN
    INSERT INTO note_bands (account_id, band, memory_id, project_id)
        SELECT DISTINCT n.account_id, u.band, n.id, n.project_id
        FROM new_rows n
        CROSS JOIN LATERAL unnest(grove_note_bands(tsvector_to_array(n.content_tsv))) AS u (band)
        WHERE n.deleted_at IS NULL AND n.file_id IS NULL;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION grove_note_words() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
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

CREATE OR REPLACE FUNCTION grove_keep_note_bands() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
BEGIN
    IF OLD.deleted_at IS NULL AND OLD.file_id IS NULL THEN
        DELETE FROM note_bands b
        WHERE b.account_id = OLD.account_id
          AND b.band = ANY(grove_note_bands(tsvector_to_array(OLD.content_tsv)))
          AND b.memory_id = OLD.id;
    END IF;
    IF NEW.deleted_at IS NULL AND NEW.file_id IS NULL THEN
        INSERT INTO note_bands (account_id, band, memory_id, project_id)
            SELECT NEW.account_id, u.band, NEW.id, NEW.project_id
            FROM unnest(grove_note_bands(tsvector_to_array(NEW.content_tsv))) AS u (band)
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$;

DROP TRIGGER note_words ON memories;
CREATE TRIGGER note_words AFTER UPDATE OF content, deleted_at, project_id ON memories
    FOR EACH ROW
    WHEN (OLD.content_tsv IS DISTINCT FROM NEW.content_tsv
          OR OLD.project_id IS DISTINCT FROM NEW.project_id
          OR OLD.deleted_at IS DISTINCT FROM NEW.deleted_at)
    EXECUTE FUNCTION grove_note_words();
CREATE TRIGGER note_words_inserts AFTER INSERT ON memories
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION grove_note_words_inserted();

DROP TRIGGER note_bands ON memories;
CREATE TRIGGER note_bands AFTER UPDATE OF content, deleted_at, project_id ON memories
    FOR EACH ROW
    WHEN (OLD.content_tsv IS DISTINCT FROM NEW.content_tsv
          OR OLD.project_id IS DISTINCT FROM NEW.project_id
          OR OLD.deleted_at IS DISTINCT FROM NEW.deleted_at)
    EXECUTE FUNCTION grove_keep_note_bands();
CREATE TRIGGER note_bands_inserts AFTER INSERT ON memories
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION grove_note_bands_inserted();
