-- The postings (note_words) and bands (note_bands) of new notes are inserted once a
-- statement, for every note it inserted, by statement-level triggers.
--
-- Both were row-level triggers that, for each new note, ran a DELETE of the postings it
-- could not have yet, then inserted its rows with ON CONFLICT, which PostgreSQL runs as a
-- speculative insertion (a probe of the primary key before each row, then a second WAL
-- record to confirm it). A note just inserted has no postings or bands, so there is
-- nothing to delete and nothing to conflict with; and an import's statement of 100 notes
-- ran each trigger 100 times. Now each trigger runs one INSERT over the statement's new
-- notes (their bands made distinct: two pairs of words could hash alike). Edits keep the
-- row-level triggers, which now fire on updates only, and the postings' one also leaves
-- a note's postings alone when an update changes neither its words, its notebook nor its
-- deletion (a kind or retention fix), as the bands' does (0035).

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
    IF NEW.content_tsv = OLD.content_tsv
       AND NEW.project_id IS NOT DISTINCT FROM OLD.project_id
       AND NEW.deleted_at IS NOT DISTINCT FROM OLD.deleted_at THEN
        RETURN NULL;
    END IF;
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
    -- A correction sets content and project_id whether or not they change: a kind or
    -- retention fix leaves the bands as they are.
    IF NEW.content_tsv = OLD.content_tsv
       AND NEW.project_id IS NOT DISTINCT FROM OLD.project_id
       AND NEW.deleted_at IS NOT DISTINCT FROM OLD.deleted_at THEN
        RETURN NULL;
    END IF;
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
    FOR EACH ROW EXECUTE FUNCTION grove_note_words();
CREATE TRIGGER note_words_inserts AFTER INSERT ON memories
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION grove_note_words_inserted();

DROP TRIGGER note_bands ON memories;
CREATE TRIGGER note_bands AFTER UPDATE OF content, deleted_at, project_id ON memories
    FOR EACH ROW EXECUTE FUNCTION grove_keep_note_bands();
CREATE TRIGGER note_bands_inserts AFTER INSERT ON memories
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION grove_note_bands_inserted();
