"""The last paths checked on a Citus cluster, and migrations on a cluster already placed.

A real grove-api runs against the coordinator of a coordinator and two workers
(``citus_database``), whose services' roles refuse any statement touching more than one
shard (``tests/support/cluster.py``): a per-account statement that does not name its
account as a value answers 500 there, and fails these tests. The api answers through a
real grove-ask on the ``openai`` generator, whose chat model is a scripted endpoint on
loopback (the one stand-in), and takes owner sessions. For two accounts, each seeing
only its own: an owner's export (notes, connections, conversations), and the model's
edit, create and organize proposals on an Ask turn, applied and undone.

``grove enrich reindex`` and ``reset`` (per account) name the account in every statement
and queue each notebook's brief, the classification and each file's extraction once,
which the worker's claims then find.

``grove indexes`` builds a large account's own HNSW index (one per shard, Citus's), which
the account's semantic statement, still one task, reads on its shard.

Migrations: on a cluster whose tables are placed, ``grove migrate --citus`` sends a
migration's statements one at a time (the coordinator carries DDL on a distributed or
reference table to the nodes as its text, which must be one command), still one
transaction per migration, and distributes a tenant table a later migration made.
"""

from __future__ import annotations

import json
import re
import secrets
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg.rows import dict_row

from bench import bulk
from grove_auth.principal import Principal
from grove_cli import admin, indexes
from grove_cli.launch import Running
from grove_db import embedded, queue
from grove_db.migrate import migrate
from grove_db.pool import FAN_OUT_LEVEL, open_pool, set_tenant
from grove_memory.rows import MEMORY_COLUMNS
from grove_memory.scope import VISIBLE
from grove_memory.search import recall
from tests.support import cluster, loopback
from tests.support.clients import data_of
from tests.support.files import uploaded
from tests.support.owners import OwnedAccount, Provider, owned_tenant
from tests.support.processes import start_api, start_ask
from tests.support.tenants import Tenant, new_tenant

#: Words only one account's notes hold, so a leak would be found in the other's answers.
WORDS = {"a": "pangolin", "b": "axolotl"}
#: The enrichment kinds (no profile) that grove enrich queues.
ENRICHMENT = [queue.BRIEF_NOTEBOOK, queue.CLASSIFY_NOTES, queue.EXTRACT_FILE]


def guarded(url: str) -> str:
    """``url`` under the guard the services run with: a statement on several shards fails."""
    return f"{url}&options=-c%20{FAN_OUT_LEVEL}%3Derror"


#: The chat model's reply to a prompt: by default, no answer (the evidence does not say).
Reply = Callable[[str], dict[str, Any]]
SILENT: Reply = lambda prompt: {"answer": "", "citations": []}  # noqa: E731


@dataclass
class Stack:
    provider: Provider
    api: Running
    database: embedded.EmbeddedDatabase
    replies: list[Reply]  # the model's next reply, set by a test


def scripted_model(replies: list[Reply]) -> loopback.Server:
    """An OpenAI-compatible chat endpoint answering each prompt with ``replies[0]``."""

    class Chat(loopback.Handler):
        def do_POST(self) -> None:  # http.server's method name
            prompt = json.loads(self.body())["messages"][1]["content"]
            content = json.dumps(replies[0](prompt))
            message = {"role": "assistant", "content": content}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            self.answer({"object": "chat.completion", "choices": [choice]})

    return loopback.Server(Chat)


@pytest.fixture(scope="module")
def stack(citus_database: embedded.EmbeddedDatabase) -> Iterator[Stack]:
    """grove-api on the coordinator answering through grove-ask on the ``openai``
    generator, whose chat model is scripted; with owner sessions (conversations,
    proposals and an owner's export are the owner's)."""
    replies = [SILENT]
    model = scripted_model(replies)
    provider = Provider()
    ask = start_ask(
        {
            "GROVE_EMBEDDING_PROFILE": "disabled",
            "GROVE_ANSWER_GENERATOR": "openai",
            "GROVE_ANSWER_OPENAI_BASE_URL": f"{model.url}/v1",
            "GROVE_ANSWER_OPENAI_MODEL": "scripted",
        }
    )
    api = start_api(
        {
            "GROVE_DATABASE_URL": citus_database.runtime_url,
            "GROVE_EMBEDDING_PROFILE": "disabled",
            "GROVE_ASK_ADDRESS": ask.url,
            "GROVE_API_WORKERS": "1",
            **provider.env(),
        }
    )
    yield Stack(provider, api, citus_database, replies)
    api.stop()
    ask.stop()
    provider.close()
    model.close()


