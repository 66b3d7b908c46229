"""A kept benchmark store is reused only when it holds what a fresh run would save."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench import kept


def wanted(notes: dict[str, str], file: str = "f1") -> dict[str, Any]:
    return {"profile": "minilm", "longmemeval": {"file": file, "notes": notes}}


def keep(directory: Path) -> None:
    digests = {"q1": kept.notes_digest([("[d] user: hi", "r1")]), "q2": "d2"}
    manifest = wanted(digests)
    manifest["longmemeval"]["accounts"] = {"q1": "account-1", "q2": "account-2"}
    kept.write(kept.fresh(directory), manifest)


def test_a_kept_store_gives_the_accounts_of_the_questions_asked(tmp_path: Path) -> None:
    keep(tmp_path / "store")
    digest = kept.notes_digest([("[d] user: hi", "r1")])
    found = kept.accounts(tmp_path / "store", wanted({"q1": digest}))
    assert found == {"longmemeval": {"q1": "account-1"}}  # a subset of what was kept


@pytest.mark.parametrize(
    ("changed", "message"),
    [
        (wanted({"q1": kept.notes_digest([("[d] user: hi", "r1")])}, file="f2"), "data file"),
        (wanted({"q1": kept.notes_digest([("[d] user: hi!", "r1")])}), "saved differently"),
        (wanted({"q3": "d3"}), "has no longmemeval q3"),
        ({**wanted({}), "profile": "other"}, "profile"),
    ],
)
def test_a_stale_store_is_refused(tmp_path: Path, changed: dict[str, Any], message: str) -> None:
    keep(tmp_path / "store")
    with pytest.raises(kept.Stale, match=message):
        kept.accounts(tmp_path / "store", changed)


def test_an_unfinished_store_is_refused_and_a_store_is_never_kept_over_another(
    tmp_path: Path,
) -> None:
    kept.pgdata(tmp_path / "store").mkdir(parents=True)  # ingest stopped before the manifest
    with pytest.raises(kept.Stale, match="no finished store"):
        kept.accounts(tmp_path / "store", wanted({}))
    with pytest.raises(kept.Stale, match="not empty"):
        kept.fresh(tmp_path / "store")
