-- Lookup tables for the two credentials found before their account is known: an API
-- key's hash (api_key_lookup) and a share link's token hash (share_lookup), each naming
-- the account that holds it. A presented key or link is found here by its hash, then
-- its account's own rows are read naming that account. On a Citus cluster these tables
-- are distributed by the hash (grove_db.distribution), so the lookup is one task on one
-- node and every statement after it is a router query on the account's node, instead of
-- one probe of every shard's index; on one server they are the same tables, read the
-- same way (docs/scaling.md). Their primary key keeps a hash unique across accounts on
-- both engines, which api_keys and shares, distributed by account, cannot.
--
-- A row is written by the same code, in the same transaction, as the key or link it
-- points to (grove_auth.keys.issue_key, grove_memory.shares.create_share), and never
-- changes: revocation is read from the key's or link's own row. Row-level security is
-- that of the rows they point to: the account's own, or the one row whose hash the
-- transaction presents (grove.key_lookup, grove.share_lookup).
CREATE TABLE api_key_lookup (
    key_hash    bytea PRIMARY KEY,
    account_id  uuid NOT NULL REFERENCES accounts (id)
);
CREATE TABLE share_lookup (
    token_hash  bytea PRIMARY KEY,
    account_id  uuid NOT NULL REFERENCES accounts (id)
);

-- The keys and links made before this migration, read as the owner before the
-- policies are forced again. Here and below each ALTER TABLE and CREATE POLICY is a
-- statement of its own (EXECUTE): on a Citus cluster that was distributed before this
-- migration, the coordinator carries it to the nodes as its text, which must then be
-- one command, not this file.
DO $$
BEGIN
    EXECUTE 'ALTER TABLE api_keys NO FORCE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE shares NO FORCE ROW LEVEL SECURITY';
    INSERT INTO api_key_lookup (key_hash, account_id) SELECT key_hash, account_id FROM api_keys;
    INSERT INTO share_lookup (token_hash, account_id) SELECT token_hash, account_id FROM shares;
    EXECUTE 'ALTER TABLE api_keys FORCE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE shares FORCE ROW LEVEL SECURITY';
END $$;

DO $$
BEGIN
    EXECUTE 'ALTER TABLE api_key_lookup ENABLE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE api_key_lookup FORCE ROW LEVEL SECURITY';
    EXECUTE 'CREATE POLICY tenant ON api_key_lookup'
        ' USING (account_id = grove_current_account() OR key_hash = grove_key_lookup())'
        ' WITH CHECK (account_id = grove_current_account())';
    EXECUTE 'ALTER TABLE share_lookup ENABLE ROW LEVEL SECURITY';
    EXECUTE 'ALTER TABLE share_lookup FORCE ROW LEVEL SECURITY';
    EXECUTE 'CREATE POLICY tenant ON share_lookup'
        ' USING (account_id = grove_current_account() OR token_hash = grove_share_lookup())'
        ' WITH CHECK (account_id = grove_current_account())';
END $$;

-- The share functions find the link through share_lookup, then name its account as a
-- value in every statement (Citus routes a statement by the values it names, not by
-- row-level security). They set the tenant and the lookup door with SET LOCAL rather
-- than set_config(): a Citus coordinator carries a SET LOCAL to the nodes the
-- transaction touches (citus.propagate_set_commands = 'local'), a function call it
-- does not, and without it row-level security on a worker saw no account.
CREATE OR REPLACE FUNCTION grove_share_live(p_token_hash bytea)
    RETURNS TABLE (share_id uuid, account_id uuid, target_type text, memory_id uuid,
                   project_id uuid, title text, indexable boolean)
    LANGUAGE plpgsql
    SET search_path = public, pg_temp
    AS $$
DECLARE
    found_account uuid;
BEGIN
    SET LOCAL grove.account_id = '';
    EXECUTE format('SET LOCAL grove.share_lookup = %L', encode(p_token_hash, 'hex'));
    SELECT k.account_id INTO found_account FROM share_lookup k
    WHERE k.token_hash = p_token_hash;
    SET LOCAL grove.share_lookup = '';
    IF found_account IS NULL THEN
        RETURN;
    END IF;
    EXECUTE format('SET LOCAL grove.account_id = %L', found_account);
    RETURN QUERY
        SELECT s.id, s.account_id, s.target_type, s.memory_id, s.project_id, s.title, s.indexable
        FROM shares s
        JOIN accounts a ON a.id = s.account_id AND a.deleted_at IS NULL
        LEFT JOIN memories m ON m.account_id = found_account AND m.id = s.memory_id
        LEFT JOIN projects p ON p.account_id = found_account AND p.id = s.project_id
        WHERE s.account_id = found_account AND s.token_hash = p_token_hash
          AND s.revoked_at IS NULL
          AND (s.expires_at IS NULL OR s.expires_at > statement_timestamp())
          AND CASE s.target_type
                WHEN 'note' THEN m.file_id IS NULL
                                 AND m.deleted_at IS NULL AND m.archived_at IS NULL
                                 AND (m.expires_at IS NULL
                                      OR m.expires_at > statement_timestamp())
                ELSE p.deleted_at IS NULL AND p.archived_at IS NULL
              END;