def numbered(prompt: str, text: str) -> int:
    """The number the prompt gave the evidence item or notebook line holding ``text``."""
    found = re.search(r"\[(\d+)\] " + re.escape(text), prompt) or re.search(
        r"^(\d+)\. " + re.escape(text), prompt, re.MULTILINE
    )
    assert found, f"{text!r} is not in the prompt"
    return int(found.group(1))


@pytest.fixture(scope="module")
def owners(stack: Stack) -> dict[str, OwnedAccount]:
    return {
        name: OwnedAccount(stack, *owned_tenant(stack.database, stack.api.url)) for name in WORDS
    }


def ok(response: Any, status: int = 200) -> Any:
    """The answer's data, after checking its status (a fan-out answers 500)."""
    assert response.status_code == status, response.text
    return data_of(response)


def conversation_with_a_turn(owner: OwnedAccount, query: str) -> tuple[str, dict[str, Any]]:
    """A new conversation of the owner's and its first turn, answered by grove-ask."""
    conversation = ok(owner.session.post("/v1/conversations", {"id": str(uuid.uuid4())}), 201)
    path = f"/v1/conversations/{conversation['id']}"
    body = {"id": str(uuid.uuid4()), "query": query, "expectedVersion": 1}
    return path, ok(owner.session.post(path + "/turns", body), 201)["turn"]


@pytest.fixture(scope="module")
def tenants(citus_database: embedded.EmbeddedDatabase, citus_api: str) -> dict[str, Tenant]:
    return {name: new_tenant(citus_database, citus_api) for name in ("a", "b")}


def write_migrations(folder: Path, files: dict[str, str]) -> Path:
    """A throwaway migrations folder holding ``files`` (name: SQL)."""
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def test_a_migration_altering_distributed_tables_runs_on_a_placed_cluster(
    citus_database: embedded.EmbeddedDatabase, tmp_path: Path
) -> None:
    table = f"{cluster.THROWAWAY}{secrets.token_hex(4)}"  # left out of test_citus' checks
    first = 1_000_000_000 + secrets.randbelow(1_000_000_000)  # apart from the real ones
    url = citus_database.migration_url
    made = write_migrations(
        tmp_path / "made",
        {
            # A new tenant table whose foreign key points at the reference table accounts
            # (Citus adds it to its metadata at once), then altered in the same file.
            f"{first}_table.sql": f"""
                CREATE TABLE {table} (
                    account_id uuid NOT NULL REFERENCES accounts (id),
                    id bigint NOT NULL,
                    PRIMARY KEY (account_id, id)
                );
                ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;  -- a comment; with a semicolon
                CREATE POLICY tenant ON {table} USING (account_id = grove_current_account());
            """,
        },
    )
    try:
        assert migrate(url, citus=True, folder=made) == [first]
        with psycopg.connect(citus_database.grove_superuser_url) as conn:
            groups = conn.execute(
                "SELECT logicalrelid::text, partmethod, colocationid FROM pg_dist_partition"
                " WHERE logicalrelid::text IN (%s, 'memories') ORDER BY 1 DESC",
                (table,),
            ).fetchall()
        # Distributed by account, with the other tenant tables.
        assert [(name, method) for name, method, _ in groups] == [
            (table, "h"),
            ("memories", "h"),
        ]
        assert groups[0][2] == groups[1][2]

        altered = write_migrations(
            tmp_path / "altered",
            {
                f"{first + 1}_alter.sql": f"""
                    /* Two ALTERs of a distributed table; a function whose body holds
                       semicolons; a string with one. */
                    ALTER TABLE {table} ADD COLUMN body text NOT NULL DEFAULT 'a;b';
                    ALTER TABLE {table} ADD COLUMN kept boolean;
                    CREATE FUNCTION {table}_word() RETURNS text LANGUAGE plpgsql AS $fn$
                    BEGIN
                        RETURN 'c;d';
                    END;
                    $fn$;
                    CREATE INDEX ON {table} (account_id, body);
                """,
                # Fails at its last statement: the migration is one transaction still.
                f"{first + 2}_broken.sql": f"""
                    ALTER TABLE {table} ADD COLUMN never text;
                    SELECT no_such_function();
                """,
            },
        )
        with pytest.raises(psycopg.errors.UndefinedFunction):
            migrate(url, citus=True, folder=altered)
        account = admin.create_account(url, "migration probe")
        with psycopg.connect(citus_database.grove_superuser_url) as conn:
            conn.execute(f"INSERT INTO {table} (account_id, id) VALUES (%s, 1)", (account,))
            row = conn.execute(
                f"SELECT body, kept FROM {table} WHERE account_id = %s", (account,)
            ).fetchone()
            assert row == ("a;b", None)
            assert conn.execute(f"SELECT {table}_word()").fetchone() == ("c;d",)
            columns = conn.execute(
                "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0"
                " AND NOT attisdropped ORDER BY attnum",
                (table,),
            ).fetchall()
            assert [c for (c,) in columns] == ["account_id", "id", "body", "kept"]
            recorded = conn.execute(
                "SELECT version FROM schema_migrations WHERE version >= %s ORDER BY 1", (first,)
            ).fetchall()
            assert recorded == [(first,), (first + 1,)]
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP TABLE IF EXISTS {table} CASCADE")
            conn.execute(f"DROP FUNCTION IF EXISTS {table}_word()")
            conn.execute("DELETE FROM schema_migrations WHERE version >= %s", (first,))


