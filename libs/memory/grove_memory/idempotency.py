"""Operation records: a replayed operationId returns its first result.

Every mutation runs inside ``mutation``: one tenant transaction that first holds the
live account, then inserts the operation's record. A concurrent request with the same
ID blocks on the primary key until the first commits (then it replays) or rolls back
(then it runs). A failed operation leaves no record. An operation a deleted account ran
(its ID with the same arguments: ``operation_tombstones``, written by the deletion) is
refused in every account, 410.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar
from uuid import UUID

from psycopg.types.json import Jsonb
from pydantic import BaseModel

from grove_auth.errors import Unauthorized
from grove_auth.principal import Principal
from grove_db.pool import Conn, hold_live_account, transaction
from grove_memory.errors import AccountDeleted, Gone, IdempotencyConflict
from grove_memory.store import Store

Answer = TypeVar("Answer", bound=BaseModel)


@dataclass(frozen=True)
class Replay:
    """The stored outcome of an operation that already ran (its answer's JSON)."""

    response: dict[str, Any]

    def answer(self, model: type[Answer]) -> Answer:
        """The stored outcome as ``model``: it dumps to exactly the JSON first answered."""
        return model.model_validate(self.response)


class OperationRequest(Protocol):
    """The body of a mutation: its arguments and the caller's optional operationId."""

    @property
    def operationId(self) -> UUID | None: ...  # the wire name

    def model_dump(
        self, *, mode: str = ..., exclude: Any = ..., exclude_unset: bool = ...
    ) -> dict[str, Any]: ...


@dataclass
class Mutation:
    """One mutation's transaction and operation record.

    ``replay`` is set when the operationId already ran: return ``replay.answer(Model)``.
    Otherwise do the work on ``conn`` and return ``record(answer)``.
    """

    conn: Conn
    account_id: UUID
    operation_id: UUID | None
    replay: Replay | None
    before: Any = None
    recorded: bool = field(default=False, init=False)

    def record(self, response: Answer, memory_id: UUID | None = None) -> Answer:
        """Store ``response``'s JSON (and the note it saved) as the operation's outcome;
        returns ``response``."""
        if self.operation_id is not None:
            stored = Jsonb(response.model_dump(mode="json"))
            self.conn.execute(
                "UPDATE operations SET response = %s, memory_id = %s"
                " WHERE account_id = %s AND id = %s",
                (stored, memory_id, self.account_id, self.operation_id),
            )
        self.recorded = True
        return response


@contextmanager
def mutation(
    store: Store,
    principal: Principal,
    name: str,
    req: OperationRequest,
    *,
    supplied_only: bool = False,
    path: dict[str, Any] | None = None,
    before: Callable[[Conn], Any] | None = None,
) -> Iterator[Mutation]:
    """Run mutation ``name`` of ``req`` in one transaction under the caller's account.

    The arguments that must match on a replay are ``req``'s fields but the operationId
    (with ``supplied_only``, only those the caller set) plus ``path`` (IDs from the
    URL). Raises ``AccountDeleted``, ``IdempotencyConflict`` when the operationId was
    used with other arguments, and ``Gone`` when the note an earlier save produced has
    been deleted since or the operation is one a deleted account ran. The
    transaction commits when the block ends without an error.

    ``before`` reads in the transaction before it holds the account (``hold_account``):
    work that would otherwise lengthen every writer's hold, its result ``Mutation.before``.
    """
    arguments = {
        **(path or {}),
        **req.model_dump(mode="json", exclude={"operationId"}, exclude_unset=supplied_only),
    }
    with transaction(store.pool, principal.account_id) as conn:
        prepared = None if before is None else before(conn)
        replay = _begin(conn, principal, req.operationId, name, arguments)
        operation = Mutation(conn, principal.account_id, req.operationId, replay, prepared)
        yield operation
        if replay is None and not operation.recorded:
            raise RuntimeError(f"{name} finished without recording its result")


def request_hash(name: str, arguments: dict[str, Any]) -> str:
    """A stable digest of an operation's name and arguments (``operationId`` excluded)."""
    canonical = json.dumps([name, arguments], sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def hold_account(conn: Conn, principal: Principal) -> None:
    """Hold the live account (shared) for the transaction, or raise ``AccountDeleted``.

    Every write passes here first, so an account deletion waits for the writes in
    flight and the writes after it see it.
    """
    if not hold_live_account(conn, principal.account_id):
        raise AccountDeleted()


OWNS_ACCOUNT = "SELECT 1 FROM account_owners WHERE issuer = %s AND subject = %s AND account_id = %s"


def hold_session(conn: Conn, principal: Principal) -> None:
    """The owner session is still good: its identity still owns the account, and its
    token (whose expiry is the provider's wall-clock time) has not expired since the
    request began (work such as writing an answer outlives the request's start)."""
    if principal.owner_identity is not None:
        issuer, subject = principal.owner_identity
        owns = conn.execute(OWNS_ACCOUNT, (issuer, subject, principal.account_id)).fetchone()
        if owns is None:
            raise Unauthorized("this identity no longer owns the account")
    expires = principal.session_expires_at
    if expires is not None and datetime.now(UTC) >= expires:
        raise Unauthorized("the session expired while the answer was written; sign in and retry")


def _begin(
    conn: Conn,
    principal: Principal,
    operation_id: UUID | None,
    name: str,
    arguments: dict[str, Any],
) -> Replay | None:
    """Hold the live account; claim ``operation_id`` (None), or replay its outcome."""
    account_id = principal.account_id
    hold_account(conn, principal)
    if operation_id is None:
        return None
    # Bound to the credential, so another one can never replay this result.
    digest = request_hash(name, {"connection": str(principal.connection_id), **arguments})
    # Not bound to it: what a deleted account's operation is tombstoned as.
    operation = request_hash(name, arguments)
    claimed = conn.execute(
        "INSERT INTO operations (account_id, id, name, request_hash, arguments_hash)"
        " VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING id",
        (account_id, operation_id, name, digest, operation),
    ).fetchone()
    if claimed is not None:
        _check_not_tombstoned(conn, operation_id, operation)
        return None
    prior = conn.execute(
        "SELECT o.request_hash, o.response, o.memory_id, m.deleted_at FROM operations o"
        " LEFT JOIN memories m ON m.account_id = o.account_id AND m.id = o.memory_id"
        " WHERE o.account_id = %s AND o.id = %s",
        (account_id, operation_id),
    ).fetchone()
    assert prior is not None
    if prior["request_hash"] != digest:
        raise IdempotencyConflict()
    if prior["memory_id"] is not None and prior["deleted_at"] is not None:
        raise Gone()
    return Replay(response=prior["response"])


TOMBSTONED = "SELECT 1 FROM operation_tombstones WHERE id = %s AND arguments_hash = %s"


def _check_not_tombstoned(conn: Conn, operation_id: UUID, operation: str) -> None:
    """A deleted account's operation (its ID, the same arguments) is refused (the claim
    rolls back): a client retrying a save after that deletion, with whatever credential
    in whatever account, must not recreate what was deleted."""
    if conn.execute(TOMBSTONED, (operation_id, operation)).fetchone() is not None:
        raise Gone("this operation belonged to a deleted account and cannot run again")
