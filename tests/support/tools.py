"""Programs outside Python that some tests run (kubectl, promtool, node, ...)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path
from typing import NoReturn

import pytest


def require_tool(name: str, purpose: str = "") -> str:
    """The path of a program a test runs: skipped without it, but failed under CI
    (``CI=true``), which must install it (``.ci/run``); ``purpose`` says what it does."""
    found = shutil.which(name)
    if found is None:
        missing(f"{name} is not installed" + (f" (it {purpose})" if purpose else ""))
    return found


def missing(why: str) -> NoReturn:
    """Skip a test for want of an outside program, or fail it under CI (``CI=true``),
    which must provide it."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{why}; CI=true, and CI must install it (.ci/run)", pytrace=False)
    pytest.skip(f"{why} (under CI=true this fails)")


def npm_installed(folder: Path, package: str, purpose: str) -> None:
    """``npm ci`` the pinned packages of ``folder`` once, unless ``package`` is there.

    Parallel test workers take turns (``npm ci`` first empties node_modules), under a
    lock file in ``folder``; without npm the test is skipped (failed under CI).
    """
    with open(folder / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "node_modules" / package).is_dir():
            npm = require_tool("npm", purpose)
            subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=folder,
                check=True,
                timeout=300,
                capture_output=True,
            )