def queued_jobs(database: embedded.EmbeddedDatabase, account: object) -> list[tuple[str, str]]:
    """The account's queued enrichment jobs: kind and notebook or file."""
    with psycopg.connect(database.grove_superuser_url) as conn:
        rows = conn.execute(
            "SELECT kind, coalesce(payload->>'notebookId', payload->>'fileId', '') FROM jobs"
            " WHERE account_id = %s AND status = 'queued' AND kind = ANY(%s) ORDER BY 1, 2",
            (account, ENRICHMENT),
        ).fetchall()
    return [(kind, target) for kind, target in rows]


def test_grove_enrich_queues_each_job_once_on_the_accounts_shard(
    citus_database: embedded.EmbeddedDatabase, tenants: dict[str, Tenant]
) -> None:
    a, b = tenants["a"], tenants["b"]
    notebooks = [a.notebook("billing"), a.notebook("travel")]
    for notebook in notebooks:
        a.client.save("Invoices go out on the first.", projectId=notebook)
    a.notebook("empty")  # no notes: nothing to brief
    file_id = uploaded(a.client, b"# Runbook\n\nRestart at two.", "text/markdown")["id"]
    b.client.save("A note of another account.", projectId=b.notebook("theirs"))
    with psycopg.connect(citus_database.grove_superuser_url, autocommit=True) as conn:
        # What the saves' triggers and the upload queued is done: grove enrich queues anew.
        conn.execute("UPDATE jobs SET status = 'done' WHERE account_id = %s", (a.account_id,))
    theirs = queued_jobs(citus_database, b.account_id)
    url = guarded(citus_database.migration_url)
    done = admin.enrich(url, a.account_id, reset=True, files=True)
    assert done == {
        "suggestions dropped": 0,
        "briefs dropped": 0,
        "jobs queued": 3,
        "files queued": 1,
    }
    expected = sorted(
        [(queue.BRIEF_NOTEBOOK, n) for n in notebooks]
        + [(queue.CLASSIFY_NOTES, ""), (queue.EXTRACT_FILE, file_id)]
    )
    assert queued_jobs(citus_database, a.account_id) == expected
    # Again: the brief and classification already queued are not queued twice.
    again = admin.enrich(url, a.account_id, reset=False, files=False)
    assert again == {"suggestions dropped": 0, "jobs queued": 0}
    assert queued_jobs(citus_database, a.account_id) == expected
    assert queued_jobs(citus_database, b.account_id) == theirs  # untouched

    # The worker's claims (per shard, as the runtime role under the guard) find each
    # once; jobs of other accounts claimed meanwhile are given back at once. (A worker
    # of another test on the shared cluster may claim some first: each is claimed once.)
    pool = open_pool(citus_database.runtime_url, max_size=2)
    claimed: list[queue.Job] = []
    try:
        with psycopg.connect(citus_database.grove_superuser_url) as conn:
            ids = [
                id_
                for (id_,) in conn.execute(
                    "SELECT id FROM jobs WHERE account_id = %s AND status = 'queued'",
                    (a.account_id,),
                )
            ]
        for _ in range(50):  # claims are fair across accounts: a few take them all
            if not queued_jobs(citus_database, a.account_id):
                break
            jobs = queue.claim(pool, "paths", None, 50, 60, sweeps=ENRICHMENT)
            others = [(j.account_id, j.id) for j in jobs if j.account_id != a.account_id]
            queue.release(pool, "paths", others)
            claimed += [j for j in jobs if j.account_id == a.account_id]
        assert claimed and {j.id for j in claimed} <= set(ids)
        assert len({j.id for j in claimed}) == len(claimed)
        with psycopg.connect(citus_database.grove_superuser_url) as conn:
            attempts = conn.execute(
                "SELECT attempts FROM jobs WHERE account_id = %s AND id = ANY(%s)",
                (a.account_id, ids),
            ).fetchall()
        assert attempts == [(1,)] * len(expected)  # each claimed once, by whichever worker
    finally:
        queue.release(pool, "paths", [(j.account_id, j.id) for j in claimed])
        pool.close()


