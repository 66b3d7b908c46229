"""The schema's tables by who they belong to, as the migrations and the Citus
distribution must place them."""

from __future__ import annotations

#: Tables of one account each, under row-level security by ``account_id``.
TENANT_TABLES = {
    "accounts",
    "projects",
    "memories",
    "note_words",
    "note_bands",
    "shares",
    "memory_revisions",
    "operations",
    "connections",
    "connection_projects",
    "api_keys",
    "jobs",
    "embeddings",
    "account_owners",
    "conversations",
    "conversation_turns",
    "turn_proposals",
    "imports",
    "files",
    "file_chunks",
    "account_usage",
    "account_quotas",
    "note_suggestions",
    "notebook_briefs",
    "account_enrichment",
    "api_key_lookup",
    "share_lookup",
}

#: Org tables: scoped by the entered org (and project) and, for the shared pool, by the
#: person's live membership of that project.
ORG_TABLES = {
    "orgs",
    "org_members",
    "org_projects",
    "project_members",
    "project_keys",
    "project_memories",
    "project_memory_audit",
}

#: Tables that hold no account's data: the migration ledger, identity tombstones
#: (issuer and subject of deleted owners, nothing else), operation tombstones (the
#: operationIds deleted accounts used, nothing else) and rate limits. console_sessions
#: is keyed by a cookie's hash and reached only through grove-console's SECURITY
#: DEFINER functions (test_console checks it is sealed).
NON_TENANT_TABLES = {
    "schema_migrations",
    "identity_tombstones",
    "operation_tombstones",
    "rate_limits",
    "console_sessions",
}
