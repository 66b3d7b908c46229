-- Embeddings and the leased job queue.
--
-- One embedding row per (revision, profile). The vector column is unsized so that
-- profiles of different dimensions can live side by side; each profile gets an HNSW
-- index on an expression cast to its size (MiniLM's here; `grove reindex` creates one
-- for another profile), and queries use the same cast.

ALTER TABLE memories ADD COLUMN indexing_error text;

CREATE TABLE embeddings (
    account_id  uuid NOT NULL,
    memory_id   uuid NOT NULL,
    version     integer NOT NULL,
    profile     text NOT NULL CHECK (char_length(profile) BETWEEN 1 AND 50),
    dimensions  integer NOT NULL CHECK (dimensions BETWEEN 1 AND 16000),
    embedding   vector NOT NULL CHECK (vector_dims(embedding) = dimensions),
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, memory_id, version, profile),
    FOREIGN KEY (account_id, memory_id, version)
        REFERENCES memory_revisions (account_id, memory_id, version)
);
CREATE INDEX embeddings_minilm_hnsw ON embeddings
    USING hnsw ((embedding::vector(384)) vector_cosine_ops) WHERE profile = 'minilm';

ALTER TABLE embeddings ENABLE ROW LEVEL SECURITY;
ALTER TABLE embeddings FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant ON embeddings
    USING (account_id = grove_current_account())
    WITH CHECK (account_id = grove_current_account());

-- Jobs: a lease (owner token + expiry) instead of a bare lock; the profile to embed with.
ALTER TABLE jobs RENAME COLUMN locked_by TO lease_owner;
ALTER TABLE jobs ADD COLUMN lease_expires_at timestamptz;
ALTER TABLE jobs ADD COLUMN profile text;
ALTER TABLE jobs ADD COLUMN finished_at timestamptz;
CREATE INDEX jobs_leased ON jobs (lease_expires_at) WHERE status = 'running';
CREATE INDEX jobs_memory ON jobs (account_id, memory_id);

-- The queue is claimed across accounts: the worker sets grove.queue = 'claim' for
-- the claiming statement only. Job rows hold IDs and versions, never note content;
-- the worker reads content under the job's own account context.
CREATE POLICY queue ON jobs
    USING (current_setting('grove.queue', true) = 'claim')
    WITH CHECK (current_setting('grove.queue', true) = 'claim');

-- The schema owner (the migration role behind the `grove` command) may list accounts,
-- e.g. for `grove reindex` across every account. Services refuse to run as a role
-- that owns (or may act as the owner of) the tables, so this grants them nothing.
CREATE POLICY owner_lists ON accounts FOR SELECT
    USING (pg_has_role(current_user,
                       (SELECT relowner FROM pg_class WHERE oid = 'accounts'::regclass),
                       'MEMBER'));
