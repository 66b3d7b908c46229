"""Public share links: the owner's management, and what a reader may see.

A link's token is 32 random bytes (URL-safe base64, 43 characters), shown once; the
database keeps only HMAC-SHA-256(server secret, token). The owner manages links with an
owner session (``/v1/shares``, the runtime role, row-level security). grove-share reads
through ``grove_public_share`` and ``grove_public_share_notes`` only, as a role that can
do nothing else; both re-check on every request that the link is live (not revoked or
expired) and so is its target (not archived, deleted or expired), so a revocation or an
archive takes effect on the very next request and a restore brings the link back.

No link publishes a file: a passage (a note holding an uploaded file's text) cannot be a
link's target, and a notebook's link shows only the notes saved in it. The database
functions enforce both for every link, whenever it was made.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal
from uuid import UUID, uuid4

from grove_auth.connections import require_owner
from grove_auth.principal import Principal
from grove_contracts.shares import (
    CreatedShare,
    CreateShareRequest,
    PublicPageQuery,
    Share,
    ShareList,
    ShareListQuery,
    ShareTarget,
)
from grove_db.pool import transaction
from grove_memory import cursors
from grove_memory.errors import InvalidRequest, NotFound, ServiceError
from grove_memory.store import Store

TOKEN_BYTES = 32

SHARE_COLUMNS = """
    s.id, s.target_type, coalesce(s.memory_id, s.project_id) AS target_id, s.title,
    s.indexable, s.created_at, s.expires_at, s.revoked_at,
    s.expires_at IS NOT NULL AND s.expires_at <= statement_timestamp() AS expired,
    CASE s.target_type
        WHEN 'note' THEN m.file_id IS NULL AND m.deleted_at IS NULL AND m.archived_at IS NULL
                         AND (m.expires_at IS NULL OR m.expires_at > statement_timestamp())
        ELSE p.deleted_at IS NULL AND p.archived_at IS NULL
    END AS available,
    CASE s.target_type
        WHEN 'note' THEN CASE WHEN m.deleted_at IS NULL
                              THEN left(btrim(split_part(btrim(m.content), E'\n', 1)), 120) END
        ELSE CASE WHEN p.deleted_at IS NULL THEN p.name END
    END AS target_name
"""
#: The account's links with their targets: every table names the account
#: ``%(account)s`` as a value (a Citus cluster routes the statement to its node by it).
SHARE_FROM = """
    FROM shares s
    LEFT JOIN memories m ON m.account_id = %(account)s AND m.id = s.memory_id
    LEFT JOIN projects p ON p.account_id = %(account)s AND p.id = s.project_id
    WHERE s.account_id = %(account)s
"""
TARGET_STATE = {
    "note": """
        SELECT archived_at IS NOT NULL AS archived, file_id IS NOT NULL AS passage
        FROM memories
        WHERE account_id = %s AND id = %s AND deleted_at IS NULL
          AND (expires_at IS NULL OR expires_at > statement_timestamp())
    """,
    "notebook": """
        SELECT archived_at IS NOT NULL AS archived, false AS passage FROM projects
        WHERE account_id = %s AND id = %s AND deleted_at IS NULL
    """,
}
INSERT_SHARE = """
    INSERT INTO shares (account_id, id, token_hash, target_type, memory_id, project_id,
                        title, indexable, expires_at)
    VALUES (%(account)s, %(id)s, %(hash)s, %(type)s, %(memory)s, %(notebook)s,
            %(title)s, %(indexable)s, %(expires)s)
"""
#: Where a reader's token is found before its account is known (migration 0052).
INSERT_LOOKUP = "INSERT INTO share_lookup (token_hash, account_id) VALUES (%(hash)s, %(account)s)"


#: Why a passage cannot be a link's target: it holds an uploaded file's text, and no
#: link publishes a file.
PASSAGE_REFUSED = "is a passage of an uploaded file: files are never published by a link"


class TargetArchived(ServiceError):
    """That note or notebook is archived: restore it before sharing it."""

    code = "target_archived"
    status = 409


def new_token() -> str:
    """A fresh random link token."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def hash_token(secret: bytes, token: str) -> bytes:
    """The stored form of a token: HMAC-SHA-256 keyed with the server secret."""
    if not secret:
        raise RuntimeError("no share-link secret is configured: links cannot be hashed")
    return hmac.new(secret, token.encode(), hashlib.sha256).digest()


def share_url(public_url: str, token: str) -> str:
    """The link a reader opens."""
    return f"{public_url.rstrip('/')}/public/shares/{token}"


def create_share(store: Store, principal: Principal, body: CreateShareRequest) -> CreatedShare:
    """Publish a link to a live note or notebook of the owner's account.

    A passage is refused (``InvalidRequest`` on ``target.id``): no link shows a file's
    text. The token is hashed with ``store.share_secret``; the link is under
    ``store.share_public_url``.
    """
    require_owner(principal)
    token = new_token()
    share_id = uuid4()
    target = body.target
    with transaction(store.pool, principal.account_id) as conn:
        if body.expiresAt is not None:
            future = conn.execute(
                "SELECT %s > statement_timestamp() AS ok", (body.expiresAt,)
            ).fetchone()
            if not (future and future["ok"]):
                raise InvalidRequest("expiresAt", "must be in the future")
        state = conn.execute(
            TARGET_STATE[target.type], (principal.account_id, target.id)
        ).fetchone()
        if state is None:
            raise NotFound(f"{target.type} not found")
        if state["passage"]:
            raise InvalidRequest("target.id", PASSAGE_REFUSED)
        if state["archived"]:
            raise TargetArchived(f"that {target.type} is archived: restore it before sharing it")
        values = {
            "account": principal.account_id,
            "id": share_id,
            "hash": hash_token(store.share_secret, token),
            "type": target.type,
            "memory": target.id if target.type == "note" else None,
            "notebook": target.id if target.type == "notebook" else None,
            "title": body.title,
            "indexable": body.allowIndexing,
            "expires": body.expiresAt,
        }
        conn.execute(INSERT_SHARE, values)
        conn.execute(INSERT_LOOKUP, values)
        row = conn.execute(
            f"SELECT {SHARE_COLUMNS} {SHARE_FROM} AND s.id = %(id)s", values
        ).fetchone()
    assert row is not None
    url = share_url(store.share_public_url, token)
    return CreatedShare(**dict(_share(row)), url=url, token=token)


