-- Expiry sweeps. A note with a lifetime gets an `expire_note` job due at its expiry; the
-- worker then moves it into a restoration window (swept_at) and queues `purge_note`
-- for the window's end, when it is soft deleted unless the owner restored it.
ALTER TABLE memories ADD COLUMN swept_at timestamptz;
CREATE INDEX jobs_memory_kind ON jobs (account_id, memory_id, kind) WHERE status = 'queued';
