-- The live notes of an account, with the columns every scope predicate reads: BM25 counts
-- its corpus (the visible notes in scope, for IDF) with an index-only scan instead of
-- reading every row (at 100,000 notes: ~63 ms -> ~9 ms; bench/README.md).
CREATE INDEX memories_live_scope ON memories (account_id, project_id, expires_at, created_at)
    WHERE deleted_at IS NULL AND archived_at IS NULL;
