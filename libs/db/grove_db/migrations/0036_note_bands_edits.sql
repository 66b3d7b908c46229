-- A note's bands (migration 0035) are deleted by their keys when its content, notebook or
-- deletion changes.
--
-- The trigger deleted them by account and note, which the bands' primary key (account,
-- band, note) does not lead with: PostgreSQL skipped through every band of the account
-- for them (1,847 index searches and 90 ms at 100,000 notes, so an edit took 40 ms). The
-- old bands are the old content's: computed again, they are deleted through the primary
-- key, 21 probes. A note forgotten or a file passage has none to delete.

CREATE OR REPLACE FUNCTION grove_keep_note_bands() RETURNS trigger
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
        IF OLD.deleted_at IS NULL AND OLD.file_id IS NULL THEN
            DELETE FROM note_bands b
            WHERE b.account_id = OLD.account_id
              AND b.band = ANY(grove_note_bands(tsvector_to_array(OLD.content_tsv)))
              AND b.memory_id = OLD.id;
        END IF;
    END IF;
    IF NEW.deleted_at IS NULL AND NEW.file_id IS NULL THEN
        INSERT INTO note_bands (account_id, band, memory_id, project_id)
            SELECT NEW.account_id, u.band, NEW.id, NEW.project_id
            FROM unnest(grove_note_bands(tsvector_to_array(NEW.content_tsv))) AS u (band)
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$;
