-- Project memory: orgs own projects; people (accounts) are members of projects with a
-- role; each project has a shared pool of keyed records that agents read and write with
-- project keys, and the pool's mutations leave audit records.
--
-- Row-level security: besides grove.account_id (the person: an owner session's account,
-- or for a project key the account that created it), a transaction enters one org and
-- project with the settings grove.org_id and grove.project_id. The pool's rows are
-- visible only when that person is, at that moment, a member of the entered project
-- (grove_project_role(), evaluated once per statement), and writable only when the role
-- is contributor or admin: a mistaken WHERE clause can never reach another project's
-- records, nor one its person has left.

CREATE FUNCTION grove_current_org() RETURNS uuid
    LANGUAGE sql STABLE
    AS $$ SELECT nullif(current_setting('grove.org_id', true), '')::uuid $$;

CREATE FUNCTION grove_current_project() RETURNS uuid
    LANGUAGE sql STABLE
    AS $$ SELECT nullif(current_setting('grove.project_id', true), '')::uuid $$;

CREATE TABLE orgs (
    id                     uuid PRIMARY KEY,
    name                   text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    -- The org entitlement projectMemory.enabled.
    project_memory_enabled boolean NOT NULL DEFAULT true,
    created_by             uuid NOT NULL REFERENCES accounts (id),
    created_at             timestamptz NOT NULL DEFAULT now(),
    deleted_at             timestamptz
);

CREATE TABLE org_members (
    org_id     uuid NOT NULL REFERENCES orgs (id),
    account_id uuid NOT NULL REFERENCES accounts (id),
    role       text NOT NULL CHECK (role IN ('owner', 'member')),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, account_id)
);
CREATE INDEX org_members_account ON org_members (account_id);

CREATE TABLE org_projects (
    org_id     uuid NOT NULL REFERENCES orgs (id),
    id         uuid NOT NULL,
    name       text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    created_at timestamptz NOT NULL DEFAULT now(),
    deleted_at timestamptz,
    PRIMARY KEY (id),
    UNIQUE (org_id, id)
);

CREATE TABLE project_members (
    org_id     uuid NOT NULL,
    project_id uuid NOT NULL,
    account_id uuid NOT NULL REFERENCES accounts (id),
    role       text NOT NULL CHECK (role IN ('viewer', 'contributor', 'admin')),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, project_id, account_id),
    FOREIGN KEY (org_id, project_id) REFERENCES org_projects (org_id, id),
    FOREIGN KEY (org_id, account_id) REFERENCES org_members (org_id, account_id)
);
CREATE INDEX project_members_account ON project_members (account_id);

-- Agent keys for one project: only the keyed hash is stored (like api_keys).
CREATE TABLE project_keys (
    org_id     uuid NOT NULL,
    project_id uuid NOT NULL,
    id         uuid NOT NULL,
    created_by uuid NOT NULL REFERENCES accounts (id),
    name       text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    prefix     text NOT NULL,
    key_hash   bytea NOT NULL UNIQUE,
    can_read   boolean NOT NULL,
    can_write  boolean NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz,
    PRIMARY KEY (id),
    FOREIGN KEY (org_id, project_id) REFERENCES org_projects (org_id, id),
    CHECK (can_read)
);

CREATE TABLE project_memories (
    org_id            uuid NOT NULL,
    project_id        uuid NOT NULL,
    -- Byte order ("C"): keys list in one stable order whatever the database locale.
    key               text COLLATE "C" NOT NULL CHECK (char_length(key) BETWEEN 1 AND 256),
    title             text NOT NULL CHECK (char_length(title) BETWEEN 1 AND 200),
    body              text NOT NULL CHECK (octet_length(body) BETWEEN 1 AND 8000),
    body_sha256       bytea NOT NULL CHECK (octet_length(body_sha256) = 32),
    kind              text NOT NULL
                      CHECK (kind IN ('fact', 'decision', 'preference', 'state', 'rule',
                                      'authority')),
    authority         text NOT NULL CHECK (authority IN ('observed', 'verified', 'pinned')),
    prov_source       text NOT NULL,
    prov_ref          text NOT NULL,
    prov_verification text NOT NULL
                      CHECK (prov_verification IN ('unverified', 'source_verified',
                                                   'owner_confirmed')),
    prov_observed_at  timestamptz NOT NULL,
    expires_at        timestamptz,
    -- A client-supplied vector (the service computes none), in the client's named space.
    embedding         vector,
    embedding_space   text,
    embedding_dims    integer,
    version           integer NOT NULL DEFAULT 1,
    written_by        uuid NOT NULL REFERENCES accounts (id),
    written_by_key    uuid REFERENCES project_keys (id),
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    tsv               tsvector GENERATED ALWAYS AS (
                          setweight(to_tsvector('english', title), 'A')
                          || setweight(to_tsvector('english', body), 'B')) STORED,
    PRIMARY KEY (org_id, project_id, key),
    FOREIGN KEY (org_id, project_id) REFERENCES org_projects (org_id, id),
    CHECK (kind <> 'state' OR expires_at IS NOT NULL),
    CHECK ((embedding IS NULL) = (embedding_space IS NULL)
           AND (embedding IS NULL) = (embedding_dims IS NULL)),
    CHECK (authority <> 'verified' OR prov_verification = 'source_verified'),
    CHECK (authority <> 'pinned' OR prov_verification = 'owner_confirmed')
);
CREATE INDEX project_memories_tsv ON project_memories USING gin (tsv);
CREATE INDEX project_memories_kind ON project_memories (org_id, project_id, kind, key);
CREATE INDEX project_memories_space
    ON project_memories (org_id, project_id, embedding_space, embedding_dims)
    WHERE embedding IS NOT NULL;

