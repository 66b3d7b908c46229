-- Operation tombstones: the operations a deleted account ran, kept once it is deleted, so
-- that a retried or replayed save can never recreate that content in another account
-- (one an operator made, or one the same person got under another identity), and the
-- refusal survives erasing the account's rows by hand (its `operations` rows go with
-- them). Beside `identity_tombstones` (the subjects).
--
-- An operation is its ID and the digest of its name and arguments without the
-- credential (`arguments_hash`, recorded from now on with each operation): the same ID
-- with other arguments is another client's operation that happens to share an ID (such
-- as `grove import-from`'s IDs, derived from file paths) and runs. Operations recorded
-- before this migration have no digest and are not tombstoned. Neither table of
-- tombstones holds account data (an operationId is an ID its client chose), so neither
-- is a tenant table.
ALTER TABLE operations ADD COLUMN arguments_hash text;

CREATE TABLE operation_tombstones (
    id              uuid NOT NULL,
    arguments_hash  text NOT NULL,
    deleted_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (id, arguments_hash)
);
