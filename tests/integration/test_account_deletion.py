"""Deleting an account leaves nothing of it live, and no job writes into it afterwards.

The deletion (``grove_auth.accounts``) marks every kind of content in the transaction
that revokes access; a test here walks every table holding an account's rows (from the
catalog, so a new table is found) after deleting an account that has rows in each of
them. Jobs are run by hand (or by a worker in this process) on a fresh database no other
worker watches (``quiet``), so a job can be held while the account is deleted.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from grove_auth import accounts
from grove_auth.principal import Principal
from grove_cli import admin
from grove_contracts.connections import DeletedAccount
from grove_contracts.conversations import CreateConversationRequest, TurnRequest
from grove_contracts.notebooks import CreateNotebookRequest
from grove_contracts.notes import RememberRequest
from grove_contracts.project_memory import CreateOrgRequest, CreateProjectRequest
from grove_contracts.shares import CreateShareRequest, ShareTarget
from grove_db import embedded, queue
from grove_db.pool import open_pool, transaction
from grove_memory.ask import conversations, turns
from grove_memory.enrichment import enrichment
from grove_memory.files import files, passages
from grove_memory.files.blobs import PostgresBlobs
from grove_memory.inference import InferenceClient
from grove_memory.notes import notebooks, notes, shares
from grove_memory.orgs import orgs
from grove_memory.portability import export, imports
from grove_memory.store import Store
from grove_worker.settings import WorkerSettings
from tests.support.fakes import FakeEmbeddings, start_fake_ask
from tests.support.keys import SECRET
from tests.support.owners import ISSUER
from tests.support.processes import run_script
from tests.support.shares import Stack, new_owner, read, stack
from tests.support.tenants import owner_of
from tests.support.waiting import wait_until
from tests.support.workers import running

__all__ = ["stack"]  # the fixture tests name

GATEWAY = "The billing gateway restarts at two in the morning, every night, without paging."
DEPLOY = "We deploy the billing service with Argo CD every Tuesday morning."
DEPLOY_AGAIN = "Every Tuesday morning we deploy the billing service with Argo CD. Ask Priya first."


@dataclass
class Account:
    """A fresh account on the ``quiet`` database: its owner and the operations' store."""

    id: uuid.UUID
    owner: Principal
    store: Store
    superuser_url: str
    migration_url: str

    def rows(self, query: str, *args: Any) -> list[dict[str, Any]]:
        """Rows of ``query`` as the superuser (row-level security does not apply), its
        parameters positional or one dict."""
        values = args[0] if len(args) == 1 and isinstance(args[0], dict) else args
        with psycopg.connect(self.superuser_url, autocommit=True, row_factory=dict_row) as conn:
            return conn.execute(query, values).fetchall()

    def delete(self) -> None:
        """Delete the account as its owner does (``DELETE /v1/account``)."""
        deleted = accounts.delete_account(self.store, self.owner, accounts.CONFIRMATION)
        assert deleted == DeletedAccount(deleted=True, accountId=self.id)

    def delete_as_operator(self) -> None:
        """Delete the account as an operator replaying a deletion after a restore does."""
        done = run_script(
            "grove",
            *("accounts", "delete", "--account", str(self.id)),
            env={"GROVE_MIGRATION_DATABASE_URL": self.migration_url},
        )
        assert (done.returncode, done.stdout) == (0, f"deleted {self.id}\n"), done.stderr

    def save(self, content: str, notebook: uuid.UUID | None = None) -> uuid.UUID:
        request = RememberRequest(
            content=content, kind="fact", projectId=notebook, operationId=uuid.uuid4()
        )
        return notes.remember(self.store, self.owner, request).memory.id

    def upload(self, text: str, name: str = "runbook.md") -> uuid.UUID:
        body = files.Body.of([text.encode()], "text/markdown")
        uploaded = files.upload(
            self.store, PostgresBlobs(), self.owner, body, name=name, notebook_id=None
        )
        return uploaded.file.id


def new_account(quiet: tuple[str, Any], profile: str | None = None) -> Account:
    url, pool = quiet
    migration = embedded.role_url(url, embedded.MIGRATION_ROLE)
    account = admin.create_account(migration, "to be deleted")
    store = Store(
        pool=pool,
        profile=profile,
        cursor_secret=b"c" * 32,
        key_secret=b"k" * 32,
        share_secret=b"s" * 32,
    )
    return Account(account, owner_of(account), store, url, migration)


def claim(pool: Any, kinds: list[str]) -> list[queue.Job]:
    """A claim of ``kinds`` a minute ahead (enrichment jobs wait two seconds to start)."""
    ahead = datetime.now(UTC) + timedelta(minutes=1)
    return queue.claim(pool, "test", None, 10, 60, kinds, now=ahead)


