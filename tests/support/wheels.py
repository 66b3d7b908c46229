"""Building one of the small distributions (``clients/``, ``tools/``) into a wheel."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from email.message import Message
from email.parser import Parser
from pathlib import Path


@dataclass(frozen=True)
class Wheel:
    """What a built wheel holds: its file names, METADATA and entry points."""

    names: list[str]
    metadata: Message
    entry_points: str


def build_wheel(project: Path, tmp_path: Path, distribution: str) -> Wheel:
    """``project``'s wheel, built in ``tmp_path``."""
    # Built from a copy: setuptools leaves build/ and egg-info next to the sources.
    source = tmp_path / "source"
    shutil.copytree(project, source, ignore=shutil.ignore_patterns("build", "*.egg-info"))
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
    (wheel,) = tmp_path.glob(f"{distribution.replace('-', '_')}-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (info,) = {name.split("/")[0] for name in names if ".dist-info/" in name}
        metadata = Parser().parsestr(archive.read(f"{info}/METADATA").decode())
        points = f"{info}/entry_points.txt"
        entry_points = archive.read(points).decode() if points in names else ""
    return Wheel(names, metadata, entry_points)


def requirements(metadata: Message) -> list[str]:
    """The names of the distributions a wheel requires, extras left out, sorted."""
    required = [r for r in metadata.get_all("Requires-Dist") or [] if "extra ==" not in r]
    return sorted(r.split("<")[0].split(">")[0].split("=")[0] for r in required)
