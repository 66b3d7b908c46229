-- Files count against the account's storage (issue 48 #6): every stored byte of every
-- file version, until purged, is the account's usage of kind 'files' (items: the stored
-- versions that hold any bytes), refused past its byte limit like every other quota
-- (SQLSTATE GQ001, 403 quota_exceeded naming the limit): the account's own
-- (`grove accounts quota --file-bytes`), else the session's grove.quota_file_bytes
-- (GROVE_QUOTA_FILE_BYTES). It is kept by a statement trigger on file_chunks, the bytes
-- themselves, so an upload, an import and a purge all count, and a refused upload's
-- transaction stores nothing.
--
-- The worker purges old versions' bytes after GROVE_FILE_VERSION_RETENTION_DAYS and a
-- deleted file's after the restoration window (grove_worker.sweeps, jobs queued by the
-- upload and the deletion); the files existing now get those jobs here.
--
-- Media types are stored normalised (the accepted type, lower case, no parameters): the
-- rows stored before keep only that.

ALTER TABLE account_usage DROP CONSTRAINT account_usage_kind_check,
    ADD CONSTRAINT account_usage_kind_check
        CHECK (kind IN ('notes', 'passages', 'notebooks', 'shares', 'conversations', 'files'));
ALTER TABLE account_quotas DROP CONSTRAINT account_quotas_kind_check,
    ADD CONSTRAINT account_quotas_kind_check
        CHECK (kind IN ('notes', 'passages', 'notebooks', 'shares', 'conversations', 'files'));

-- As in 0021, with a byte limit for files besides notes, and messages naming each.
CREATE OR REPLACE FUNCTION grove_add_usage(p_account uuid, p_kind text, p_items bigint,
                                           p_bytes bigint)
    RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    used record;
    own record;
    item_limit bigint;
    byte_limit bigint;
BEGIN
    INSERT INTO account_usage AS u (account_id, kind, items, bytes)
        VALUES (p_account, p_kind, p_items, p_bytes)
        ON CONFLICT (account_id, kind)
        DO UPDATE SET items = u.items + excluded.items, bytes = u.bytes + excluded.bytes
        RETURNING u.items, u.bytes INTO used;
    IF p_items <= 0 AND p_bytes <= 0 THEN
        RETURN;
    END IF;
    SELECT q.items, q.bytes INTO own FROM account_quotas q
        WHERE q.account_id = p_account AND q.kind = p_kind;
    item_limit := coalesce(own.items,
        nullif(current_setting('grove.quota_' || p_kind, true), '')::bigint, 0);
    byte_limit := coalesce(own.bytes, CASE p_kind
        WHEN 'notes' THEN nullif(current_setting('grove.quota_note_bytes', true), '')::bigint
        WHEN 'files' THEN nullif(current_setting('grove.quota_file_bytes', true), '')::bigint
        END, 0);
    IF p_items > 0 AND item_limit > 0 AND used.items > item_limit THEN
        RAISE EXCEPTION USING ERRCODE = 'GQ001', MESSAGE = format(
            'this account may hold at most %s %s; remove some first', item_limit,
            CASE p_kind WHEN 'shares' THEN 'unrevoked share links'
                        WHEN 'files' THEN 'stored file versions' ELSE p_kind END);
    END IF;
    IF p_bytes > 0 AND byte_limit > 0 AND used.bytes > byte_limit THEN
        RAISE EXCEPTION USING ERRCODE = 'GQ001', MESSAGE = CASE p_kind
            WHEN 'files' THEN format('this account may hold at most %s bytes of files (every'
                ' version counts until it is purged); delete some first', byte_limit)
            ELSE format('this account may hold at most %s bytes of notes; remove or shorten'
                ' some first', byte_limit) END;
    END IF;
END $$;
REVOKE EXECUTE ON FUNCTION grove_add_usage(uuid, text, bigint, bigint) FROM PUBLIC;

-- A statement's stored (or purged) file bytes per account; a version's first chunk
-- counts it as an item. Chunks are written once and never updated.
CREATE FUNCTION grove_track_file_usage() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    delta record;
BEGIN
    IF TG_OP = 'INSERT' THEN
        FOR delta IN SELECT account_id, count(*) FILTER (WHERE ordinal = 0) AS items,
                            sum(octet_length(data)) AS bytes
                     FROM new_rows GROUP BY account_id LOOP
            PERFORM grove_add_usage(delta.account_id, 'files', delta.items, delta.bytes);
        END LOOP;
    ELSE
        FOR delta IN SELECT account_id, count(*) FILTER (WHERE ordinal = 0) AS items,
                            sum(octet_length(data)) AS bytes
                     FROM old_rows GROUP BY account_id LOOP
            PERFORM grove_add_usage(delta.account_id, 'files', -delta.items, -delta.bytes);
        END LOOP;
    END IF;
    RETURN NULL;
END $$;
REVOKE EXECUTE ON FUNCTION grove_track_file_usage() FROM PUBLIC;

CREATE TRIGGER usage_inserts AFTER INSERT ON file_chunks REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION grove_track_file_usage();
CREATE TRIGGER usage_deletes AFTER DELETE ON file_chunks REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION grove_track_file_usage();

-- Counts, purge jobs and media types of what exists: every account's rows, as the owner.
ALTER TABLE file_chunks NO FORCE ROW LEVEL SECURITY;
ALTER TABLE files NO FORCE ROW LEVEL SECURITY;
ALTER TABLE jobs NO FORCE ROW LEVEL SECURITY;
INSERT INTO account_usage (account_id, kind, items, bytes)
    SELECT account_id, 'files', count(*) FILTER (WHERE ordinal = 0), sum(octet_length(data))
    FROM file_chunks GROUP BY account_id;
-- Deleted files: purged at the end of the 60-day restoration window (queue.py's
-- RESTORATION_WINDOW_DAYS). Old versions: after the default retention of 30 days from
-- now (GROVE_FILE_VERSION_RETENTION_DAYS; their replacement's time is not recorded).
INSERT INTO jobs (account_id, kind, payload, run_after)
    SELECT account_id, 'purge_file', jsonb_build_object('fileId', id),
           deleted_at + make_interval(days => 60)
    FROM files WHERE deleted_at IS NOT NULL;
INSERT INTO jobs (account_id, kind, version, payload, run_after)
    SELECT DISTINCT c.account_id, 'purge_file_version', c.version,
           jsonb_build_object('fileId', c.file_id), now() + make_interval(days => 30)
    FROM file_chunks c JOIN files f ON f.account_id = c.account_id AND f.id = c.file_id
    WHERE c.version < f.version AND f.deleted_at IS NULL;
UPDATE files SET media_type = lower(btrim(split_part(media_type, ';', 1)))
    WHERE media_type <> lower(btrim(split_part(media_type, ';', 1)));
ALTER TABLE jobs FORCE ROW LEVEL SECURITY;
ALTER TABLE files FORCE ROW LEVEL SECURITY;
ALTER TABLE file_chunks FORCE ROW LEVEL SECURITY;
