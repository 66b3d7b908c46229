-- Every tenant table's primary key includes account_id, so the schema can be distributed
-- by account (docs/scaling.md: Citus, tables distributed by account_id and co-located).
-- Six tables were keyed by id alone, with a second unique (account_id, id) that the
-- foreign keys between tenant tables referenced; that unique becomes the primary key and
-- the id-only key goes. Single-row statements by id are unchanged: under row-level
-- security the tenant policy (account_id = grove_current_account()) is an index
-- condition beside the id, and the queue's statements name the job's account as well
-- (grove_db.queue).
--
-- Notes keep an index on id alone, not unique (distributed tables cannot have a unique
-- key without account_id, and ids are random uuids). Search joins candidates to their
-- notes by id; on tables without statistics (a new deployment, a bulk load before
-- autovacuum's first ANALYZE) the planner estimates an account's notes at one row, and
-- with only account-leading indexes it costs a scan of the whole account exactly like a
-- lookup by key, and may rescan the account for every candidate
-- (tests/integration/test_query_plans.py). The narrower index on id is the cheaper path.
--
-- The foreign keys that used the old uniques are dropped and made again on the new keys.

ALTER TABLE api_keys DROP CONSTRAINT api_keys_account_id_connection_id_fkey;
ALTER TABLE connection_projects DROP CONSTRAINT connection_projects_account_id_connection_id_fkey;
ALTER TABLE connection_projects DROP CONSTRAINT connection_projects_account_id_project_id_fkey;
ALTER TABLE conversations DROP CONSTRAINT conversations_account_id_project_id_fkey;
ALTER TABLE jobs DROP CONSTRAINT jobs_account_id_memory_id_fkey;
ALTER TABLE memories DROP CONSTRAINT memories_account_id_project_id_fkey;
ALTER TABLE memory_revisions DROP CONSTRAINT memory_revisions_account_id_memory_id_fkey;
ALTER TABLE operations DROP CONSTRAINT operations_account_id_memory_id_fkey;
ALTER TABLE projects DROP CONSTRAINT projects_account_id_parent_id_fkey;
ALTER TABLE shares DROP CONSTRAINT shares_account_id_memory_id_fkey;
ALTER TABLE shares DROP CONSTRAINT shares_account_id_project_id_fkey;

ALTER TABLE api_keys DROP CONSTRAINT api_keys_account_id_id_key;
ALTER TABLE api_keys DROP CONSTRAINT api_keys_pkey;
ALTER TABLE api_keys ADD PRIMARY KEY (account_id, id);

ALTER TABLE connections DROP CONSTRAINT connections_account_id_id_key;
ALTER TABLE connections DROP CONSTRAINT connections_pkey;
ALTER TABLE connections ADD PRIMARY KEY (account_id, id);

ALTER TABLE jobs DROP CONSTRAINT jobs_pkey;
ALTER TABLE jobs ADD PRIMARY KEY (account_id, id);

ALTER TABLE memories DROP CONSTRAINT memories_account_id_id_key;
ALTER TABLE memories DROP CONSTRAINT memories_pkey;
ALTER TABLE memories ADD PRIMARY KEY (account_id, id);
CREATE INDEX memories_id ON memories (id);

ALTER TABLE projects DROP CONSTRAINT projects_account_id_id_key;
ALTER TABLE projects DROP CONSTRAINT projects_pkey;
ALTER TABLE projects ADD PRIMARY KEY (account_id, id);

ALTER TABLE shares DROP CONSTRAINT shares_account_id_id_key;
ALTER TABLE shares DROP CONSTRAINT shares_pkey;
ALTER TABLE shares ADD PRIMARY KEY (account_id, id);

ALTER TABLE api_keys ADD CONSTRAINT api_keys_account_id_connection_id_fkey
    FOREIGN KEY (account_id, connection_id) REFERENCES connections (account_id, id);
ALTER TABLE connection_projects ADD CONSTRAINT connection_projects_account_id_connection_id_fkey
    FOREIGN KEY (account_id, connection_id) REFERENCES connections (account_id, id);
ALTER TABLE connection_projects ADD CONSTRAINT connection_projects_account_id_project_id_fkey
    FOREIGN KEY (account_id, project_id) REFERENCES projects (account_id, id);
ALTER TABLE conversations ADD CONSTRAINT conversations_account_id_project_id_fkey
    FOREIGN KEY (account_id, project_id) REFERENCES projects (account_id, id);
ALTER TABLE jobs ADD CONSTRAINT jobs_account_id_memory_id_fkey
    FOREIGN KEY (account_id, memory_id) REFERENCES memories (account_id, id);
ALTER TABLE memories ADD CONSTRAINT memories_account_id_project_id_fkey
    FOREIGN KEY (account_id, project_id) REFERENCES projects (account_id, id);
ALTER TABLE memory_revisions ADD CONSTRAINT memory_revisions_account_id_memory_id_fkey
    FOREIGN KEY (account_id, memory_id) REFERENCES memories (account_id, id);
ALTER TABLE operations ADD CONSTRAINT operations_account_id_memory_id_fkey
    FOREIGN KEY (account_id, memory_id) REFERENCES memories (account_id, id);
ALTER TABLE projects ADD CONSTRAINT projects_account_id_parent_id_fkey
    FOREIGN KEY (account_id, parent_id) REFERENCES projects (account_id, id);
ALTER TABLE shares ADD CONSTRAINT shares_account_id_memory_id_fkey
    FOREIGN KEY (account_id, memory_id) REFERENCES memories (account_id, id);
ALTER TABLE shares ADD CONSTRAINT shares_account_id_project_id_fkey
    FOREIGN KEY (account_id, project_id) REFERENCES projects (account_id, id);

-- A connection's pending approval request is read and decided by its owner, whose
-- account is known: its id is unique within the account.
DROP INDEX connections_request;
CREATE UNIQUE INDEX connections_request ON connections (account_id, request_id)
    WHERE request_id IS NOT NULL;
