-- Per-account quotas, counted and enforced by PostgreSQL on every path that stores.
--
-- account_usage holds, per account and kind, how many live items the account stores (and,
-- for notes, their UTF-8 bytes): notes (not forgotten; archived ones count), notebooks
-- (not deleted), shares (not revoked) and conversations (not deleted). Statement-level
-- triggers keep it exact from each statement's transition tables; a statement that adds
-- items takes the account's row for that kind until it commits, so two concurrent saves
-- count each other. When a statement grows a count past its limit it fails with SQLSTATE
-- GQ001 (grove_db turns it into 403 quota_exceeded, the limit in the message) and the
-- transaction stores nothing.
--
-- A limit is the account's own (account_quotas, set by `grove accounts quota`), else the
-- connection's default: the service sets grove.quota_<kind> (and grove.quota_note_bytes)
-- for its sessions from its settings. 0 or unset: no limit. Shrinking never fails, so an
-- account whose limit was lowered below its usage can still forget, revoke and delete.

CREATE TABLE account_usage (
    account_id uuid NOT NULL REFERENCES accounts (id),
    kind       text NOT NULL CHECK (kind IN ('notes', 'notebooks', 'shares', 'conversations')),
    items      bigint NOT NULL DEFAULT 0,
    bytes      bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (account_id, kind)
);

CREATE TABLE account_quotas (
    account_id uuid NOT NULL REFERENCES accounts (id),
    kind       text NOT NULL CHECK (kind IN ('notes', 'notebooks', 'shares', 'conversations')),
    items      bigint CHECK (items >= 0),
    bytes      bigint CHECK (bytes >= 0),
    PRIMARY KEY (account_id, kind)
);

-- Counts before the triggers exist: read every account's rows as the owner.
ALTER TABLE memories NO FORCE ROW LEVEL SECURITY;
ALTER TABLE projects NO FORCE ROW LEVEL SECURITY;
ALTER TABLE shares NO FORCE ROW LEVEL SECURITY;
ALTER TABLE conversations NO FORCE ROW LEVEL SECURITY;
INSERT INTO account_usage (account_id, kind, items, bytes)
    SELECT account_id, 'notes', count(*), coalesce(sum(octet_length(content)), 0)
    FROM memories WHERE deleted_at IS NULL GROUP BY account_id
    UNION ALL
    SELECT account_id, 'notebooks', count(*), 0
    FROM projects WHERE deleted_at IS NULL GROUP BY account_id
    UNION ALL
    SELECT account_id, 'shares', count(*), 0
    FROM shares WHERE revoked_at IS NULL GROUP BY account_id
    UNION ALL
    SELECT account_id, 'conversations', count(*), 0
    FROM conversations WHERE deleted_at IS NULL GROUP BY account_id;
ALTER TABLE memories FORCE ROW LEVEL SECURITY;
ALTER TABLE projects FORCE ROW LEVEL SECURITY;
ALTER TABLE shares FORCE ROW LEVEL SECURITY;
ALTER TABLE conversations FORCE ROW LEVEL SECURITY;

ALTER TABLE account_usage ENABLE ROW LEVEL SECURITY;
ALTER TABLE account_usage FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant ON account_usage USING (account_id = grove_current_account());
ALTER TABLE account_quotas ENABLE ROW LEVEL SECURITY;
ALTER TABLE account_quotas FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant ON account_quotas USING (account_id = grove_current_account());

-- Add to one account's count of one kind; refuse growth past the limit.
CREATE FUNCTION grove_add_usage(p_account uuid, p_kind text, p_items bigint, p_bytes bigint)
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
    byte_limit := coalesce(own.bytes, CASE WHEN p_kind = 'notes' THEN
        nullif(current_setting('grove.quota_note_bytes', true), '')::bigint END, 0);
    IF p_items > 0 AND item_limit > 0 AND used.items > item_limit THEN
        RAISE EXCEPTION USING ERRCODE = 'GQ001', MESSAGE = format(
            'this account may hold at most %s %s; remove some first', item_limit,
            CASE p_kind WHEN 'shares' THEN 'unrevoked share links' ELSE p_kind END);
    END IF;
    IF p_bytes > 0 AND byte_limit > 0 AND used.bytes > byte_limit THEN
        RAISE EXCEPTION USING ERRCODE = 'GQ001', MESSAGE = format(
            'this account may hold at most %s bytes of notes; remove or shorten some first',
            byte_limit);
    END IF;
