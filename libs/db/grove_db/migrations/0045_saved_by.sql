-- Who saved what (issue 51): every revision records who wrote it, the account's owner
-- (an owner session: the website or an owner token) or one of its connections (an API
-- key's, or an approved OAuth agent's), and a note carries its current revision's, so
-- the notes listing and search filter by it through an index of the notes themselves.
--
-- saved_by is 'owner' or 'connection' (then connection_id names it); both are null
-- where it was not recorded: revisions saved before this migration, a file's passages
-- (written by the worker's extraction) and notes restored from an export.
--
-- connection_id has no foreign key: a revision is append-only history that must outlive
-- whatever it names, and a save should not lock the connection's row. Connections are
-- never deleted today (a revoked one keeps its row and its name); should one ever be,
-- its revisions keep its ID and are shown without a name.

ALTER TABLE memories
    ADD COLUMN saved_by text CHECK (saved_by IN ('owner', 'connection')),
    ADD COLUMN connection_id uuid,
    ADD CONSTRAINT memories_saver_check
        CHECK ((saved_by IS NOT DISTINCT FROM 'connection') = (connection_id IS NOT NULL));

ALTER TABLE memory_revisions
    ADD COLUMN saved_by text CHECK (saved_by IN ('owner', 'connection')),
    ADD COLUMN connection_id uuid,
    ADD CONSTRAINT memory_revisions_saver_check
        CHECK ((saved_by IS NOT DISTINCT FROM 'connection') = (connection_id IS NOT NULL));

-- GET /v1/memories?connectionId=: one connection's notes in the listing's order (a
-- backward scan serves updated_asc), without walking the account's other notes.
CREATE INDEX memories_connection_updated ON memories (account_id, connection_id, updated_at DESC, id)
    WHERE connection_id IS NOT NULL;

-- GET /v1/activity: the account's revisions newest first, and one connection's (read
-- backwards: newest first, ties by note and version, descending too).
CREATE INDEX memory_revisions_saved ON memory_revisions (account_id, created_at, memory_id, version);
CREATE INDEX memory_revisions_connection ON memory_revisions
    (account_id, connection_id, created_at, memory_id, version)
    WHERE connection_id IS NOT NULL;