-- Who changed what, without the body: its SHA-256 only.
CREATE TABLE project_memory_audit (
    org_id        uuid NOT NULL,
    project_id    uuid NOT NULL,
    id            bigint GENERATED ALWAYS AS IDENTITY,
    actor         uuid NOT NULL REFERENCES accounts (id),
    credential    text NOT NULL CHECK (credential IN ('owner_session', 'project_key')),
    credential_id uuid NOT NULL,
    action        text NOT NULL CHECK (action IN ('create', 'replace', 'delete')),
    key           text COLLATE "C" NOT NULL,
    body_sha256   bytea NOT NULL,
    at            timestamptz NOT NULL DEFAULT statement_timestamp(),
    PRIMARY KEY (id),
    FOREIGN KEY (org_id, project_id) REFERENCES org_projects (org_id, id)
);
CREATE INDEX project_memory_audit_project ON project_memory_audit (org_id, project_id, id);

-- The current person's live role in the entered project (NULL: none). Reads only the
-- person's own membership rows, so policies may call it without recursion.
CREATE FUNCTION grove_project_role() RETURNS text
    LANGUAGE sql STABLE
    AS $$
        SELECT pm.role FROM project_members pm
        JOIN org_projects p ON p.org_id = pm.org_id AND p.id = pm.project_id
        JOIN orgs o ON o.id = pm.org_id
        WHERE pm.org_id = grove_current_org() AND pm.project_id = grove_current_project()
          AND pm.account_id = grove_current_account()
          AND p.deleted_at IS NULL AND o.deleted_at IS NULL
    $$;

-- The current person's role in an org (NULL: none).
CREATE FUNCTION grove_org_role(org uuid) RETURNS text
    LANGUAGE sql STABLE
    AS $$
        SELECT role FROM org_members
        WHERE org_id = org AND account_id = grove_current_account()
    $$;

ALTER TABLE orgs ENABLE ROW LEVEL SECURITY;
ALTER TABLE orgs FORCE ROW LEVEL SECURITY;
CREATE POLICY member ON orgs
    USING (grove_org_role(id) IS NOT NULL OR id = grove_current_org())
    WITH CHECK (created_by = grove_current_account());

ALTER TABLE org_members ENABLE ROW LEVEL SECURITY;
ALTER TABLE org_members FORCE ROW LEVEL SECURITY;
CREATE POLICY member ON org_members
    USING (account_id = grove_current_account() OR org_id = grove_current_org());

ALTER TABLE org_projects ENABLE ROW LEVEL SECURITY;
ALTER TABLE org_projects FORCE ROW LEVEL SECURITY;
CREATE POLICY entered ON org_projects USING (org_id = grove_current_org());

ALTER TABLE project_members ENABLE ROW LEVEL SECURITY;
ALTER TABLE project_members FORCE ROW LEVEL SECURITY;
CREATE POLICY member ON project_members
    USING (account_id = grove_current_account() OR org_id = grove_current_org());

ALTER TABLE project_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE project_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY entered ON project_keys
    USING ((org_id = grove_current_org() AND project_id = grove_current_project())
           OR key_hash = grove_key_lookup())
    WITH CHECK (org_id = grove_current_org() AND project_id = grove_current_project()
                AND (SELECT grove_project_role()) = 'admin');

-- The pool: readable by any current member, changed only by contributors and admins.
DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['project_memories', 'project_memory_audit'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY member_reads ON %I FOR SELECT USING ('
                       'org_id = grove_current_org() AND project_id = grove_current_project()'
                       ' AND (SELECT grove_project_role()) IS NOT NULL)', t);
        EXECUTE format('CREATE POLICY contributor_writes ON %I FOR ALL USING ('
                       'org_id = grove_current_org() AND project_id = grove_current_project()'
                       ' AND (SELECT grove_project_role()) IN (''contributor'', ''admin''))', t);
    END LOOP;
END $$;
