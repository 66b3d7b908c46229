-- A shared notebook's live direct members, newest first (grove_public_share_notes and the
-- share's last-updated time), indexed only where a notebook is named: project_id IS NOT
-- NULL. The index of 0010 covered every live note, personal ones included, and its
-- predicate matched the filters of recall's and search's statements; on a table without
-- statistics yet (a new deployment, a bulk load before autovacuum's ANALYZE) the planner
-- took a full scan of it as the inner side of the embeddings-to-notes join, once per
-- candidate: 1,000 notes cost ~0.5 M index entries per recall and the api's throughput
-- under load fell from 48 to 17 requests/s. A query that does not name a notebook cannot
-- use this one. (0010's function comment still names the old index.)
DROP INDEX memories_project_created;
CREATE INDEX memories_notebook_created ON memories (project_id, created_at DESC, id DESC)
    WHERE project_id IS NOT NULL AND deleted_at IS NULL AND archived_at IS NULL;
