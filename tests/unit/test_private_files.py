"""Secret files are private from their first byte and written whole."""

from __future__ import annotations

import stat
from pathlib import Path

from grove_auth.private_files import write_private


def test_a_new_file_is_mode_600_and_replaces_or_keeps_as_asked(tmp_path: Path) -> None:
    path = tmp_path / "secret"
    assert write_private(path, b"first", replace=False)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not write_private(path, b"second", replace=False)  # the first writer wins
    assert path.read_bytes() == b"first"
    assert write_private(path, b"third")
    assert path.read_bytes() == b"third" and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["secret"]  # no temporary left behind
