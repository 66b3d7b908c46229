-- Near-duplicate candidates for the warning on save (grove_memory.notes.SIMILAR): each
-- note's bands, pairs of its words.
--
-- The warning used to look for notes sharing the saved note's longest words, reading up
-- to 50 postings of each (note_words). A word common in the account (a name in every chat
-- turn) has thousands of postings, and 50 of them in id order are an arbitrary sample: at
-- 100,000 notes a chat turn saved a second time was named as a near-duplicate of the
-- first 5 times in 200 (bench.similar).
--
-- A band is a pair of the note's words: of its 7 words of least hash (a bottom-7 sketch,
-- the note's distinct stemmed words, content_tsv's lexemes, ordered by a fixed hash),
-- each of the 21 pairs, hashed. Two notes whose sets of words have Jaccard similarity J
-- hold about 7J of those words in common among the union's 7 of least hash, so share a
-- band (two of them) with probability about 0.84 at J = 0.4 and nearly surely at
-- J = 0.8, while a pair of words is far rarer in an account than either word. The lookup
-- reads up to 20 postings of each of the saved note's bands (21 index probes). Computing
-- a note's bands costs a fifth to a third of its to_tsvector again.
--
-- Kept like note_words by a trigger on memories, in the writing transaction: a note's
-- bands are written when it is saved and written again when its content, its notebook
-- (each band carries the note's scope, read from the index alone) or its deletion
-- changes. File passages have none: the warning is about saved notes.

CREATE FUNCTION grove_note_bands(lexemes text[]) RETURNS bigint[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog AS $$
    WITH low AS (
        SELECT l.word FROM unnest(lexemes) AS l (word)
        ORDER BY hashtextextended(l.word, 0), l.word LIMIT 7
    )
    SELECT coalesce(array_agg(hashtextextended(a.word || ' ' || b.word, 0)), '{}')
    FROM low AS a JOIN low AS b ON a.word < b.word
$$;

CREATE TABLE note_bands (
    account_id uuid NOT NULL,
    band       bigint NOT NULL,
    memory_id  uuid NOT NULL,
    project_id uuid,
    PRIMARY KEY (account_id, band, memory_id) INCLUDE (project_id)
);

CREATE FUNCTION grove_keep_note_bands() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        -- A correction sets content and project_id whether or not they change: a kind or
        -- retention fix leaves the bands as they are.
        IF NEW.content_tsv = OLD.content_tsv
           AND NEW.project_id IS NOT DISTINCT FROM OLD.project_id
           AND NEW.deleted_at IS NOT DISTINCT FROM OLD.deleted_at THEN
            RETURN NULL;
        END IF;
        DELETE FROM note_bands b WHERE b.account_id = NEW.account_id AND b.memory_id = NEW.id;
    END IF;
    IF NEW.deleted_at IS NULL AND NEW.file_id IS NULL THEN
        INSERT INTO note_bands (account_id, band, memory_id, project_id)
            SELECT NEW.account_id, u.band, NEW.id, NEW.project_id
            FROM unnest(grove_note_bands(tsvector_to_array(NEW.content_tsv))) AS u (band)
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER note_bands AFTER INSERT OR UPDATE OF content, deleted_at, project_id ON memories
    FOR EACH ROW EXECUTE FUNCTION grove_keep_note_bands();

-- Every saved note not forgotten, read as the owner before the policy is forced (12 s for
-- an account of 100,000 notes on two cores).
ALTER TABLE memories NO FORCE ROW LEVEL SECURITY;
INSERT INTO note_bands (account_id, band, memory_id, project_id)
    SELECT m.account_id, u.band, m.id, m.project_id
    FROM memories m
    CROSS JOIN LATERAL unnest(grove_note_bands(tsvector_to_array(m.content_tsv))) AS u (band)
    WHERE m.deleted_at IS NULL AND m.file_id IS NULL
ON CONFLICT DO NOTHING;
ALTER TABLE memories FORCE ROW LEVEL SECURITY;

ALTER TABLE note_bands ENABLE ROW LEVEL SECURITY;
ALTER TABLE note_bands FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant ON note_bands USING (account_id = grove_current_account())
    WITH CHECK (account_id = grove_current_account());
