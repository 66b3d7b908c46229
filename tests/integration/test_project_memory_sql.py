"""The project-memory library against PostgreSQL directly: how many statements list and
retrieve issue (a query-count oracle with 10,001 records), and the expiry re-check when
retrieval reloads its ranked candidates."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any, ClassVar

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from grove_auth.principal import Principal
from grove_contracts.project_memory import ListRecordsQuery, RetrieveRequest
from grove_db import embedded
from grove_db.pool import TracedCursor
from grove_memory import project_memory as pm
from grove_memory.project_memory import ProjectScope
from grove_memory.store import Store
from tests.support.tenants import owner_of


class CountingCursor(TracedCursor):
    """Counts every statement; ``after`` runs a hook once a matching statement ran."""

    statements: ClassVar[list[str]] = []
    hooks: ClassVar[list[tuple[str, Callable[[], None]]]] = []

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        result = super().execute(query, params, **kwargs)
        text = str(query)
        CountingCursor.statements.append(text)
        for marker, hook in list(CountingCursor.hooks):
            if marker in text:
                CountingCursor.hooks.remove((marker, hook))
                hook()
        return result


@contextmanager
def counting_pool(database: embedded.EmbeddedDatabase) -> Iterator[ConnectionPool]:
    pool: ConnectionPool = ConnectionPool(
        database.runtime_url,
        min_size=1,
        max_size=1,
        kwargs={
            "row_factory": dict_row,
            "autocommit": False,
            "options": "-c TimeZone=UTC",
            "cursor_factory": CountingCursor,
        },
        open=True,
    )
    try:
        yield pool
    finally:
        pool.close()


def superuser(database: embedded.EmbeddedDatabase) -> psycopg.Connection[Any]:
    return psycopg.connect(database.grove_superuser_url, autocommit=True)


def project_with(
    database: embedded.EmbeddedDatabase, records: int
) -> tuple[Principal, ProjectScope]:
    """A person, an org and a project they administer holding ``records`` records."""
    account, org, project = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    with superuser(database) as conn:
        conn.execute("INSERT INTO accounts (id, name) VALUES (%s, 'person')", (account,))
        conn.execute(
            "INSERT INTO orgs (id, name, created_by) VALUES (%s, 'org', %s)", (org, account)
        )
        conn.execute(
            "INSERT INTO org_members (org_id, account_id, role) VALUES (%s, %s, 'owner')",
            (org, account),
        )
        conn.execute(
            "INSERT INTO org_projects (org_id, id, name) VALUES (%s, %s, 'p')", (org, project)
        )
        conn.execute(
            "INSERT INTO project_members (org_id, project_id, account_id, role)"
            " VALUES (%s, %s, %s, 'admin')",
            (org, project, account),
        )
        conn.execute(
            "INSERT INTO project_memories (org_id, project_id, key, title, body, body_sha256,"
            " kind, authority, prov_source, prov_ref, prov_verification, prov_observed_at,"
            " written_by, embedding, embedding_space, embedding_dims)"
            " SELECT %s, %s, 'key-' || lpad(i::text, 6, '0'), 'Record ' || i,"
            " 'deploy note number ' || i, sha256(convert_to('deploy note number ' || i, 'UTF8')),"
            " 'fact', 'observed', 'test', 'ref', 'unverified', now(), %s,"
            " ('[' || (i %% 7 + 1) || ',1,0]')::vector, 'space', 3"
            " FROM generate_series(1, %s) AS i",
            (org, project, account, records),
        )
        conn.execute("ANALYZE project_memories")
    return owner_of(account), ProjectScope(org, project)


def statements(run: Callable[[], Any]) -> int:
    CountingCursor.statements.clear()
    run()
    return len(CountingCursor.statements)


def test_list_and_retrieve_issue_a_bounded_number_of_statements(
    database: embedded.EmbeddedDatabase,
) -> None:
    small = project_with(database, 1)
    large = project_with(database, 10_001)
    counts: dict[str, list[int]] = {"list": [], "retrieve": [], "hybrid": []}
    with counting_pool(database) as pool:
        store = Store(pool=pool, cursor_secret=b"unused")
        page = ListRecordsQuery(limit=100)
        query = RetrieveRequest(query="deploy note", limit=50)
        hybrid = RetrieveRequest(
            query="deploy note", limit=50, embedding={"space": "space", "values": [1, 1, 0]}
        )
        for principal, scope in (small, large):
            calls = {
                "list": partial(pm.list, store, principal, scope, page),
                "retrieve": partial(pm.retrieve, store, principal, scope, query),
                "hybrid": partial(pm.retrieve, store, principal, scope, hybrid),
            }
            for name, run in calls.items():
                counts[name].append(statements(run))
        # The large project really returns full pages.
        principal, scope = large
        listed = pm.list(store, principal, scope, ListRecordsQuery(limit=100))
        assert len(listed.records) == 100 and listed.nextCursor == "key-000100"
        found = pm.retrieve(store, principal, scope, hybrid)
        assert len(found.records) == 50 and found.semantic.compatibleRecords == 10_001
    for operation, (one, many) in counts.items():
        assert one == many, (operation, one, many)
        assert many <= 5, (operation, many)  # tenant, scope, access, candidates, reload


def test_retrieval_rechecks_expiry_when_it_reloads_ranked_candidates(
    database: embedded.EmbeddedDatabase,
) -> None:
    principal, scope = project_with(database, 3)

    def expire_one() -> None:
        with superuser(database) as conn:
            conn.execute(
                "UPDATE project_memories SET expires_at = now() - interval '1 second'"
                " WHERE org_id = %s AND key = 'key-000002'",
                (scope.org_id,),
            )

    with counting_pool(database) as pool:
        store = Store(pool=pool, cursor_secret=b"unused")
        CountingCursor.hooks.append(("WITH words", expire_one))
        found = pm.retrieve(store, principal, scope, RetrieveRequest(query="deploy note"))
        assert not CountingCursor.hooks  # it ran, between ranking and reloading
    assert [r.key for r in found.records] == ["key-000001", "key-000003"]
