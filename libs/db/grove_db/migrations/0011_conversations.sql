-- Conversations: an owner's durable question-and-answer threads over their notes.
--
-- The client names both a conversation and each of its turns with a UUID, so retries are
-- idempotent (request_hash is the digest of the body that first used the ID). A turn is
-- claimed in one transaction (status in_progress with a five-minute attempt lease), its
-- answer is generated outside any transaction, and it is completed in another. Deleting a
-- conversation hides it (deleted_at); its history is retained.

CREATE TABLE conversations (
    account_id       uuid NOT NULL REFERENCES accounts (id),
    id               uuid NOT NULL,
    request_hash     text NOT NULL,
    -- projectId omitted: every granted scope; else project_id (NULL: personal notes only).
    all_scopes       boolean NOT NULL,
    project_id       uuid,
    include_personal boolean NOT NULL,
    title            text CHECK (char_length(title) BETWEEN 1 AND 200),
    -- Advances by one each time a new turn is accepted (a turn's expectedVersion).
    version          integer NOT NULL DEFAULT 1,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    deleted_at       timestamptz,
    PRIMARY KEY (account_id, id),
    FOREIGN KEY (account_id, project_id) REFERENCES projects (account_id, id),
    CHECK (NOT all_scopes OR project_id IS NULL)
);
CREATE INDEX conversations_account_created
    ON conversations (account_id, created_at DESC, id DESC) WHERE deleted_at IS NULL;

CREATE TABLE conversation_turns (
    account_id       uuid NOT NULL,
    conversation_id  uuid NOT NULL,
    id               uuid NOT NULL,
    ordinal          integer NOT NULL CHECK (ordinal BETWEEN 1 AND 100),
    query            text NOT NULL CHECK (char_length(query) BETWEEN 1 AND 6000),
    format           text NOT NULL CHECK (format IN ('plain', 'markdown')),
    -- The selectors as sent: {notes, notebooks, only}; NULL when the turn had none.
    context          jsonb,
    request_hash     text NOT NULL,
    status           text NOT NULL CHECK (status IN ('in_progress', 'completed', 'failed')),
    attempts         integer NOT NULL DEFAULT 1,
    lease_expires_at timestamptz,
    outcome          text CHECK (outcome IN ('answered', 'no_evidence', 'disabled')),
    answer_text      text,
    answer_format    text CHECK (answer_format IN ('plain', 'markdown')),
    generator        text,
    citations        jsonb NOT NULL DEFAULT '[]',
    sources          jsonb NOT NULL DEFAULT '[]',
    context_coverage jsonb,
    error            text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    completed_at     timestamptz,
    PRIMARY KEY (account_id, conversation_id, id),
    UNIQUE (account_id, conversation_id, ordinal),
    FOREIGN KEY (account_id, conversation_id) REFERENCES conversations (account_id, id),
    CHECK ((status = 'in_progress') = (lease_expires_at IS NOT NULL))
);

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['conversations', 'conversation_turns'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY tenant ON %I USING (account_id = grove_current_account())'
                       ' WITH CHECK (account_id = grove_current_account())', t);
    END LOOP;
END $$;