def list_shares(store: Store, principal: Principal, query: ShareListQuery) -> ShareList:
    """The account's links, newest first, every state (revoked ones say so)."""
    require_owner(principal)
    binding = {"a": str(principal.account_id), "l": "shares"}
    where = "true"
    values: dict[str, Any] = {"limit": query.limit + 1, "account": principal.account_id}
    if query.cursor:
        key_time, key_id = cursors.newest_after(store.cursor_secret, query.cursor, binding)
        where = "(s.created_at, s.id) < (%(key_time)s, %(key_id)s)"
        values.update(key_time=key_time, key_id=key_id)
    with transaction(store.pool, principal.account_id) as conn:
        rows = conn.execute(
            f"SELECT {SHARE_COLUMNS} {SHARE_FROM} AND {where}"
            " ORDER BY s.created_at DESC, s.id DESC LIMIT %(limit)s",
            values,
        ).fetchall()
    page, next_cursor = cursors.newest_page(store.cursor_secret, binding, rows, query.limit)
    return ShareList(items=[_share(r) for r in page], nextCursor=next_cursor)


def revoke_share(store: Store, principal: Principal, share_id: UUID) -> Share:
    """Revoke a link for good (revoking it again changes nothing)."""
    require_owner(principal)
    values = {"account": principal.account_id, "id": share_id}
    with transaction(store.pool, principal.account_id) as conn:
        conn.execute(
            "UPDATE shares SET revoked_at = statement_timestamp()"
            " WHERE account_id = %(account)s AND id = %(id)s AND revoked_at IS NULL",
            values,
        )
        row = conn.execute(
            f"SELECT {SHARE_COLUMNS} {SHARE_FROM} AND s.id = %(id)s", values
        ).fetchone()
    if row is None:
        raise NotFound("share not found")
    return _share(row)


def _share(row: dict[str, Any]) -> Share:
    status: Literal["active", "expired", "revoked"] = "active"
    if row["revoked_at"]:
        status = "revoked"
    elif row["expired"]:
        status = "expired"
    return Share(
        id=row["id"],
        target=ShareTarget(type=row["target_type"], id=row["target_id"]),
        targetName=row["target_name"] or None,
        title=row["title"],
        allowIndexing=row["indexable"],
        status=status,
        targetAvailable=bool(row["available"]),
        createdAt=row["created_at"],
        expiresAt=row["expires_at"],
        revokedAt=row["revoked_at"],
    )


@dataclass(frozen=True)
class SharedPage:
    """What a link shows, before grove-share renders it (``PublicShare`` holds each
    note's HTML, which only grove-share makes).

    ``title`` is the link's own (None: untitled); ``notes`` are rows (``kind``,
    ``content``, ``created_at``, ``updated_at``), newest first; ``next_cursor`` is
    signed and bound to the share.
    """

    type: Literal["note", "notebook"]
    title: str | None
    indexable: bool
    updated_at: datetime | None
    notes: list[dict[str, Any]]
    next_cursor: str | None


def public_page(store: Store, token_hash: bytes, query: PublicPageQuery) -> SharedPage | None:
    """What a reader of the link whose token hashes to ``token_hash`` (``hash_token``)
    sees, or None (unknown, revoked, expired, unavailable).

    ``store`` is grove-share's: the pool of its database role, which may only call the
    public share functions, and its own cursor secret.
    """
    with transaction(store.pool, snapshot=True) as conn:
        share = conn.execute("SELECT * FROM grove_public_share(%s)", (token_hash,)).fetchone()
        before: tuple[datetime | None, UUID | None] = (None, None)
        if share is not None and query.cursor:
            bound = {"s": str(share["share_id"])}
            before = cursors.newest_after(store.cursor_secret, query.cursor, bound)
        # Asked whether the share exists or not: an unknown token costs what a known one does.
        rows = conn.execute(
            "SELECT * FROM grove_public_share_notes(%s, %s, %s, %s)",
            (token_hash, *before, query.limit + 1),
        ).fetchall()
    if share is None:
        return None
    bound = {"s": str(share["share_id"])}
    page, next_cursor = cursors.newest_page(store.cursor_secret, bound, rows, query.limit)
    return SharedPage(
        type=share["target_type"],
        title=share["title"],
        indexable=share["indexable"],
        updated_at=share["updated_at"],
        notes=page,
        next_cursor=next_cursor,
    )


def note_title(content: str, limit: int = 80) -> str:
    """A title for a note shared without one: its first line, without Markdown markers."""
    first = next((line for line in content.splitlines() if line.strip()), "")
    text = first.strip().lstrip("#>*-+ ").strip() or "Shared note"
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
