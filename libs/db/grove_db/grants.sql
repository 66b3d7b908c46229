-- Privileges of the runtime role, re-applied after every migration run. The runtime role
-- owns nothing; revisions are append-only, accounts are read-only, no note is ever deleted.
GRANT USAGE ON SCHEMA public TO {role};
GRANT SELECT ON accounts TO {role};
GRANT SELECT, INSERT, UPDATE ON projects, memories, operations, connections,
    connection_projects, api_keys, jobs TO {role};
GRANT SELECT, INSERT ON memory_revisions TO {role};
-- note_words: search postings the trigger on memories keeps in step with each note
-- (UPDATE: a word's frequency when an edit changes it).
GRANT SELECT, INSERT, UPDATE, DELETE ON note_words TO {role};
-- note_bands: near-duplicate candidates the trigger on memories keeps the same way.
GRANT SELECT, INSERT, DELETE ON note_bands TO {role};
GRANT SELECT, INSERT, UPDATE ON embeddings TO {role};
GRANT SELECT ON account_owners TO {role};
GRANT DELETE ON connection_projects TO {role};
GRANT UPDATE (deleted_at) ON accounts TO {role};
GRANT SELECT, INSERT ON identity_tombstones TO {role};
-- operation_tombstones: the operationIds of deleted accounts (no account data).
GRANT SELECT, INSERT ON operation_tombstones TO {role};
-- rate_limits: counters, not tenant data; the worker deletes windows long over.
GRANT SELECT, INSERT, UPDATE, DELETE ON rate_limits TO {role};
GRANT SELECT, INSERT ON shares TO {role};
-- The credentials' lookup tables (migration 0052): written with the key or link, never
-- changed (revocation is the key's or link's own row).
GRANT SELECT, INSERT ON api_key_lookup, share_lookup TO {role};
GRANT UPDATE (revoked_at) ON shares TO {role};
GRANT SELECT, INSERT ON conversations, conversation_turns TO {role};
GRANT UPDATE (title, version, updated_at, deleted_at) ON conversations TO {role};
GRANT UPDATE (status, attempts, lease_expires_at, outcome, answer_text, answer_format,
    generator, citations, sources, context_coverage, error, completed_at)
    ON conversation_turns TO {role};
GRANT SELECT, INSERT ON turn_proposals TO {role};
GRANT SELECT, INSERT, UPDATE ON imports TO {role};
-- files: metadata changes (versions, soft deletes); chunks are written once, never
-- changed, and deleted by the worker's purge (a replaced version past its retention, a
-- deleted file past the restoration window: grove_worker.sweeps).
GRANT SELECT, INSERT, UPDATE ON files TO {role};
GRANT SELECT, INSERT, DELETE ON file_chunks TO {role};
GRANT UPDATE (state, applied, outcome, undo_outcome, events) ON turn_proposals TO {role};
-- enrichment (grove_memory.enrichment.enrichment): the worker writes suggestions, briefs and the
-- daily quota's use; `grove enrich reset` deletes them.
GRANT SELECT, INSERT, UPDATE, DELETE ON note_suggestions, notebook_briefs,
    account_enrichment TO {role};
GRANT SELECT, INSERT, UPDATE ON orgs, org_members, org_projects, project_members,
    project_keys TO {role};
GRANT DELETE ON project_members, org_members TO {role};
GRANT SELECT, INSERT, UPDATE, DELETE ON project_memories TO {role};
GRANT SELECT, INSERT ON project_memory_audit TO {role};
GRANT EXECUTE ON FUNCTION grove_provision_owner(text, text, text) TO {role};
GRANT EXECUTE ON FUNCTION grove_found_org(uuid, text), grove_org_role(uuid) TO {role};
-- Usage is counted by triggers and quotas are set by `grove accounts quota`: read only.
GRANT SELECT ON account_usage, account_quotas TO {role};
