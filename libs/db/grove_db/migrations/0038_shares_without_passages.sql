-- Public links never show a file's text (issue 48). Passages (0033) are notes of kind
-- 'passage' in their file's scope, so the share functions of 0010 listed them among a
-- shared notebook's members, then and after any later upload, and a note link could
-- name one. No share target publishes a file: a notebook link shows only the notes
-- callers saved in it (file_id IS NULL: a note is a passage exactly when it names a
-- file), and a link to a passage, refused at creation since, answers as an unknown one
-- if an older one exists. CREATE OR REPLACE keeps each function's owner and grants.

-- The index of a shared notebook's members holds no passages: an account may hold
-- 250,000 of them, which a page of the link (or its last-updated time) would otherwise
-- walk past on every anonymous request. It replaces 0022's index, which the share
-- functions were its reason for; a statement counting or searching a notebook's notes,
-- passages included, has memories_live_scope (0012), led by the account as its rows are.
DROP INDEX memories_notebook_created;
CREATE INDEX memories_notebook_saved ON memories (project_id, created_at DESC, id DESC)
    WHERE project_id IS NOT NULL AND file_id IS NULL
      AND deleted_at IS NULL AND archived_at IS NULL;

-- The live share behind a token hash, or no row: unknown, revoked, expired, a deleted
-- account, or a target that is deleted, archived or expired, or a passage. Internal: it
-- sets the tenant for the rest of the calling function, which clears it again before
-- returning.
CREATE OR REPLACE FUNCTION grove_share_live(p_token_hash bytea)
    RETURNS TABLE (share_id uuid, account_id uuid, target_type text, memory_id uuid,
                   project_id uuid, title text, indexable boolean)
    LANGUAGE plpgsql
    SET search_path = public, pg_temp
    AS $$
DECLARE
    found_account uuid;
BEGIN
    PERFORM set_config('grove.account_id', '', true);
    PERFORM set_config('grove.share_lookup', encode(p_token_hash, 'hex'), true);
    SELECT s.account_id INTO found_account FROM shares s
    WHERE s.token_hash = p_token_hash AND s.revoked_at IS NULL
      AND (s.expires_at IS NULL OR s.expires_at > statement_timestamp());
    PERFORM set_config('grove.share_lookup', '', true);
    IF found_account IS NULL THEN
        RETURN;
    END IF;
    PERFORM set_config('grove.account_id', found_account::text, true);
    RETURN QUERY
        SELECT s.id, s.account_id, s.target_type, s.memory_id, s.project_id, s.title, s.indexable
        FROM shares s
        JOIN accounts a ON a.id = s.account_id AND a.deleted_at IS NULL
        LEFT JOIN memories m ON m.id = s.memory_id
        LEFT JOIN projects p ON p.id = s.project_id
        WHERE s.token_hash = p_token_hash
          AND CASE s.target_type
                WHEN 'note' THEN m.file_id IS NULL
                                 AND m.deleted_at IS NULL AND m.archived_at IS NULL
                                 AND (m.expires_at IS NULL
                                      OR m.expires_at > statement_timestamp())
                ELSE p.deleted_at IS NULL AND p.archived_at IS NULL
              END;
END $$;

-- What a reader may see of a live share: its type, title (the share's own, else the
-- notebook's name), whether search engines may index it, and when it last changed (for
-- a notebook, its saved members only: an upload or an extraction changes nothing shown).
CREATE OR REPLACE FUNCTION grove_public_share(p_token_hash bytea)
    RETURNS TABLE (share_id uuid, target_type text, title text, indexable boolean,
                   updated_at timestamptz)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = public, pg_temp
    AS $$
DECLARE
    l record;
BEGIN
    SELECT * INTO l FROM grove_share_live(p_token_hash);
    IF FOUND THEN
        RETURN QUERY
            SELECT l.share_id, l.target_type, coalesce(l.title, p.name), l.indexable,
                   CASE l.target_type
                       WHEN 'note' THEN m.updated_at
                       ELSE greatest(p.updated_at,
                                     (SELECT max(n.updated_at) FROM memories n
                                      WHERE n.project_id = l.project_id
                                        AND n.file_id IS NULL
                                        AND n.deleted_at IS NULL AND n.archived_at IS NULL
                                        AND (n.expires_at IS NULL
                                             OR n.expires_at > statement_timestamp())))
                   END
            FROM (SELECT 1) AS one
            LEFT JOIN memories m ON m.id = l.memory_id
            LEFT JOIN projects p ON p.id = l.project_id;
    END IF;
    PERFORM set_config('grove.account_id', '', true);
END $$;

-- The notes a live share shows: the one note of a note share (grove_share_live checked
-- it is live and no passage); the live direct members of a notebook share that callers
-- saved (never its files' passages), newest first, after the keyset (p_before_created,
-- p_before_id) when given, at most 51 (sub-notebooks' notes are not included).
CREATE OR REPLACE FUNCTION grove_public_share_notes(
        p_token_hash bytea, p_before_created timestamptz, p_before_id uuid, p_limit integer)
    RETURNS TABLE (id uuid, kind text, content text, created_at timestamptz,
                   updated_at timestamptz)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = public, pg_temp
    AS $$
DECLARE
    l record;
BEGIN
    SELECT * INTO l FROM grove_share_live(p_token_hash);
    IF FOUND AND l.target_type = 'note' THEN
        RETURN QUERY
            SELECT m.id, m.kind, m.content, m.created_at, m.updated_at
            FROM memories m
            WHERE m.id = l.memory_id AND p_before_created IS NULL;
    ELSIF FOUND THEN
        -- Saved live direct members, by the memories_notebook_saved index.
        RETURN QUERY
            SELECT m.id, m.kind, m.content, m.created_at, m.updated_at
            FROM memories m
            WHERE m.project_id = l.project_id AND m.file_id IS NULL
              AND m.deleted_at IS NULL AND m.archived_at IS NULL
              AND (m.expires_at IS NULL OR m.expires_at > statement_timestamp())
              AND (p_before_created IS NULL
                   OR (m.created_at, m.id) < (p_before_created, p_before_id))
            ORDER BY m.created_at DESC, m.id DESC
            LIMIT least(greatest(p_limit, 1), 51);
    END IF;
    PERFORM set_config('grove.account_id', '', true);
END $$;
