"""An ingested benchmark store kept on disk, so tuning can score it again and again.

Embedding LongMemEval's haystacks (~490 turns a question) takes the worker most of an
hour here; scoring a setting over them in process takes seconds. So a run can keep its
embedded PostgreSQL data directory (``--keep DIR``) and later runs start from it
(``--reuse DIR``) instead of saving and embedding everything again.

A store is only worth reusing if it holds exactly what a fresh run would save: the
manifest beside the data directory records each data file's SHA-256, the profile, and
for every conversation or question its account and a digest of the notes saved for it
(content and source, in order). Reuse recomputes them from today's data and code and
refuses the store when any differs or a wanted conversation or question is missing, so
a changed data file, question list or ingest format never scores stale notes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

MANIFEST = "manifest.json"
PGDATA = "pgdata"


class Stale(SystemExit):
    """the kept store does not hold what this run would save"""


def file_digest(path: Path) -> str:
    """The SHA-256 of a data file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def notes_digest(notes: Iterable[tuple[str, str]]) -> str:
    """The SHA-256 of notes as saved, in order: each ``(content, source ref)``."""
    digest = hashlib.sha256()
    for content, ref in notes:
        digest.update(json.dumps([content, ref]).encode())
    return digest.hexdigest()


def pgdata(directory: Path) -> Path:
    """Where the kept PostgreSQL's data lives."""
    return directory / PGDATA


def fresh(directory: Path) -> Path:
    """``directory`` for a store to be kept: it must not hold one already."""
    if directory.exists() and any(directory.iterdir()):
        raise Stale(f"bench: {directory} is not empty: keep a store in a new directory")
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def write(directory: Path, manifest: dict[str, Any]) -> None:
    """Record what the store holds, once everything in it is saved and embedded."""
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True))


def accounts(directory: Path, wanted: dict[str, Any]) -> dict[str, dict[str, str]]:
    """The kept accounts of what ``wanted`` describes, per dataset and item.

    ``wanted`` is a manifest as this run would write it, without accounts: per dataset,
    its ``file`` digest and ``notes`` (item -> notes digest), plus any other field
    (profile, seed) that must match. Raises ``Stale`` naming the first difference."""
    path = directory / MANIFEST
    if not path.exists():
        raise Stale(f"bench: {directory} holds no finished store ({MANIFEST} is missing)")
    kept = json.loads(path.read_text())
    found: dict[str, dict[str, str]] = {}
    for field, value in wanted.items():
        if not isinstance(value, dict):
            if kept.get(field) != value:
                was = kept.get(field)
                raise Stale(f"bench: the kept store's {field} is {was!r}, not {value!r}")
            continue
        dataset = kept.get(field, {})
        if dataset.get("file") != value["file"]:
            raise Stale(f"bench: the {field} data file changed since the store was kept")
        found[field] = {}
        for item, digest in value["notes"].items():
            if item not in dataset.get("notes", {}):
                raise Stale(f"bench: the kept store has no {field} {item}")
            if dataset["notes"][item] != digest:
                raise Stale(f"bench: {field} {item} would be saved differently now")
            found[field][item] = dataset["accounts"][item]
    return found
