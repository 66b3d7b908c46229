"""Programs outside Python that some tests run (kubectl, promtool, node, ...)."""

from __future__ import annotations

import os
import shutil
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
