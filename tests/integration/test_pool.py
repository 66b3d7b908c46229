"""The runtime pool's limits: the statement deadline cancels slow statements."""

from __future__ import annotations

import uuid

import psycopg
import pytest

from grove_contracts.errors import ERROR_STATUS
from grove_db import embedded
from grove_db.errors import DatabaseError, QueryTimeout
from grove_db.pool import open_pool, set_locally, transaction


def test_a_statement_over_the_deadline_is_cancelled_and_the_pool_recovers(
    database: embedded.EmbeddedDatabase,
) -> None:
    pool = open_pool(database.runtime_url, max_size=1, statement_timeout_ms=300)
    try:
        with transaction(pool) as conn:  # well inside the deadline
            conn.execute("SELECT pg_sleep(0.05)")
        with pytest.raises(QueryTimeout) as raised, transaction(pool) as conn:
            conn.execute("SELECT pg_sleep(1)")
        assert raised.value.code == "database_timeout"
        assert ERROR_STATUS[raised.value.code] == raised.value.status == 503
        assert "too long" in raised.value.message
        with transaction(pool) as conn:  # the same (only) connection still works
            row = conn.execute("SELECT current_setting('statement_timeout') AS t").fetchone()
        assert row is not None and row["t"] == "300ms"
    finally:
        pool.close()


def test_settings_are_set_locally_on_a_connection_that_prepares_every_statement(
    database: embedded.EmbeddedDatabase,
) -> None:
    # SET LOCAL statements, several in one round trip (Citus carries them to the nodes),
    # run on a connection that prepares what it can (psycopg's threshold reached, or 0),
    # and each ends with its transaction.
    settings = {"grove.queue": "claim", "hnsw.ef_search": "77", "plan_cache_mode": "auto"}
    with psycopg.connect(database.runtime_url, prepare_threshold=0) as conn:
        for _ in range(3):
            with conn.transaction():
                set_locally(conn, settings)
                row = conn.execute(
                    "SELECT current_setting('grove.queue'), current_setting('hnsw.ef_search')"
                ).fetchone()
                assert row == ("claim", "77")
        row = conn.execute("SELECT current_setting('grove.queue', true)").fetchone()
        assert row is not None and not row[0]


def test_a_transaction_rolled_back_for_a_concurrent_one_is_a_503_to_try_again(
    database: embedded.EmbeddedDatabase,
) -> None:
    # A serialization failure (and a deadlock, its sibling: on a Citus cluster a write that
    # meets a reference table being copied to a new node) rolls the whole transaction
    # back: a 503 that says nothing changed and to try again, not "unreachable".
    table = f"pool_conflict_{uuid.uuid4().hex}"
    with psycopg.connect(database.grove_superuser_url, autocommit=True) as other:
        other.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, n int)")
        other.execute(f"INSERT INTO {table} VALUES (1, 0)")
        pool = open_pool(database.grove_superuser_url, max_size=1)
        try:
            with pytest.raises(DatabaseError) as raised, transaction(pool, snapshot=True) as conn:
                conn.execute(f"SELECT n FROM {table} WHERE id = 1")  # the snapshot is taken
                other.execute(f"UPDATE {table} SET n = 1 WHERE id = 1")
                conn.execute(f"UPDATE {table} SET n = 2 WHERE id = 1")
            assert isinstance(raised.value.__cause__, psycopg.errors.SerializationFailure)
            assert raised.value.code == "unavailable"
            assert ERROR_STATUS[raised.value.code] == raised.value.status == 503
            assert raised.value.message == (
                "the database set this request aside for a concurrent one;"
                " nothing was changed, try again"
            )
            row = other.execute(f"SELECT n FROM {table}").fetchone()
            assert row == (1,)  # the concurrent change stands, the lost one left nothing
        finally:
            pool.close()
            other.execute(f"DROP TABLE {table}")
