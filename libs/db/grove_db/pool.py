"""The runtime connection pool and the one way to open a tenant transaction."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from uuid import UUID
from weakref import WeakKeyDictionary

import psycopg
from opentelemetry import trace
from opentelemetry.trace import SpanKind
from psycopg import sql
from psycopg.rows import dict_row, tuple_row
from psycopg_pool import ConnectionPool, PoolTimeout

from grove_db.errors import QUOTA_SQLSTATE, DatabaseError, QueryTimeout, QuotaExceeded

Conn = psycopg.Connection[dict[str, Any]]
#: A transaction idle this long (waiting on its client, not the database) is ended.
DEFAULT_IDLE_IN_TRANSACTION_MS = 60_000
tracer = trace.get_tracer("grove.db")


class TracedCursor(psycopg.Cursor[Any]):
    """A cursor whose every statement is a client span (operation only, never values)."""

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        with tracer.start_as_current_span(_operation(query), kind=SpanKind.CLIENT) as span:
            span.set_attribute("db.system.name", "postgresql")
            return super().execute(query, params, **kwargs)

    def executemany(self, query: Any, params_seq: Any, **kwargs: Any) -> None:
        with tracer.start_as_current_span(_operation(query), kind=SpanKind.CLIENT) as span:
            span.set_attribute("db.system.name", "postgresql")
            super().executemany(query, params_seq, **kwargs)


def _operation(query: Any) -> str:
    """The statement's first keyword (``SELECT``, ``WITH``, ...): the span name."""
    words = query.split(None, 1) if isinstance(query, str) else []
    return words[0].upper() if words else "SQL"


class Pool(ConnectionPool):
    """A pool of runtime connections that knows its connections' per-session settings.

    Each tenant transaction (``transaction``) repeats them with ``SET LOCAL``: on a Citus
    cluster the coordinator carries a ``SET LOCAL`` to every node the transaction
    touches, and a session's own settings to none, so the quota defaults that the usage
    triggers read on the account's node would otherwise be missing there.
    """

    def __init__(self, *args: Any, local_settings: Mapping[str, str], **kwargs: Any) -> None:
        self.local_settings = dict(local_settings)
        super().__init__(*args, **kwargs)


def open_pool(
    url: str,
    *,
    min_size: int = 1,
    max_size: int = 4,
    timeout: float = 5.0,
    statement_timeout_ms: int | None = None,
    idle_in_transaction_timeout_ms: int = DEFAULT_IDLE_IN_TRANSACTION_MS,
    session_settings: dict[str, str] | None = None,
) -> ConnectionPool:
    """Open a pool of runtime connections that return rows as dicts.

    ``statement_timeout_ms`` bounds every statement (PostgreSQL cancels it): a request's
    database deadline. ``idle_in_transaction_timeout_ms`` ends a session whose open
    transaction waits on its client longer than that (nothing holds back VACUUM for
    long, whatever the code above does). ``timeout`` is how long to wait for a free
    connection. ``session_settings`` are set on every connection (say, the quota
    defaults of ``grove_db.quotas``) and again in every tenant transaction (``Pool``).
    """
    # Every statement is planned with its values, even once psycopg has prepared it (after
    # five runs on a connection): on a Citus cluster a statement whose shard comes from
    # an array (``account_id = ANY($1)``) is routed only with the array's values; a plan
    # made for any values went to every shard (the worker stopped on the fan-out guard).
    options = "-c TimeZone=UTC -c plan_cache_mode=force_custom_plan"
    options += f" -c idle_in_transaction_session_timeout={int(idle_in_transaction_timeout_ms)}"
    if statement_timeout_ms:
        options += f" -c statement_timeout={int(statement_timeout_ms)}"
    for name, value in (session_settings or {}).items():
        options += f" -c {name}={value}"
    pool: ConnectionPool = Pool(
        url,
        local_settings=session_settings or {},
        min_size=min_size,
        max_size=max_size,
        timeout=timeout,
        kwargs={
            "row_factory": dict_row,
            "autocommit": False,
            "options": options,
            "cursor_factory": TracedCursor,
        },
        open=True,
    )
    return pool


@contextmanager
def transaction(
    pool: ConnectionPool, account_id: UUID | None = None, *, snapshot: bool = False
) -> Iterator[Conn]:
    """Run one transaction, scoped to ``account_id`` by a transaction-local setting.

    The setting is ``SET LOCAL``, so it ends with the transaction and a pooled
    connection never carries one tenant's context into another request. With
    ``snapshot``, every statement sees one snapshot (REPEATABLE READ).
    """
    try:
        with pool.connection() as conn, conn.transaction():
            if snapshot:
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            if account_id is not None:
                carried = pool.local_settings if isinstance(pool, Pool) else {}
                set_locally(conn, {TENANT: str(account_id), **carried})
            yield conn  # type: ignore[misc]  # the pool hands out dict_row connections
    except psycopg.OperationalError as ex:
        raise unavailable(ex) from ex
    except psycopg.Error as ex:
        if ex.sqlstate == QUOTA_SQLSTATE:
            raise QuotaExceeded(ex.diag.message_primary or "") from ex
        raise


#: Whether a pool's database has Citus installed, read once per pool (``distributed``).
_DISTRIBUTED: WeakKeyDictionary[ConnectionPool, bool] = WeakKeyDictionary()
CITUS_INSTALLED = "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')"


def distributed(pool: ConnectionPool) -> bool:
    """Whether the pool's database is a Citus cluster (``grove migrate --citus``).

    Read on the pool's first call and kept for the pool's life: a database does not
    become a cluster under running services (that is a migration and a restart), and
    a worker that asked on every claim paid a transaction of its own each time.
    """
    known = _DISTRIBUTED.get(pool)
    if known is None:
        with pool.connection() as conn, conn.transaction():
            row = conn.cursor(row_factory=tuple_row).execute(CITUS_INSTALLED).fetchone()
        known = _DISTRIBUTED[pool] = bool(row and row[0])
    return known


