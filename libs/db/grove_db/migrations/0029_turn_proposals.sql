-- Proposals: changes to the notes a conversation turn offers (grove_memory.proposals).
--
-- Each proposal is stored when its turn completes, with the change it would make and the
-- preview it was offered with (note versions, subtree fingerprints: the apply's fence).
-- Applying it records what it wrote in `applied` (each note's state before and after, the
-- notebooks it created or moved): the undo's fence and the state the undo puts back.
-- Every apply and undo, and every refusal of one as stale, is appended to `events`.

CREATE TABLE turn_proposals (
    account_id      uuid NOT NULL,
    conversation_id uuid NOT NULL,
    turn_id         uuid NOT NULL,
    id              uuid NOT NULL,
    ordinal         integer NOT NULL CHECK (ordinal BETWEEN 1 AND 5),
    source          text NOT NULL CHECK (source IN ('deterministic', 'model')),
    summary         text NOT NULL CHECK (char_length(summary) BETWEEN 1 AND 200),
    change          jsonb NOT NULL,
    preview         jsonb NOT NULL,
    state           text NOT NULL DEFAULT 'proposed'
                    CHECK (state IN ('proposed', 'applied', 'undone')),
    applied         jsonb,
    outcome         jsonb,
    undo_outcome    jsonb,
    events          jsonb NOT NULL DEFAULT '[]',
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, id),
    UNIQUE (account_id, conversation_id, turn_id, ordinal),
    FOREIGN KEY (account_id, conversation_id, turn_id)
        REFERENCES conversation_turns (account_id, conversation_id, id),
    CHECK ((state = 'proposed') = (applied IS NULL))
);

ALTER TABLE turn_proposals ENABLE ROW LEVEL SECURITY;
ALTER TABLE turn_proposals FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant ON turn_proposals USING (account_id = grove_current_account())
    WITH CHECK (account_id = grove_current_account());
