"""The project-memory library against PostgreSQL directly: how many statements list and
retrieve issue (a query-count oracle with 10,001 records), and the expiry re-check when
retrieval reloads its ranked candidates."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any, ClassVar

from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from grove_contracts.project_memory import ListRecordsQuery, RetrieveRequest
from grove_db import embedded
from grove_db.pool import TracedCursor
from grove_memory.orgs import project_memory as pm
from grove_memory.store import Store
from tests.support.databases import superuser
from tests.support.teams import project_with


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
        hybrid = RetrieveRequest.model_validate(
            {
                "query": "deploy note",
                "limit": 50,
                "embedding": {"space": "space", "values": [1, 1, 0]},
            }
        )
        for principal, scope in (small, large):
            calls: dict[str, Callable[[], Any]] = {
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
        found = pm.retrieve(
            store, principal, scope, RetrieveRequest.model_validate({"query": "deploy note"})
        )
        assert not CountingCursor.hooks  # it ran, between ranking and reloading
    assert [r.key for r in found.records] == ["key-000001", "key-000003"]
