"""Where the bytes of files live: the ``Blobs`` interface and its PostgreSQL store.

A file version's bytes are written once, from an iterator of chunks, and read back as
an iterator of chunks; nothing above this module knows where they are kept. The one
implementation, ``PostgresBlobs``, keeps them in ``file_chunks`` (256 KiB a row, under
the account's row-level security, inside the caller's transaction): nothing touches
local disk, and an object store can be added later behind the same interface.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol
from uuid import UUID

from grove_db.pool import Conn

#: The size of every stored chunk but a version's last.
CHUNK_BYTES = 256 * 1024

#: Opens one tenant transaction (the account's), for reading a chunk at a time.
Transactions = Callable[[], AbstractContextManager[Conn]]


@dataclass(frozen=True)
class BlobKey:
    """One version of one file of one account."""

    account_id: UUID
    file_id: UUID
    version: int


@dataclass(frozen=True)
class Written:
    """What was stored: the byte count and the SHA-256 digest (hex) of the bytes."""

    size: int
    sha256: str


class Blobs(Protocol):
    """Stores the bytes of file versions."""

    def write(self, conn: Conn, key: BlobKey, chunks: Iterable[bytes]) -> Written:
        """Store the bytes of ``key`` (a version written once) from ``chunks``, in the
        caller's transaction ``conn``: they are kept only if it commits."""
        ...

    def read(self, transactions: Transactions, key: BlobKey) -> Iterator[bytes]:
        """The bytes of ``key`` as chunks, each read in its own short transaction, so a
        slow reader holds no connection between them."""
        ...


INSERT_CHUNK = """
    INSERT INTO file_chunks (account_id, file_id, version, ordinal, data)
    VALUES (%s, %s, %s, %s, %s)
"""
SELECT_CHUNK = """
    SELECT data FROM file_chunks
    WHERE account_id = %s AND file_id = %s AND version = %s AND ordinal = %s
"""


class PostgresBlobs:
    """``Blobs`` in PostgreSQL: rows of ``file_chunks``, ``CHUNK_BYTES`` each."""

    def write(self, conn: Conn, key: BlobKey, chunks: Iterable[bytes]) -> Written:
        """Store ``chunks`` re-cut to ``CHUNK_BYTES`` rows (at most one row held)."""
        digest, size, ordinal, pending = hashlib.sha256(), 0, 0, b""
        for chunk in chunks:
            digest.update(chunk)
            size += len(chunk)
            pending += chunk
            while len(pending) >= CHUNK_BYTES:
                self._insert(conn, key, ordinal, pending[:CHUNK_BYTES])
                ordinal, pending = ordinal + 1, pending[CHUNK_BYTES:]
        if pending:
            self._insert(conn, key, ordinal, pending)
        return Written(size, digest.hexdigest())

    def read(self, transactions: Transactions, key: BlobKey) -> Iterator[bytes]:
        """Each stored row in order, one transaction per row."""
        ordinal = 0
        while True:
            with transactions() as conn:
                row = conn.execute(
                    SELECT_CHUNK, (key.account_id, key.file_id, key.version, ordinal)
                ).fetchone()
            if row is None:
                return
            yield bytes(row["data"])
            ordinal += 1

    @staticmethod
    def _insert(conn: Conn, key: BlobKey, ordinal: int, data: bytes) -> None:
        conn.execute(INSERT_CHUNK, (key.account_id, key.file_id, key.version, ordinal, data))
