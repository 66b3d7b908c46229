-- Imports through the api (POST /v1/import, grove_memory.imports): one row per import,
-- named by the client's ID, so its progress can be read while it runs
-- (GET /v1/import/{id}) and a re-run of the same export after a failure resumes it.
-- `counts` is updated as each group of notes commits.

CREATE TABLE imports (
    account_id uuid NOT NULL REFERENCES accounts (id),
    id         uuid NOT NULL,
    state      text NOT NULL CHECK (state IN ('running', 'done', 'failed')),
    counts     jsonb NOT NULL DEFAULT '{}',
    warnings   jsonb NOT NULL DEFAULT '[]',
    error      text,
    line       integer,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, id)
);

ALTER TABLE imports ENABLE ROW LEVEL SECURITY;
ALTER TABLE imports FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant ON imports USING (account_id = grove_current_account())
    WITH CHECK (account_id = grove_current_account());
