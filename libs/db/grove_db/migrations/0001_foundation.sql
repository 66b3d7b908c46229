-- Foundation schema: accounts, notebooks (projects), notes with immutable revisions,
-- idempotency records, API keys with their connection grants, and the job queue.
-- Every tenant table carries account_id, forces row-level security, and is keyed on the
-- transaction-local setting grove.account_id (see grove_current_account()).

CREATE FUNCTION grove_current_account() RETURNS uuid
    LANGUAGE sql STABLE
    AS $$ SELECT nullif(current_setting('grove.account_id', true), '')::uuid $$;

-- The hash of the API key being authenticated: lets the runtime role find exactly one key
-- row before it knows the account, and nothing else.
CREATE FUNCTION grove_key_lookup() RETURNS bytea
    LANGUAGE sql STABLE
    AS $$ SELECT decode(nullif(current_setting('grove.key_lookup', true), ''), 'hex') $$;

CREATE TABLE accounts (
    id          uuid PRIMARY KEY,
    name        text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    created_at  timestamptz NOT NULL DEFAULT now(),
    deleted_at  timestamptz
);

CREATE TABLE projects (
    account_id  uuid NOT NULL REFERENCES accounts (id),
    id          uuid NOT NULL,
    parent_id   uuid,
    name        text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    archived_at timestamptz,
    deleted_at  timestamptz,
    PRIMARY KEY (id),
    UNIQUE (account_id, id),
    FOREIGN KEY (account_id, parent_id) REFERENCES projects (account_id, id)
);
CREATE INDEX projects_parent ON projects (account_id, parent_id);

CREATE TABLE memories (
    account_id     uuid NOT NULL REFERENCES accounts (id),
    id             uuid NOT NULL,
    project_id     uuid,
    kind           text NOT NULL
                   CHECK (kind IN ('preference', 'fact', 'decision', 'solution', 'handoff')),
    content        text NOT NULL CHECK (char_length(content) BETWEEN 1 AND 6000),
    task_id        text CHECK (char_length(task_id) BETWEEN 1 AND 200),
    capture        text NOT NULL DEFAULT 'explicit' CHECK (capture IN ('explicit', 'automatic')),
    source_agent   text CHECK (char_length(source_agent) <= 100),
    source_ref     text CHECK (char_length(source_ref) <= 500),
    retention_days integer CHECK (retention_days BETWEEN 1 AND 365),
    expires_at     timestamptz,
    archived_at    timestamptz,
    deleted_at     timestamptz,
    version        integer NOT NULL DEFAULT 1,
    indexing       text NOT NULL CHECK (indexing IN ('pending', 'ready', 'failed', 'disabled')),
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    content_tsv    tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
    PRIMARY KEY (id),
    UNIQUE (account_id, id),
    FOREIGN KEY (account_id, project_id) REFERENCES projects (account_id, id),
    CHECK (kind <> 'handoff' OR task_id IS NOT NULL)
);
CREATE INDEX memories_tsv ON memories USING gin (content_tsv);
CREATE INDEX memories_account_updated ON memories (account_id, updated_at DESC, id);
CREATE INDEX memories_account_created ON memories (account_id, created_at DESC, id);
-- One live handoff per task within a scope (personal or one notebook).
CREATE UNIQUE INDEX memories_handoff_task ON memories (
    account_id, coalesce(project_id, '00000000-0000-0000-0000-000000000000'::uuid), task_id
) WHERE kind = 'handoff' AND deleted_at IS NULL;

CREATE TABLE memory_revisions (
    account_id     uuid NOT NULL,
    memory_id      uuid NOT NULL,
    version        integer NOT NULL,
    content        text NOT NULL,
    kind           text NOT NULL,
    project_id     uuid,
    task_id        text,
    capture        text NOT NULL,
    source_agent   text,
    source_ref     text,
    retention_days integer,
    expires_at     timestamptz,
    operation_id   uuid,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, memory_id, version),
    FOREIGN KEY (account_id, memory_id) REFERENCES memories (account_id, id)
);

CREATE TABLE operations (
    account_id   uuid NOT NULL REFERENCES accounts (id),
    id           uuid NOT NULL,
    name         text NOT NULL,
    request_hash text NOT NULL,
    memory_id    uuid,
    status       integer,
    response     jsonb,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, id),
    FOREIGN KEY (account_id, memory_id) REFERENCES memories (account_id, id)
);

-- A connection is one agent's standing access to an account: its grants live here, and
-- its credentials (API keys now, OAuth tokens later) point at it.
CREATE TABLE connections (
    account_id   uuid NOT NULL REFERENCES accounts (id),
    id           uuid NOT NULL,
    name         text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    personal     boolean NOT NULL,
    all_projects boolean NOT NULL,
    can_read     boolean NOT NULL,
    can_write    boolean NOT NULL,
    can_delete   boolean NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    revoked_at   timestamptz,
    PRIMARY KEY (id),
    UNIQUE (account_id, id)
);

CREATE TABLE connection_projects (
    account_id    uuid NOT NULL,
    connection_id uuid NOT NULL,
    project_id    uuid NOT NULL,
    PRIMARY KEY (account_id, connection_id, project_id),
    FOREIGN KEY (account_id, connection_id) REFERENCES connections (account_id, id),
    FOREIGN KEY (account_id, project_id) REFERENCES projects (account_id, id)
);

CREATE TABLE api_keys (
    account_id    uuid NOT NULL,
    id            uuid NOT NULL,
    connection_id uuid NOT NULL,
    prefix        text NOT NULL,
    key_hash      bytea NOT NULL UNIQUE,
    created_at    timestamptz NOT NULL DEFAULT now(),
    revoked_at    timestamptz,
    PRIMARY KEY (id),
    UNIQUE (account_id, id),
    FOREIGN KEY (account_id, connection_id) REFERENCES connections (account_id, id)
);

CREATE TABLE jobs (
    account_id   uuid NOT NULL REFERENCES accounts (id),
    id           bigint GENERATED ALWAYS AS IDENTITY,
    kind         text NOT NULL,
    memory_id    uuid,
    version      integer,
    payload      jsonb NOT NULL DEFAULT '{}',
    status       text NOT NULL DEFAULT 'queued'
                 CHECK (status IN ('queued', 'running', 'done', 'failed')),
    attempts     integer NOT NULL DEFAULT 0,
    run_after    timestamptz NOT NULL DEFAULT now(),
    locked_by    text,
    heartbeat_at timestamptz,
    last_error   text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (id),
    FOREIGN KEY (account_id, memory_id) REFERENCES memories (account_id, id)
);
CREATE INDEX jobs_claimable ON jobs (run_after, id) WHERE status = 'queued';

-- Row-level security: every tenant table, forced even for the owner.
ALTER TABLE accounts ENABLE ROW LEVEL SECURITY;
ALTER TABLE accounts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant ON accounts
    USING (id = grove_current_account()) WITH CHECK (id = grove_current_account());

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['projects', 'memories', 'memory_revisions', 'operations',
                             'connections', 'connection_projects', 'jobs'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY tenant ON %I USING (account_id = grove_current_account())'
                       ' WITH CHECK (account_id = grove_current_account())', t);
    END LOOP;
END $$;

ALTER TABLE api_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE api_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant ON api_keys
    USING (account_id = grove_current_account() OR key_hash = grove_key_lookup())
    WITH CHECK (account_id = grove_current_account());