# --- no job writes for a deleted account ------------------------------------------------


def test_a_file_extraction_finishing_after_the_account_is_deleted_writes_no_passages(
    quiet: tuple[str, Any],
) -> None:
    account = new_account(quiet)
    pool = account.store.pool
    account.upload(GATEWAY, "held.md")
    (held,) = claim(pool, [queue.EXTRACT_FILE])  # a worker is reading this file ...
    account.upload(GATEWAY, "queued.md")  # ... and this one waits its turn
    account.delete()
    assert claim(pool, [queue.EXTRACT_FILE]) == []  # the queued job ended with the account
    done = passages.run(pool, PostgresBlobs(), "test", held, None)
    assert done.result == "lost"
    assert account.rows(
        "SELECT count(*) AS n FROM memories WHERE account_id = %s AND deleted_at IS NULL",
        account.id,
    ) == [{"n": 0}]
    ended = account.rows(
        "SELECT status, last_error FROM jobs WHERE account_id = %s AND kind = %s",
        account.id,
        queue.EXTRACT_FILE,
    )
    assert ended == [{"status": "done", "last_error": queue.ACCOUNT_DELETED}] * 2


def test_no_job_completion_writes_for_an_account_marked_deleted_while_it_ran(
    quiet: tuple[str, Any],
) -> None:
    """The completion itself checks the account: here only ``accounts.deleted_at`` is
    set (as an operator replaying a deletion after a restore may do), so nothing else
    (a deleted file, note or notebook) would stop the job."""
    account = new_account(quiet)
    pool = account.store.pool
    notebook, _ = notebooks.create_notebook(
        account.store, account.owner, CreateNotebookRequest(name="ops")
    )
    for text in (DEPLOY, DEPLOY_AGAIN):
        account.save(text, notebook.id)
        account.save(text)
    account.upload(GATEWAY)
    jobs = claim(pool, [queue.EXTRACT_FILE, queue.CLASSIFY_NOTES, queue.BRIEF_NOTEBOOK])
    assert sorted(job.kind for job in jobs) == sorted(
        [queue.BRIEF_NOTEBOOK, queue.CLASSIFY_NOTES, queue.EXTRACT_FILE]
    )
    account.rows("UPDATE accounts SET deleted_at = now() WHERE id = %s RETURNING id", account.id)
    results: dict[str, str] = {}
    for job in jobs:
        if job.kind == queue.EXTRACT_FILE:
            results[job.kind] = passages.run(pool, PostgresBlobs(), "test", job, None).result
        elif job.kind == queue.CLASSIFY_NOTES:
            results[job.kind] = enrichment.classify(pool, "test", job, 100).result
        else:
            results[job.kind] = enrichment.brief(pool, "test", job, 100).result
    assert set(results.values()) == {"lost"}, results
    written = account.rows(
        "SELECT (SELECT count(*) FROM memories WHERE account_id = %(a)s AND kind = 'passage')"
        " AS passages,"
        " (SELECT count(*) FROM note_suggestions WHERE account_id = %(a)s) AS suggestions,"
        " (SELECT count(*) FROM notebook_briefs WHERE account_id = %(a)s) AS briefs",
        {"a": account.id},
    )
    assert written == [{"passages": 0, "suggestions": 0, "briefs": 0}]
    ended = account.rows(
        "SELECT DISTINCT status, last_error FROM jobs WHERE account_id = %s AND kind <> %s",
        account.id,
        queue.EMBED_REVISION,
    )
    assert ended == [{"status": "done", "last_error": queue.ACCOUNT_DELETED}]


def test_a_deletion_waits_for_a_job_completing_and_marks_what_it_wrote(
    quiet: tuple[str, Any],
) -> None:
    account = new_account(quiet)
    pool = account.store.pool
    account.upload(GATEWAY)
    (job,) = claim(pool, [queue.EXTRACT_FILE])
    deletion = threading.Thread(target=account.delete)
    with transaction(pool, account.id) as conn:
        assert queue.finish(conn, job, "test")  # the completion holds the live account ...
        deletion.start()
        wait_until(lambda: waiting_on_a_lock(account))  # ... so the deletion waits for it
        conn.execute(
            "INSERT INTO memories (account_id, id, kind, content, indexing)"
            " VALUES (%s, %s, 'fact', 'written by the completion', 'disabled')",
            (account.id, uuid.uuid4()),
        )
    deletion.join(timeout=30)
    assert not deletion.is_alive()
    assert account.rows(
        "SELECT count(*) AS n FROM memories WHERE account_id = %s AND deleted_at IS NULL",
        account.id,
    ) == [{"n": 0}]


def waiting_on_a_lock(account: Account) -> bool:
    """Whether a session of the test database waits for a lock (the deletion's)."""
    rows = account.rows(
        "SELECT count(*) AS n FROM pg_stat_activity"
        " WHERE datname = current_database() AND wait_event_type = 'Lock'"
    )
    return bool(rows[0]["n"])


