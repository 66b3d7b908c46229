-- Each posting carries its note's scope (project_id: the notebook, NULL for personal
-- notes) in the primary key's leaf (INCLUDE), so a search of one scope's postings reads
-- them from the index alone instead of joining every posting to its note.
--
-- The near-duplicate warning on save (grove_memory.notes.SIMILAR) reads up to 100
-- postings for each of the saved note's 6 longest words, in the saved note's scope. Joined
-- to memories for the scope, those 600 lookups slowed saves into a 100,000-note account
-- by 19% (bench.ingest --saves-at); filtered in the index they cost a few hundred
-- microseconds.
--
-- The trigger now also fires when a note moves (project_id), and writes the scope with
-- each posting.

ALTER TABLE note_words ADD COLUMN project_id uuid;

ALTER TABLE memories NO FORCE ROW LEVEL SECURITY;
ALTER TABLE note_words NO FORCE ROW LEVEL SECURITY;
UPDATE note_words w SET project_id = m.project_id
FROM memories m
WHERE m.account_id = w.account_id AND m.id = w.memory_id AND m.project_id IS NOT NULL;
ALTER TABLE note_words FORCE ROW LEVEL SECURITY;
ALTER TABLE memories FORCE ROW LEVEL SECURITY;

ALTER TABLE note_words
    DROP CONSTRAINT note_words_pkey,
    ADD PRIMARY KEY (account_id, word, memory_id) INCLUDE (tf, project_id);

CREATE OR REPLACE FUNCTION grove_note_words() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
DECLARE
    before text[] := '{}';
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.deleted_at IS NULL THEN
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

DROP TRIGGER note_words ON memories;
CREATE TRIGGER note_words AFTER INSERT OR UPDATE OF content, deleted_at, project_id ON memories
    FOR EACH ROW EXECUTE FUNCTION grove_note_words();
