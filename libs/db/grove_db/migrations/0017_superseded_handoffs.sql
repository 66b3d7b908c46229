-- A handoff saved for a task whose handoff has expired starts a new note. The expired one
-- used to be soft deleted then, which ended its restoration window early (the owner's
-- restore answered 404). Now it is marked superseded instead: it leaves the one-live-
-- handoff-per-task index and stays restorable for its whole window.
ALTER TABLE memories ADD COLUMN superseded_at timestamptz;

DROP INDEX memories_handoff_task;
CREATE UNIQUE INDEX memories_handoff_task ON memories (
    account_id, coalesce(project_id, '00000000-0000-0000-0000-000000000000'::uuid), task_id
) WHERE kind = 'handoff' AND deleted_at IS NULL AND superseded_at IS NULL;
