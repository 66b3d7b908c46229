-- Postings for lexical search: which stemmed words each note has (notes not forgotten).
--
-- Under row-level security PostgreSQL never used memories' GIN index for `@@`: the
-- tsquery match (ts_match_vq) is not leakproof, so the planner must apply the tenant
-- policy first and the match after, on every one of the account's notes (~100 ms at
-- 100,000 notes, whatever the query). B-tree equality on text is leakproof, so postings
-- keyed (account_id, word) are found through their index under the same policy, and BM25
-- reads only the query's words. Note ids are random (uuid4), so a word's postings in id
-- order are a uniform sample of its notes: the position of the k-th id estimates how many
-- notes have a word without reading them all (grove_memory.recall).
--
-- Kept by a trigger on memories from content_tsv, in the writing transaction: a note's
-- words are added when it is saved, changed with its content, and removed when it is
-- forgotten (deleted_at set). Archived and expired notes keep theirs; readers join the
-- note for what is visible. The GIN index goes: nothing that runs under RLS could use it,
-- and every save paid for it.

CREATE TABLE note_words (
    account_id uuid NOT NULL,
    word       text NOT NULL,
    memory_id  uuid NOT NULL,
    PRIMARY KEY (account_id, word, memory_id)
);

CREATE FUNCTION grove_note_words() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
DECLARE
    before text[] := '{}';
    after text[] := '{}';
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.deleted_at IS NULL THEN
        before := tsvector_to_array(OLD.content_tsv);
    END IF;
    IF NEW.deleted_at IS NULL THEN
        after := tsvector_to_array(NEW.content_tsv);
    END IF;
    DELETE FROM note_words w
        WHERE w.account_id = NEW.account_id AND w.memory_id = NEW.id
          AND w.word = ANY(before) AND NOT w.word = ANY(after);
    INSERT INTO note_words (account_id, word, memory_id)
        SELECT NEW.account_id, a.word, NEW.id FROM unnest(after) AS a (word)
        WHERE NOT a.word = ANY(before);
    RETURN NULL;
END $$;

CREATE TRIGGER note_words AFTER INSERT OR UPDATE OF content, deleted_at ON memories
    FOR EACH ROW EXECUTE FUNCTION grove_note_words();

-- Every note not forgotten, read as the owner before the policy is forced.
ALTER TABLE memories NO FORCE ROW LEVEL SECURITY;
INSERT INTO note_words (account_id, word, memory_id)
    SELECT m.account_id, w.word, m.id
    FROM memories m CROSS JOIN LATERAL unnest(tsvector_to_array(m.content_tsv)) AS w (word)
    WHERE m.deleted_at IS NULL;
ALTER TABLE memories FORCE ROW LEVEL SECURITY;

ALTER TABLE note_words ENABLE ROW LEVEL SECURITY;
ALTER TABLE note_words FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant ON note_words USING (account_id = grove_current_account())
    WITH CHECK (account_id = grove_current_account());

DROP INDEX memories_tsv;