# --- every table holding an account's rows is covered ------------------------------------

DELETED = "t.deleted_at IS NOT NULL"
REVOKED = "t.revoked_at IS NOT NULL"


def of(table: str, column: str, mark: str = "deleted_at") -> str:
    """Rows that belong to a row of ``table`` (named by ``column``) marked by ``mark``."""
    return (
        f"EXISTS (SELECT 1 FROM {table} p WHERE p.account_id = t.account_id"
        f" AND p.id = t.{column} AND p.{mark} IS NOT NULL)"
    )


#: How each table holding an account's rows shows its deletion: a condition on its row
#: ``t`` that every one of the deleted account's rows must meet.
COVERED = {
    # Access: revoked at once.
    "connections": REVOKED,
    "api_keys": REVOKED,
    "shares": REVOKED,
    "connection_projects": of("connections", "connection_id", "revoked_at"),
    # Content with a mark of its own.
    "memories": DELETED,
    "projects": DELETED,
    "files": DELETED,
    "conversations": DELETED,
    # Content that belongs to a marked row: hidden by every read with it, purged with it.
    "memory_revisions": of("memories", "memory_id"),
    "embeddings": of("memories", "memory_id"),
    "note_words": of("memories", "memory_id"),
    "note_bands": of("memories", "memory_id"),
    "note_suggestions": of("memories", "memory_id"),
    "file_chunks": of("files", "file_id"),
    "conversation_turns": of("conversations", "conversation_id"),
    "turn_proposals": of("conversations", "conversation_id"),
    "notebook_briefs": of("projects", "project_id"),
    # Work for the account ends (but the deletion's own), memberships end.
    "jobs": f"t.status IN ('done', 'failed') OR t.kind = ANY(ARRAY{queue.AFTER_DELETION})",
    "org_members": "false",
    "project_members": "false",
}
#: Tables whose rows need no mark, each with the reason.
NO_MARK = {
    "account_owners": "the owner identity: tombstoned, it signs in only to 'was deleted'",
    "account_usage": "counters the triggers keep, not content",
    "account_quotas": "the account's limits, set by an operator",
    "account_enrichment": "the count of enrichment runs a day",
    "operations": "idempotency records, replayed only to the account's credentials: revoked",
    "imports": "an import's state and counts, no content",
    "api_key_lookup": "a key's hash and account, no content; the key's own row is revoked",
    "share_lookup": "a link's hash and account, no content; the link's own row is revoked",
}
ACCOUNT_TABLES = """
    SELECT c.table_name AS name FROM information_schema.columns c
    JOIN information_schema.tables t USING (table_schema, table_name)
    WHERE c.table_schema = 'public' AND c.column_name = 'account_id'
      AND t.table_type = 'BASE TABLE'
    ORDER BY 1
"""


@pytest.fixture
def full(quiet: tuple[str, Any]) -> Iterator[Account]:
    """An account holding rows in every table, made by the operations and the worker's
    jobs (embeddings from a fake provider through grove-ask, which also answers)."""
    account = new_account(quiet, profile="openai")
    fake = FakeEmbeddings(8)
    ask = start_fake_ask(fake)
    try:
        fill(account, ask.url)
        yield account
    finally:
        ask.stop()
        fake.close()


def fill(account: Account, ask: str) -> None:
    store, owner = account.store, account.owner
    admin.add_owner(account.migration_url, account.id, ISSUER, f"user-{uuid.uuid4().hex[:8]}")
    admin.set_quotas(account.migration_url, account.id, {"notes": 1000})
    account.save("Imported notes keep their words.")
    lines = list(export.export_lines(store, PostgresBlobs(), owner))
    imports.run_import(store, owner, uuid.uuid4(), lines)
    notebook, _ = notebooks.create_notebook(store, owner, CreateNotebookRequest(name="ops"))
    admin.create_key(account.migration_url, SECRET, account.id, "agent", notebook_ids=[notebook.id])
    for text in (DEPLOY, DEPLOY_AGAIN):
        account.save(text, notebook.id)
        account.save(f"{text} Unfiled.")
    note = account.save("The office plant needs water on Fridays.")
    account.upload(GATEWAY)
    for target in (ShareTarget(type="note", id=note), ShareTarget(type="notebook", id=notebook.id)):
        shares.create_share(store, owner, CreateShareRequest(target=target))
    org = orgs.create_org(store, owner, CreateOrgRequest(name="team"))
    orgs.create_project(store, owner, org.id, CreateProjectRequest(name="pool"))
    settings = WorkerSettings(
        database_url=embedded.role_url(account.superuser_url, embedded.RUNTIME_ROLE),
        embedding_profile="openai",
        ask_address=ask,
        worker_poll_seconds=0.2,
    )
    with (
        open_pool(
            settings.database_url, max_size=4, session_settings=settings.session_settings()
        ) as pool,
        running(settings, pool),
    ):
        wait_until(lambda: not pending(account), timeout=60)
    conversation = uuid.uuid4()
    conversations.create_conversation(store, owner, CreateConversationRequest(id=conversation))
    turn = TurnRequest(
        id=uuid.uuid4(), query="When do we deploy the billing service?", expectedVersion=1
    )
    answerer = InferenceClient(ask, "openai")
    try:
        turns.add_turn(store, answerer, owner, conversation, turn, timeout=30)
    finally:
        answerer.close()