def test_an_owners_export_holds_its_notes_connections_and_conversations_only(
    owners: dict[str, OwnedAccount],
) -> None:
    exports = {}
    for name, owner in owners.items():
        owner.key.save(f"The {WORDS[name]} runbook lives in the wiki.")
        conversation_with_a_turn(owner, f"Where does the {WORDS[name]} runbook live?")
        response = owner.session.get("/v1/export")
        assert response.status_code == 200, response.text
        exports[name] = [json.loads(line) for line in response.text.splitlines() if line]
    for name, owner in owners.items():
        lines, theirs = exports[name], WORDS["b" if name == "a" else "a"]
        kinds = [line["type"] for line in lines]
        assert kinds[0] == "export" and {"connection", "conversation", "memory"} <= set(kinds)
        connections = [line["connection"] for line in lines if line["type"] == "connection"]
        assert [c["keyPrefix"] for c in connections] == [(owner.key.key or "")[:12]]
        (conversation,) = [line for line in lines if line["type"] == "conversation"]
        assert len(conversation["turns"]) == 1
        assert WORDS[name] in conversation["turns"][0]["query"]
        notes = [line["memory"]["content"] for line in lines if line["type"] == "memory"]
        assert notes == [f"The {WORDS[name]} runbook lives in the wiki."]
        assert theirs not in json.dumps(lines)


def test_the_models_edit_create_and_organize_proposals_apply_and_undo_on_one_account(
    stack: Stack, owners: dict[str, OwnedAccount]
) -> None:
    """The model (a scripted chat endpoint behind grove-ask) proposes an edit, a new note
    and a move on an Ask turn; the owner applies and undoes each through the api."""
    for name, owner in owners.items():
        word, other = WORDS[name], owners["b" if name == "a" else "a"]
        shelf = owner.tenant.notebook(f"{word} shelf")
        note = owner.key.save(f"The {word} gate code is 1234.")
        moved = owner.key.save(f"Visitors to the {word} office wait at the gate.")

        def reply(prompt: str, word: str = word) -> dict[str, Any]:
            return {
                "answer": "The code is 1234.",
                "citations": [
                    {
                        "evidence": numbered(prompt, f"The {word} gate code"),
                        "quote": f"The {word} gate code is 1234.",
                    }
                ],
                "proposals": [
                    {
                        "action": "edit",
                        "summary": "New code",
                        "note": numbered(prompt, f"The {word} gate code"),
                        "content": f"The {word} code is 4321.",
                    },
                    {
                        "action": "create",
                        "summary": "Couriers",
                        "content": f"{word} couriers use the loading bay.",
                        "kind": "fact",
                    },
                    {
                        "action": "organize",
                        "summary": "File it",
                        "notes": [numbered(prompt, f"Visitors to the {word}")],
                        "to": numbered(prompt, f"{word} shelf"),
                    },
                ],
            }

        stack.replies[0] = reply
        try:
            path, turn = conversation_with_a_turn(
                owner, f"Reword the {word} gate code note and file the visitors note."
            )
        finally:
            stack.replies[0] = SILENT
        offered = [p for p in turn["proposals"] if p["source"] == "model"]
        assert [p["change"]["action"] for p in offered] == ["edit", "create", "organize"]
        assert offered[2]["change"]["noteIds"] == [moved["id"]]
        edit, create, organize = (f"{path}/proposals/{p['id']}" for p in offered)
        # Another account's owner finds none of them.
        assert other.session.post(edit + "/apply", {}).status_code == 404
        ok(owner.session.post(edit + "/apply", {}))
        changed = ok(owner.key.get(f"/v1/memories/{note['id']}"))
        assert changed["content"] == f"The {word} code is 4321."
        ok(owner.session.post(edit + "/undo", {}))
        restored = ok(owner.key.get(f"/v1/memories/{note['id']}"))
        assert restored["content"] == f"The {word} gate code is 1234."
        ok(owner.session.post(create + "/apply", {}))
        found = ok(owner.key.post("/v1/memories/search", {"query": "couriers loading bay"}))
        assert [i["memory"]["content"] for i in found["items"]] == [
            f"{word} couriers use the loading bay."
        ]
        ok(owner.session.post(create + "/undo", {}))
        found = ok(owner.key.post("/v1/memories/search", {"query": "couriers loading bay"}))
        assert found["items"] == []
        ok(owner.session.post(organize + "/apply", {}))
        assert ok(owner.key.get(f"/v1/memories/{moved['id']}"))["projectId"] == shelf
        ok(owner.session.post(organize + "/undo", {}))
        assert ok(owner.key.get(f"/v1/memories/{moved['id']}"))["projectId"] is None


