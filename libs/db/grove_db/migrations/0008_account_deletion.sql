-- Account deletion: a minimal tombstone of each owner identity of a deleted account
-- stops anything from provisioning that identity again (a delayed webhook, a retried
-- request). It holds no account data, so it is not a tenant table.
CREATE TABLE identity_tombstones (
    issuer      text NOT NULL,
    subject     text NOT NULL,
    deleted_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (issuer, subject)
);
