"""Large accounts for the scale benchmarks: varied notes, real MiniLM vectors, bulk load.

Notes are two or three LoCoMo turns joined at random (seeded, so every run makes the
same ones): varied text with real words. Their MiniLM vectors are computed once, in
this process, and cached under ``bench/.cache/`` in chunks of 5,000 (about 40-110
texts/s here: 100,000 notes take 15-40 minutes the first time; an interrupted run keeps
its finished chunks). Loading writes notes, revisions and embeddings straight into the
database with COPY as the superuser (COPY FROM is refused under row-level security).
"""

from __future__ import annotations

import hashlib
import random
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from bench.stack import turns
from grove_db.pool import set_tenant

CACHE = Path(__file__).resolve().parent / ".cache"
BATCH = 64
CHUNK = 5000


def texts(count: int, seed: int = 42) -> list[str]:
    """``count`` varied notes, the same for the same count and seed."""
    base = turns()
    rng = random.Random(seed)  # noqa: S311 - reproducible text, not cryptography
    return [" ".join(rng.sample(base, rng.choice((2, 3)))) for _ in range(count)]


def vectors(notes: list[str]) -> np.ndarray[Any, Any]:
    """MiniLM vectors of ``notes``, from the cache or computed (and cached) now.

    The cache holds chunks of ``CHUNK`` notes, each named by the hash of its texts, so an
    interrupted run keeps what it finished and a larger run reuses a smaller one's chunks.
    """
    model = None
    start = time.perf_counter()
    computed = 0
    parts = []
    for first in range(0, len(notes), CHUNK):
        chunk = notes[first : first + CHUNK]
        digest = hashlib.sha256("\n".join(chunk).encode()).hexdigest()[:16]
        path = CACHE / f"minilm-{len(chunk)}-{digest}.npy"
        if path.exists():
            parts.append(np.load(path))
            continue
        if model is None:
            from grove_ask.providers import MiniLM

            model = MiniLM()
        out = np.zeros((len(chunk), 384), dtype=np.float32)
        for offset in range(0, len(chunk), BATCH):
            out[offset : offset + BATCH] = model.embed(chunk[offset : offset + BATCH])
        computed += len(chunk)
        rate = computed / (time.perf_counter() - start)
        print(f"bench: embedded {first + len(chunk)}/{len(notes)} ({rate:.0f}/s)", flush=True)
        CACHE.mkdir(exist_ok=True)
        np.save(path, out)
        parts.append(out)
    return np.concatenate(parts) if parts else np.zeros((0, 384), dtype=np.float32)


def load(
    superuser_url: str,
    account_id: str,
    notes: list[str],
    vecs: Any | None,
    analyze: bool = True,
) -> None:
    """Write the notes (version 1, ``ready``), their revisions and vectors with COPY, then
    (unless ``analyze`` is False, for a caller loading many accounts) ``settle``.

    With ``vecs`` None the notes have no vectors and say ``disabled`` (enough for what
    reads text only, such as an export).
    """
    indexing = "ready" if vecs is not None else "disabled"
    ids = [uuid.uuid4() for _ in notes]
    account = uuid.UUID(account_id)
    # COPY FROM is refused on tables with row-level security, so this is the superuser.
    with psycopg.connect(superuser_url) as conn, conn.transaction():
        set_tenant(conn, account)
        with conn.cursor().copy(
            "COPY memories (account_id, id, kind, content, version, indexing) FROM STDIN"
        ) as copy:
            for note_id, content in zip(ids, notes, strict=True):
                copy.write_row((account, note_id, "fact", content, 1, indexing))
        with conn.cursor().copy(
            "COPY memory_revisions (account_id, memory_id, version, content, kind, capture)"
            " FROM STDIN"
        ) as copy:
            for note_id, content in zip(ids, notes, strict=True):
                copy.write_row((account, note_id, 1, content, "fact", "explicit"))
        if vecs is not None:
            _copy_vectors(conn, account, ids, vecs)
    if analyze:
        settle(superuser_url)


def _copy_vectors(
    conn: psycopg.Connection[Any], account: uuid.UUID, ids: list[uuid.UUID], vecs: Any
) -> None:
    with conn.cursor().copy(
        "COPY embeddings (account_id, memory_id, version, profile, dimensions, embedding)"
        " FROM STDIN"
    ) as copy:
        for note_id, vector in zip(ids, vecs, strict=True):
            literal = "[" + ",".join(f"{x:.7g}" for x in vector) + "]"
            copy.write_row((account, note_id, 1, "minilm", 384, literal))


def settle(superuser_url: str) -> None:
    """What autovacuum does after a large load, at once: ``VACUUM (ANALYZE)`` of the
    database, so the planner knows the tables' sizes and index-only scans (the postings'
    frequencies, ``note_words``) need not visit the heap for rows not yet marked visible."""
    with psycopg.connect(superuser_url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")
