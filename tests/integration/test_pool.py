"""The runtime pool's limits: the statement deadline cancels slow statements."""

from __future__ import annotations

import psycopg
import pytest

from grove_contracts.errors import ERROR_STATUS
from grove_db import embedded
from grove_db.errors import QueryTimeout
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
