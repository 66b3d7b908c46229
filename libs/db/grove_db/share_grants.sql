-- Privileges of grove-share's role, re-applied after every migration run: no table
-- privileges at all, only the narrow SECURITY DEFINER functions keyed by a token hash.
GRANT USAGE ON SCHEMA public TO {role};
GRANT EXECUTE ON FUNCTION grove_public_share(bytea),
    grove_public_share_notes(bytea, timestamptz, uuid, integer),
    grove_public_rate_hit(text, integer) TO {role};
