"""grove-client builds into a wheel that ships alone: its own package, typed, at its own
version, depending on httpx and pydantic only (frameworks only through extras)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

from grove_client import __version__

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "python"


def test_the_client_wheel_ships_alone(tmp_path: Path) -> None:
    # Built from a copy: setuptools leaves build/ and egg-info next to the sources.
    source = tmp_path / "source"
    shutil.copytree(CLIENT, source, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            str(source),
            "--wheel-dir",
            str(tmp_path),
        ],
        check=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("grove_client-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = f"grove_client-{__version__}.dist-info"
        metadata = Parser().parsestr(archive.read(f"{info}/METADATA").decode())
    packages = {name.split("/")[0] for name in names}
    assert packages == {"grove_client", info}, packages
    assert "grove_client/py.typed" in names
    assert metadata["Name"] == "grove-client" and metadata["Version"] == __version__
    required = [r for r in metadata.get_all("Requires-Dist") or [] if "extra ==" not in r]
    assert sorted(r.split("<")[0].split(">")[0] for r in required) == ["httpx", "pydantic"]
