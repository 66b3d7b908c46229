"""The runnable examples of docs/python.md (docs/examples/python), each run as a script
against the suite's running api, as a reader would run it against ``make dev``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from grove_client import Grove
from tests.support.tenants import Tenant

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "python"


def run(example: str, url: str, key: str | None) -> subprocess.CompletedProcess[str]:
    """``example`` run with ``sys.executable``, given the api by environment variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GROVE_")}
    env |= {"GROVE_URL": url, "GROVE_API_KEY": key or ""}
    return subprocess.run(
        [sys.executable, str(EXAMPLES / example)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_every_example_is_tested() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == [
        "async_usage.py",
        "errors.py",
        "quickstart.py",
    ]


def test_the_quick_start_remembers_then_recalls(tenant: Tenant) -> None:
    done = run("quickstart.py", tenant.client.base, tenant.client.key)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "we deploy on tuesdays\n"
    assert tenant.client.key is not None
    with Grove(tenant.client.base, tenant.client.key) as grove:  # visible over REST
        assert [n.content for n in grove.list_notes()] == ["we deploy on tuesdays"]


def test_the_async_example_saves_lists_and_searches(tenant: Tenant) -> None:
    done = run("async_usage.py", tenant.client.base, tenant.client.key)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "saved 3, listed 3\nfound: deploy the release on tuesday\n"


def test_the_errors_example_catches_each_family(tenant: Tenant) -> None:
    done = run("errors.py", tenant.client.base, tenant.client.key)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "NotFound",
        "ValidationError",
        "Conflict",
        "AuthError",
    ]
    assert lines[0].startswith("NotFound: not_found 404 (request ")
    assert lines[1] == "ValidationError: validation_error 400 fields=['content']"
    assert lines[2] == "Conflict: version_conflict 409, now version 2"
    assert lines[3] == "AuthError: unauthorized 401"


@pytest.mark.parametrize("example", ["quickstart.py", "async_usage.py", "errors.py"])
def test_an_example_exits_non_zero_when_it_fails(tenant: Tenant, example: str) -> None:
    done = run(example, tenant.client.base, "grv_not_a_key")
    assert done.returncode != 0
    assert "AuthError" in done.stderr or "unauthorized" in done.stderr