def semantic_plan(database: embedded.EmbeddedDatabase, account: uuid.UUID) -> tuple[str, int]:
    """The account's semantic statement as the runtime role (under the guard), with an
    exact sort priced out: its plan as text, and how many notes it found."""
    principal = Principal(account, uuid.uuid4(), personal=True, all_notebooks=True)
    statement = recall.SEMANTIC.format(
        columns=MEMORY_COLUMNS, visible=VISIBLE, scope="true", dims=384
    )
    values = recall.semantic_params(principal, [1.0] + [0.0] * 383, "minilm", {"limit": 5})
    with psycopg.connect(database.runtime_url, row_factory=dict_row) as conn:
        with conn.transaction():
            set_tenant(conn, account)
            recall.walk_for_this_tenant(conn)
            conn.execute("SET LOCAL enable_sort = off")  # only an HNSW scan orders
            plan = conn.execute("EXPLAIN (FORMAT JSON) " + statement, values).fetchone()
            found = conn.execute(statement, values).fetchall()
    assert plan is not None
    return json.dumps(plan["QUERY PLAN"]), len(found)


def test_grove_indexes_gives_a_large_account_its_own_graph_on_its_shard(
    citus_database: embedded.EmbeddedDatabase,
) -> None:
    rng = np.random.default_rng(49)
    accounts = {}
    for label, size in (("large", 60), ("small", 10)):
        accounts[label] = admin.create_account(citus_database.migration_url, label)
        vectors = rng.normal(size=(size, 384))
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        notes = [f"{label} note {n}" for n in range(size)]
        bulk.load(citus_database.grove_superuser_url, str(accounts[label]), notes, vectors)
    url = guarded(citus_database.migration_url)
    large, threshold = accounts["large"], 40
    try:
        built = [
            (c.action, c.account_id, c.vectors) for c in indexes.ensure(url, "minilm", threshold)
        ]
        assert ("built", large, 60) in built
        assert accounts["small"] not in {account for _, account, _ in built}
        assert indexes.ensure(url, "minilm", threshold) == []  # nothing left to do
        # Citus names each shard's copy of the index after it, shortened, with its shard.
        own = re.escape(indexes.PREFIX + large.hex[:20]) + r"[0-9a-f_]*_\d+"
        plan, found = semantic_plan(citus_database, large)
        assert re.findall(r'"Task Count": \d+', plan) == ['"Task Count": 1']
        assert re.search(own, plan), plan
        assert found == 5
        plan, found = semantic_plan(citus_database, accounts["small"])
        assert re.findall(r'"Task Count": \d+', plan) == ['"Task Count": 1']
        assert not re.search(own, plan) and found == 5
    finally:
        with psycopg.connect(citus_database.migration_url, autocommit=True) as conn:
            name = indexes.index_name(large, "minilm")
            conn.execute(f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"')
