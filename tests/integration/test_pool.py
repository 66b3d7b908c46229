"""The runtime pool's limits: the statement deadline cancels slow statements."""

from __future__ import annotations

import pytest

from grove_contracts.errors import ERROR_STATUS
from grove_db import embedded
from grove_db.errors import QueryTimeout
from grove_db.pool import open_pool, transaction


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
