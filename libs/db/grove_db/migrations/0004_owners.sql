-- Owners: the identities (issuer + subject of the external OpenID Connect provider) that
-- own an account. An owner session is verified against the provider, then mapped here.
CREATE TABLE account_owners (
    account_id  uuid NOT NULL REFERENCES accounts (id),
    issuer      text NOT NULL CHECK (char_length(issuer) BETWEEN 1 AND 500),
    subject     text NOT NULL CHECK (char_length(subject) BETWEEN 1 AND 500),
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (issuer, subject)
);
CREATE INDEX account_owners_account ON account_owners (account_id);

ALTER TABLE account_owners ENABLE ROW LEVEL SECURITY;
ALTER TABLE account_owners FORCE ROW LEVEL SECURITY;
-- Readable by account, or by the exact (issuer, subject) being authenticated.
CREATE POLICY tenant ON account_owners
    USING (account_id = grove_current_account()
           OR (issuer = current_setting('grove.owner_issuer', true)
               AND subject = current_setting('grove.owner_subject', true)))
    WITH CHECK (account_id = grove_current_account());

-- When a connection last authenticated (updated at most once a minute).
ALTER TABLE connections ADD COLUMN last_contact_at timestamptz;