def pending(account: Account) -> list[dict[str, Any]]:
    """The account's unfinished jobs, and the tables the worker fills still empty."""
    jobs = account.rows(
        "SELECT kind FROM jobs WHERE account_id = %s AND status IN ('queued', 'running')",
        account.id,
    )
    empty = [
        {"empty": table}
        for table in ("embeddings", "note_suggestions", "notebook_briefs", "account_enrichment")
        if not account.rows(f"SELECT 1 FROM {table} WHERE account_id = %s", account.id)
    ]
    return jobs + empty


@pytest.mark.parametrize("by", ["owner", "operator"])
def test_deleting_an_account_marks_its_rows_in_every_table_in_one_transaction(
    full: Account, by: str
) -> None:
    tables = [row["name"] for row in full.rows(ACCOUNT_TABLES)]
    unknown = sorted(set(tables) - set(COVERED) - set(NO_MARK))
    assert unknown == [], (
        "an account deletion does not say how it covers these tables: mark their rows"
        " in grove_auth.accounts and add them to COVERED, or to NO_MARK with the reason"
    )
    assert sorted(set(COVERED) | set(NO_MARK)) == tables  # no name left over
    count = "SELECT count(*) AS n FROM {} t WHERE t.account_id = %s"
    empty = [t for t in tables if full.rows(count.format(t), full.id) == [{"n": 0}]]
    assert empty == [], "the account must hold rows in every table before it is deleted"

    if by == "owner":
        full.delete()
    else:
        full.delete_as_operator()

    unmarked = {
        table: full.rows(f"{count.format(table)} AND NOT ({condition})", full.id)[0]["n"]
        for table, condition in COVERED.items()
    }
    assert unmarked == dict.fromkeys(COVERED, 0)
    # One transaction: every mark is its instant, the account's deletion time.
    (deleted,) = full.rows("SELECT deleted_at FROM accounts WHERE id = %s", full.id)
    marks = full.rows(
        "SELECT DISTINCT mark FROM (SELECT revoked_at FROM connections WHERE account_id = %(a)s"
        " UNION ALL SELECT revoked_at FROM api_keys WHERE account_id = %(a)s"
        " UNION ALL SELECT revoked_at FROM shares WHERE account_id = %(a)s"
        " UNION ALL SELECT deleted_at FROM memories WHERE account_id = %(a)s"
        " UNION ALL SELECT deleted_at FROM projects WHERE account_id = %(a)s"
        " UNION ALL SELECT deleted_at FROM files WHERE account_id = %(a)s"
        " UNION ALL SELECT deleted_at FROM conversations WHERE account_id = %(a)s"
        " UNION ALL SELECT finished_at FROM jobs WHERE account_id = %(a)s"
        "   AND last_error = %(ended)s) AS m (mark)",
        {"a": full.id, "ended": queue.ACCOUNT_DELETED},
    )
    assert marks == [{"mark": deleted["deleted_at"]}]


# --- share links ----------------------------------------------------------------------


def test_a_deleted_accounts_share_links_answer_not_found(stack: Stack) -> None:
    owner = new_owner(stack)
    notebook = owner.key.post("/v1/notebooks", {"name": "office hours"}).json()["data"]["id"]
    note = owner.key.save("Office hours are on Thursdays.", projectId=notebook)
    links = [owner.share("note", note["id"])["url"], owner.share("notebook", notebook)["url"]]
    assert [read(url).status_code for url in links] == [200, 200]
    deleted = owner.session.session.delete(
        f"{owner.session.base}/v1/account",
        json={"confirmation": accounts.CONFIRMATION},
        headers=owner.session.headers(),
        timeout=30,
    )
    assert deleted.status_code == 200, deleted.text
    assert [read(url).status_code for url in links] == [404, 404]
    with psycopg.connect(stack.database.grove_superuser_url) as conn:
        live = conn.execute(
            "SELECT count(*) FROM shares WHERE account_id = %s AND revoked_at IS NULL",
            (owner.tenant.account_id,),
        ).fetchone()
    assert live == (0,)
