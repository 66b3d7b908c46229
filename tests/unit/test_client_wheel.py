"""grove-client builds into a wheel that ships alone: its own package, typed, at its own
version, depending on httpx and pydantic only (frameworks only through extras)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mypy import find_sources
from mypy.config_parser import parse_config_file
from mypy.options import Options

from grove_client import __version__
from tests.support.wheels import build_wheel, requirements

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "python"


def test_the_client_wheel_ships_alone(tmp_path: Path) -> None:
    wheel = build_wheel(CLIENT, tmp_path, "grove-client")
    names, metadata = wheel.names, wheel.metadata
    info = f"grove_client-{__version__}.dist-info"
    packages = {name.split("/")[0] for name in names}
    assert packages == {"grove_client", info}, packages
    assert "grove_client/py.typed" in names
    assert metadata["Name"] == "grove-client" and metadata["Version"] == __version__
    assert requirements(metadata) == ["httpx", "pydantic"]


def test_lint_ignores_the_build_output_installing_the_client_leaves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `pip install ./clients/python` leaves a copy of the package in clients/python/build/:
    # the checks of `make lint`, run in a checkout holding one, still find each module once
    # (mypy stopped at "Duplicate module named grove_client"). mypy's own discovery with
    # the project's settings says which files it would check, without checking them.
    checkout = tmp_path / "checkout"
    client = checkout / "clients" / "python"
    shutil.copytree(CLIENT, client, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    shutil.copytree(client / "grove_client", client / "build" / "lib" / "grove_client")
    shutil.copy(CLIENT.parents[1] / "pyproject.toml", checkout)
    monkeypatch.chdir(checkout)
    options = Options()
    parse_config_file(options, lambda: None, "pyproject.toml", sys.stdout, sys.stderr)
    sources = find_sources.create_source_list(["clients/python"], options)
    modules = [source.module for source in sources]
    assert "grove_client" in modules and len(modules) == len(set(modules)), modules
    listed = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--show-files", "clients/python"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    files = [Path(line).relative_to(checkout) for line in listed.split()]
    assert Path("clients/python/grove_client/client.py") in files
    assert not [f for f in files if "build" in f.parts], files