END $$;
REVOKE EXECUTE ON FUNCTION grove_add_usage(uuid, text, bigint, bigint) FROM PUBLIC;

-- The statement's change of live items per account: TG_ARGV = kind, the live condition,
-- the bytes expression (the transition tables are new_rows and/or old_rows).
CREATE FUNCTION grove_track_usage() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    parts text[] := '{}';
    delta record;
BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        parts := parts || format('SELECT account_id, 1 AS items, %s AS bytes FROM new_rows'
                                 ' WHERE %s', TG_ARGV[2], TG_ARGV[1]);
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        parts := parts || format('SELECT account_id, -1, -(%s) FROM old_rows WHERE %s',
                                 TG_ARGV[2], TG_ARGV[1]);
    END IF;
    FOR delta IN EXECUTE
        'SELECT account_id, sum(items)::bigint AS items, sum(bytes)::bigint AS bytes FROM ('
        || array_to_string(parts, ' UNION ALL ') || ') d GROUP BY account_id'
    LOOP
        IF delta.items <> 0 OR delta.bytes <> 0 THEN
            PERFORM grove_add_usage(delta.account_id, TG_ARGV[0], delta.items, delta.bytes);
        END IF;
    END LOOP;
    RETURN NULL;
END $$;
-- Triggers fire whoever writes; nobody calls this directly.
REVOKE EXECUTE ON FUNCTION grove_track_usage() FROM PUBLIC;

CREATE TRIGGER usage_inserts AFTER INSERT ON memories REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT
    EXECUTE FUNCTION grove_track_usage('notes', 'deleted_at IS NULL', 'octet_length(content)');
CREATE TRIGGER usage_updates AFTER UPDATE ON memories
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION grove_track_usage('notes', 'deleted_at IS NULL', 'octet_length(content)');
CREATE TRIGGER usage_deletes AFTER DELETE ON memories REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT
    EXECUTE FUNCTION grove_track_usage('notes', 'deleted_at IS NULL', 'octet_length(content)');

CREATE TRIGGER usage_inserts AFTER INSERT ON projects REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION grove_track_usage('notebooks', 'deleted_at IS NULL', '0');
CREATE TRIGGER usage_updates AFTER UPDATE ON projects
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION grove_track_usage('notebooks', 'deleted_at IS NULL', '0');
CREATE TRIGGER usage_deletes AFTER DELETE ON projects REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION grove_track_usage('notebooks', 'deleted_at IS NULL', '0');

CREATE TRIGGER usage_inserts AFTER INSERT ON shares REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION grove_track_usage('shares', 'revoked_at IS NULL', '0');
CREATE TRIGGER usage_updates AFTER UPDATE ON shares
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION grove_track_usage('shares', 'revoked_at IS NULL', '0');
CREATE TRIGGER usage_deletes AFTER DELETE ON shares REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION grove_track_usage('shares', 'revoked_at IS NULL', '0');

CREATE TRIGGER usage_inserts AFTER INSERT ON conversations REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT
    EXECUTE FUNCTION grove_track_usage('conversations', 'deleted_at IS NULL', '0');
CREATE TRIGGER usage_updates AFTER UPDATE ON conversations
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION grove_track_usage('conversations', 'deleted_at IS NULL', '0');
CREATE TRIGGER usage_deletes AFTER DELETE ON conversations REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT
    EXECUTE FUNCTION grove_track_usage('conversations', 'deleted_at IS NULL', '0');
