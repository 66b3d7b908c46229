-- OAuth clients as connections. A connection for an OAuth client starts unapproved
-- (no grants) with one bounded approval request pending for at most ten minutes; the
-- owner approves it with grants. Re-approval after revocation sets a cutoff: tokens
-- issued before it are refused.
ALTER TABLE connections ADD COLUMN oauth_client_id text
    CHECK (char_length(oauth_client_id) BETWEEN 1 AND 300);
ALTER TABLE connections ADD COLUMN oauth_subject text;
ALTER TABLE connections ADD COLUMN approved_at timestamptz;
ALTER TABLE connections ADD COLUMN authorized_after timestamptz;
ALTER TABLE connections ADD COLUMN request_id uuid;
ALTER TABLE connections ADD COLUMN request_expires_at timestamptz;
ALTER TABLE connections ADD COLUMN request jsonb
    CHECK (request IS NULL OR octet_length(request::text) <= 4096);
CREATE UNIQUE INDEX connections_oauth_client ON connections (account_id, oauth_client_id)
    WHERE oauth_client_id IS NOT NULL;
CREATE UNIQUE INDEX connections_request ON connections (request_id) WHERE request_id IS NOT NULL;