END $$;

-- One statement per table read, each naming the account (Citus plans the single-node
-- form, a LEFT JOIN of both targets onto a one-row subquery, only with an error).
CREATE OR REPLACE FUNCTION grove_public_share(p_token_hash bytea)
    RETURNS TABLE (share_id uuid, target_type text, title text, indexable boolean,
                   updated_at timestamptz)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = public, pg_temp
    AS $$
DECLARE
    l record;
    shelf record;
    changed timestamptz;
BEGIN
    SELECT * INTO l FROM grove_share_live(p_token_hash);
    IF FOUND AND l.target_type = 'note' THEN
        SELECT m.updated_at INTO changed FROM memories m
        WHERE m.account_id = l.account_id AND m.id = l.memory_id;
        RETURN QUERY SELECT l.share_id, l.target_type, l.title, l.indexable, changed;
    ELSIF FOUND THEN
        SELECT p.name, p.updated_at INTO shelf FROM projects p
        WHERE p.account_id = l.account_id AND p.id = l.project_id;
        SELECT max(n.updated_at) INTO changed FROM memories n
        WHERE n.account_id = l.account_id AND n.project_id = l.project_id
          AND n.file_id IS NULL AND n.deleted_at IS NULL AND n.archived_at IS NULL
          AND (n.expires_at IS NULL OR n.expires_at > statement_timestamp());
        RETURN QUERY SELECT l.share_id, l.target_type, coalesce(l.title, shelf.name),
                            l.indexable, greatest(shelf.updated_at, changed);
    END IF;
    SET LOCAL grove.account_id = '';
END $$;

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
            WHERE m.account_id = l.account_id AND m.id = l.memory_id
              AND p_before_created IS NULL;
    ELSIF FOUND THEN
        -- Saved live direct members, by the memories_notebook_saved index.
        RETURN QUERY
            SELECT m.id, m.kind, m.content, m.created_at, m.updated_at
            FROM memories m
            WHERE m.account_id = l.account_id AND m.project_id = l.project_id
              AND m.file_id IS NULL
              AND m.deleted_at IS NULL AND m.archived_at IS NULL
              AND (m.expires_at IS NULL OR m.expires_at > statement_timestamp())
              AND (p_before_created IS NULL
                   OR (m.created_at, m.id) < (p_before_created, p_before_id))
            ORDER BY m.created_at DESC, m.id DESC
            LIMIT least(greatest(p_limit, 1), 51);
    END IF;
    SET LOCAL grove.account_id = '';
END $$;

-- A first sign-in's account (GROVE_OIDC_PROVISIONING=personal), with the same SET LOCAL
-- in place of set_config(): accounts and account_owners are copied to every node of a
-- Citus cluster, whose row-level security saw no account and refused the new rows.
CREATE OR REPLACE FUNCTION grove_provision_owner(p_issuer text, p_subject text, p_name text)
    RETURNS uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = public, pg_temp
    AS $$
DECLARE
    v_account uuid;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(p_issuer || '#' || p_subject, 15));
    IF EXISTS (SELECT 1 FROM identity_tombstones
               WHERE issuer = p_issuer AND subject = p_subject) THEN
        RETURN NULL;
    END IF;
    EXECUTE format('SET LOCAL grove.owner_issuer = %L', p_issuer);
    EXECUTE format('SET LOCAL grove.owner_subject = %L', p_subject);
    SELECT account_id INTO v_account FROM account_owners
        WHERE issuer = p_issuer AND subject = p_subject;
    IF NOT FOUND THEN
        v_account := gen_random_uuid();
        EXECUTE format('SET LOCAL grove.account_id = %L', v_account);
        INSERT INTO accounts (id, name) VALUES (v_account, p_name);
        INSERT INTO account_owners (account_id, issuer, subject)
            VALUES (v_account, p_issuer, p_subject);
    END IF;
    RETURN v_account;
END $$;
