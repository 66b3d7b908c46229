-- Privileges of grove-console's role, re-applied after every migration run: no table
-- privileges at all, only its session functions keyed by a cookie's hash.
GRANT USAGE ON SCHEMA public TO {role};
GRANT EXECUTE ON FUNCTION grove_console_session_put(bytea, bytea, timestamptz),
    grove_console_session_get(bytea), grove_console_session_drop(bytea) TO {role};
