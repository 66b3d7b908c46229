-- Files (issue 23, first slice): documents uploaded as memory sources. `files` holds
-- one row per file with its current version's metadata; `file_chunks` holds the bytes of
-- every version, 256 KiB a row (grove_memory.blobs), so nothing is written to local disk
-- and the bytes share the account's row-level security. Older versions' chunks are kept:
-- they count in the account's storage until a later slice purges them.
-- `indexing` is 'disabled' until extraction into passages exists.

CREATE TABLE files (
    account_id  uuid NOT NULL REFERENCES accounts (id),
    id          uuid NOT NULL,
    project_id  uuid,
    name        text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 255),
    media_type  text NOT NULL CHECK (char_length(media_type) BETWEEN 1 AND 200),
    version     integer NOT NULL DEFAULT 1 CHECK (version >= 1),
    size_bytes  bigint NOT NULL CHECK (size_bytes >= 0),
    sha256      bytea NOT NULL CHECK (octet_length(sha256) = 32),
    indexing    text NOT NULL DEFAULT 'disabled'
                CHECK (indexing IN ('pending', 'ready', 'failed', 'disabled')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    archived_at timestamptz,
    deleted_at  timestamptz,
    PRIMARY KEY (account_id, id),
    FOREIGN KEY (account_id, project_id) REFERENCES projects (account_id, id)
);

-- GET /v1/files: newest first, live files only.
CREATE INDEX files_newest ON files (account_id, created_at DESC, id DESC)
    WHERE deleted_at IS NULL;

CREATE TABLE file_chunks (
    account_id uuid NOT NULL,
    file_id    uuid NOT NULL,
    version    integer NOT NULL CHECK (version >= 1),
    ordinal    integer NOT NULL CHECK (ordinal >= 0),
    data       bytea NOT NULL CHECK (octet_length(data) BETWEEN 1 AND 262144),
    PRIMARY KEY (account_id, file_id, version, ordinal),
    FOREIGN KEY (account_id, file_id) REFERENCES files (account_id, id)
);
-- Uploads are mostly compressed already (PDF): store the chunks out of line as they are.
ALTER TABLE file_chunks ALTER COLUMN data SET STORAGE EXTERNAL;

ALTER TABLE files ENABLE ROW LEVEL SECURITY;
ALTER TABLE files FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant ON files USING (account_id = grove_current_account())
    WITH CHECK (account_id = grove_current_account());

ALTER TABLE file_chunks ENABLE ROW LEVEL SECURITY;
ALTER TABLE file_chunks FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant ON file_chunks USING (account_id = grove_current_account())
    WITH CHECK (account_id = grove_current_account());
