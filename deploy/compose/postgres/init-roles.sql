-- Runs once, when the postgres container initialises an empty data volume, as the
-- bootstrap superuser inside the `grove` database (POSTGRES_DB). It sets the database up
-- the way production expects it (see deploy/README.md, "Preparing PostgreSQL"):
--
--   grove_migrator  owns the schema; `grove migrate` connects as it
--                   (GROVE_MIGRATION_DATABASE_URL).
--   grove_app       the runtime role: owns nothing, cannot bypass row-level security;
--                   api, mcp and worker connect as it (GROVE_DATABASE_URL). `grove migrate`
--                   grants it exactly what it needs. Services refuse to start as a
--                   superuser, a BYPASSRLS role or the owner of Grove's tables.
--   grove_share     grove-share's role (GROVE_SHARE_DATABASE_URL): no privilege on any
--                   table; `grove migrate` (with GROVE_SHARE_ROLE=grove_share) lets it
--                   call the public share functions and nothing else. grove-share refuses
--                   to start as a role with wider rights. Grant it nothing here.
--   grove_console   grove-console's role (GROVE_CONSOLE_DATABASE_URL), the same way: no
--                   privilege on any table; `grove migrate` (with
--                   GROVE_CONSOLE_ROLE=grove_console) lets it call the three session
--                   functions and nothing else. Grant it nothing here.
--
-- DEVELOPMENT PASSWORDS ONLY: they are repeated in docker-compose.yml. Never reuse them.

CREATE ROLE grove_migrator LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE
    PASSWORD 'grove-migrator-dev-password';
CREATE ROLE grove_app LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE
    PASSWORD 'grove-app-dev-password';
CREATE ROLE grove_share LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE
    PASSWORD 'grove-share-dev-password';
CREATE ROLE grove_console LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE
    PASSWORD 'grove-console-dev-password';

ALTER DATABASE grove OWNER TO grove_migrator;
-- pgvector must be created by a superuser; the migrations only use it.
CREATE EXTENSION IF NOT EXISTS vector;
ALTER SCHEMA public OWNER TO grove_migrator;
-- Only the schema owner creates objects (already PostgreSQL's default since 15).
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