#: The account's lock (a transaction-level advisory lock, keyed apart from the single-key
#: locks of notebook trees and imports): writes hold it shared, a deletion exclusively.
#: Not the row ``FOR SHARE``: on Citus, ``accounts`` is a reference table, and two
#: transactions holding its row shared then writing a table whose foreign key points at
#: it deadlock on the reference table's shard lock (docs/scaling.md). The services talk
#: to the coordinator, which holds these locks for the whole cluster.
ACCOUNT_LOCK = "hashtext('grove.account'), hashtext({account}::text)"
HOLD_ACCOUNT = f"SELECT pg_advisory_xact_lock_shared({ACCOUNT_LOCK.format(account='%s')})"
#: A deletion's hold, first in its transaction (``grove_auth.accounts.DELETE_STEPS``).
HOLD_ACCOUNT_EXCLUSIVELY = (
    f"SELECT pg_advisory_xact_lock({ACCOUNT_LOCK.format(account='grove_current_account()')})"
)
LIVE_ACCOUNT = "SELECT 1 FROM accounts WHERE id = %s AND deleted_at IS NULL"


def hold_live_account(conn: psycopg.Connection[Any], account_id: UUID) -> bool:
    """Hold the account (shared) for the rest of the transaction; False if it is deleted.

    Every write of an account's content passes here before it writes: a request's
    (``grove_memory.idempotency.hold_account``) and a job's completion
    (``grove_db.queue.finish``). An account deletion takes the lock exclusively first, so
    it waits for the writes in flight and marks what they committed, and every write
    after it finds the account deleted and writes nothing: the row is read by a statement
    after the one that waited, so it sees what the deletion committed.
    """
    conn.execute(HOLD_ACCOUNT, (str(account_id),))
    return conn.execute(LIVE_ACCOUNT, (account_id,)).fetchone() is not None


#: SQLSTATE class 40, transaction rollback: serialization failure (40001), deadlock
#: (40P01), ... (psycopg's classes for them do not derive from one another).
TRANSACTION_ROLLBACK = "40"


def unavailable(ex: psycopg.OperationalError) -> DatabaseError:
    """What a caller is told when the database could not answer (503): the pool had no
    connection free in time, a statement ran past its deadline, the transaction lost to a
    concurrent one, or the server is gone. For code that borrows pooled connections
    itself rather than through ``transaction``."""
    if isinstance(ex, PoolTimeout):
        return DatabaseError("the database is busy; try again")
    if isinstance(ex, psycopg.errors.QueryCanceled):
        return QueryTimeout("the database took too long to answer; try again")
    if (ex.sqlstate or "").startswith(TRANSACTION_ROLLBACK):
        # A deadlock or a serialization failure: PostgreSQL rolled the whole transaction
        # back in favour of another. On a Citus cluster this is also how a write meets a
        # reference table being copied to a new node (docs/scaling.md). The same request
        # again normally succeeds, and a replay with its operationId is safe.
        return DatabaseError(
            "the database set this request aside for a concurrent one;"
            " nothing was changed, try again"
        )
    return DatabaseError("the database is unreachable")


def set_locally(conn: psycopg.Connection[Any], settings: Mapping[str, str]) -> None:
    """``SET LOCAL`` each of ``settings`` (they end with the transaction), in one round
    trip however many there are.

    Written as ``SET LOCAL`` statements rather than ``set_config()`` calls: on a Citus
    cluster (``citus.propagate_set_commands = 'local'``, docs/scaling.md) the coordinator
    carries a ``SET LOCAL`` to every node the transaction touches, so row-level security
    sees the same account there; a function call it does not carry.
    """
    conn.execute(
        sql.SQL("; ").join(
            sql.SQL("SET LOCAL {} = {}").format(
                sql.SQL(".").join(sql.Identifier(part) for part in name.split(".")),
                sql.Literal(value),
            )
            for name, value in settings.items()
        ),
        # Several statements in one go: sent as a simple query, never prepared (psycopg
        # prepares a statement on its fifth run, and a prepared one holds one command).
        prepare=False,
    )


#: The Citus setting that logs (or, at ``error``, refuses) a statement planned as more
#: than one task: one that reads or writes several shards. The test cluster sets it to
#: ``error`` for the services' roles (``grove_db.citus.refuse_fan_out``), so a per-account
#: statement that fans out fails its request; work that spans accounts by design says so
#: with ``fan_out``. On one server it is an unknown setting PostgreSQL keeps as written.
FAN_OUT_LEVEL = "citus.multi_task_query_log_level"


def fan_out(conn: psycopg.Connection[Any]) -> None:
    """Mark the current transaction as one that spans accounts by design (worker claims,
    sweeps, gauges, index upkeep; docs/scaling.md lists them): on a Citus cluster its
    statements may run on every shard without being reported."""
    set_locally(conn, {FAN_OUT_LEVEL: "off"})


#: The transaction-local setting row-level security keys on.
TENANT = "grove.account_id"


def set_tenant(conn: psycopg.Connection[Any], account_id: UUID) -> None:
    """Scope the current transaction to one account (row-level security key)."""
    set_locally(conn, {TENANT: str(account_id)})


def set_project(conn: psycopg.Connection[Any], org_id: UUID, project_id: UUID | None) -> None:
    """Enter one org (and project) for the rest of the transaction.

    Row-level security on the org tables keys on these settings, and on the pool's rows
    also on the current account's live membership of the entered project.
    """
    set_locally(conn, {"grove.org_id": str(org_id), "grove.project_id": str(project_id or "")})
