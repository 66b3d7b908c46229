-- Fair claiming across accounts: the queue is claimed round-robin by account (each
-- account's oldest runnable job first, then each one's second, ...), so one account's
-- backlog never delays another's work. This index walks the accounts with queued jobs
-- and each one's oldest jobs.
CREATE INDEX jobs_claimable_by_account ON jobs (account_id, run_after, id)
    WHERE status = 'queued';
