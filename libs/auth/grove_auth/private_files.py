"""Files that hold secrets (the development issuer's key, ``.grove/`` state): written
with mode 600 from their first byte, and whole (a reader never sees half of one)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path


def write_private(path: Path, data: bytes, *, replace: bool = True) -> bool:
    """Write ``data`` to ``path`` with mode 600: a private temporary file moved (or, with
    ``replace=False``, hard-linked) into place. Without ``replace`` an existing file is
    kept, and the first of several processes racing to create it wins; False then."""
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)
    try:
        if replace:
            os.replace(temporary, path)
            return True
        try:
            os.link(temporary, path)  # fails if another process got there first
            return True
        except FileExistsError:
            return False
    finally:
        temporary.unlink(missing_ok=True)
