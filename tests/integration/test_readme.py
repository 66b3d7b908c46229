"""Every ```bash example in the README runs as printed against a real grove-api."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.tenants import Tenant

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCKS = re.findall(r"```bash\n(.*?)```", README.read_text(), flags=re.DOTALL)


def test_readme_has_runnable_examples() -> None:
    assert len(BLOCKS) >= 3


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_example_runs_and_every_call_succeeds(hybrid_tenant: Tenant, block: str) -> None:
    tenant = hybrid_tenant  # as under make dev: MiniLM embeddings and a worker
    result = subprocess.run(
        [shutil.which("bash") or "/bin/bash", "-euo", "pipefail", "-c", block],
        env={
            **os.environ,
            "GROVE_API_URL": tenant.client.base,
            "GROVE_API_KEY": tenant.client.key or "",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    documents = [
        json.loads(line) for line in result.stdout.replace("}{", "}\n{").splitlines() if line
    ]
    assert documents
    for document in documents:
        assert document.get("success", True) is True, document


PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


def test_readme_python_mcp_example_runs(mcp_url: str, tenant: Tenant) -> None:
    assert PYTHON_BLOCKS
    result = subprocess.run(
        [sys.executable, "-c", PYTHON_BLOCKS[0]],
        env={**os.environ, "GROVE_MCP_URL": mcp_url, "GROVE_API_KEY": tenant.client.key or ""},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["14 tools", "Prefers short answers"]
