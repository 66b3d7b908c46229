"""Saving many notes in one request, each exactly as a single save would.

Each item runs through ``notes.remember``: its own tenant transaction, its own
operationId and idempotency record, the same grants, quotas and errors. So one bad
item never rolls back the others, and a retried batch replays the items that ran.
"""

from __future__ import annotations

from grove_auth.principal import Principal
from grove_contracts.notes import (
    BatchItemResult,
    BatchRememberRequest,
    BatchResult,
    BatchStatus,
    InvalidItem,
    ItemError,
    RememberRequest,
)
from grove_db.errors import QuotaExceeded
from grove_memory.errors import AccountDeleted, ServiceError
from grove_memory.notes import notes
from grove_memory.store import Store, require


def remember_batch(store: Store, principal: Principal, req: BatchRememberRequest) -> BatchResult:
    """Save each item as ``notes.remember`` would; a refused item is ``failed`` alone.

    The write capability is checked once, before any item. An item that did not
    validate, or an item's domain error (not found, conflicts, the account's quota,
    ...), becomes its ``failed`` outcome; an
    account deleted meanwhile, or the database failing, ends the whole request, and the
    items already saved stay saved (a retry with the same operationIds replays them).
    """
    require(principal, "write")
    return BatchResult(
        items=[_save_one(store, principal, index, item) for index, item in enumerate(req.items)]
    )


#: The message of an item that did not validate (its ``details`` name the fields).
INVALID = "the item is not valid"


def _save_one(
    store: Store, principal: Principal, index: int, item: RememberRequest | InvalidItem
) -> BatchItemResult:
    if isinstance(item, InvalidItem):
        error = ItemError(code="validation_error", message=INVALID, details=item.details)
        return BatchItemResult(index=index, status="failed", error=error)
    try:
        saved = notes.remember(store, principal, item, similar=False)
    except AccountDeleted:
        raise
    except (ServiceError, QuotaExceeded) as ex:
        error = ItemError(code=ex.code, message=ex.message)
        return BatchItemResult(index=index, status="failed", error=error)
    status: BatchStatus = "created" if saved.created else "updated"
    if saved.replayed:
        status = "replayed"
    return BatchItemResult(index=index, status=status, memory=saved.memory)
