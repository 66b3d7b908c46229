-- Enrichment (issue 23): classification suggestions for notes saved without a notebook,
-- and a brief of each notebook, written by fenced worker jobs (grove_memory.enrichment).
--
-- Both are source-linked artifacts: a suggestion names the note revision it was made
-- for and the notes that support it; a brief names the notebook's notes (id, version)
-- it was made from (its fingerprint) and quotes them. They are never applied: a
-- suggestion is shown only while its note is live, unfiled and at that version, a brief's
-- quotes only while the notes they cite are live in the notebook at those versions.
-- Hard deletes cascade (a purged note, a purged notebook).
--
-- Jobs are queued by triggers on memories, so every write path (saves, batches,
-- imports, proposals, subtree operations, sweeps, account deletion) keeps them current:
-- one queued `classify_notes` job per account while it has unfiled notes without a
-- suggestion for their version, and one queued `brief_notebook` job per notebook whose
-- notes changed (a short delay gathers a burst of saves into one brief).

CREATE TABLE note_suggestions (
    account_id  uuid NOT NULL,
    memory_id   uuid NOT NULL,
    version     integer NOT NULL CHECK (version >= 1),
    kind        text CHECK (kind IN ('preference', 'fact', 'decision', 'solution', 'handoff')),
    project_id  uuid,
    confidence  real NOT NULL CHECK (confidence BETWEEN 0 AND 1),
    evidence    jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(evidence) = 'array'),
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, memory_id),
    FOREIGN KEY (account_id, memory_id) REFERENCES memories (account_id, id) ON DELETE CASCADE,
    FOREIGN KEY (account_id, project_id) REFERENCES projects (account_id, id) ON DELETE CASCADE
);
CREATE INDEX note_suggestions_project ON note_suggestions (account_id, project_id)
    WHERE project_id IS NOT NULL;

CREATE TABLE notebook_briefs (
    account_id   uuid NOT NULL,
    project_id   uuid NOT NULL,
    fingerprint  text NOT NULL,
    notes        integer NOT NULL CHECK (notes >= 0),
    text         text NOT NULL CHECK (char_length(text) <= 4000),
    citations    jsonb NOT NULL CHECK (jsonb_typeof(citations) = 'array'),
    generator    text NOT NULL CHECK (char_length(generator) BETWEEN 1 AND 50),
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, project_id),
    FOREIGN KEY (account_id, project_id) REFERENCES projects (account_id, id) ON DELETE CASCADE
);

-- Enrichment runs of an account per UTC day, against GROVE_ENRICH_DAILY_QUOTA.
CREATE TABLE account_enrichment (
    account_id  uuid NOT NULL,
    day         date NOT NULL,
    used        integer NOT NULL DEFAULT 0 CHECK (used >= 0),
    PRIMARY KEY (account_id, day)
);

ALTER TABLE note_suggestions ENABLE ROW LEVEL SECURITY;
ALTER TABLE note_suggestions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant ON note_suggestions
    USING (account_id = grove_current_account())
    WITH CHECK (account_id = grove_current_account());
ALTER TABLE notebook_briefs ENABLE ROW LEVEL SECURITY;
ALTER TABLE notebook_briefs FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant ON notebook_briefs
    USING (account_id = grove_current_account())
    WITH CHECK (account_id = grove_current_account());
ALTER TABLE account_enrichment ENABLE ROW LEVEL SECURITY;
ALTER TABLE account_enrichment FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant ON account_enrichment
    USING (account_id = grove_current_account())
    WITH CHECK (account_id = grove_current_account());

-- At most one queued enrichment job per account (classification) and per notebook (brief).
CREATE UNIQUE INDEX jobs_enrichment_queued
    ON jobs (account_id, kind, (coalesce(payload->>'notebookId', '')))
    WHERE status = 'queued' AND kind IN ('classify_notes', 'brief_notebook');

-- Queue the enrichment a statement's changes to notes call for. Passages are not notes
-- here: they are neither classified nor in briefs.
CREATE FUNCTION grove_queue_enrichment() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
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
    IF queued + more > 0 THEN
        PERFORM pg_notify('grove_jobs', '');
    END IF;
    RETURN NULL;
END $$;

REVOKE EXECUTE ON FUNCTION grove_queue_enrichment() FROM PUBLIC;

CREATE TRIGGER enrichment_inserts AFTER INSERT ON memories REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION grove_queue_enrichment();
CREATE TRIGGER enrichment_updates AFTER UPDATE ON memories
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION grove_queue_enrichment();
CREATE TRIGGER enrichment_deletes AFTER DELETE ON memories REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION grove_queue_enrichment();
