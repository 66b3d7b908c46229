"""Only grove-ask may load torch: the other services stay light."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "module",
    ["grove_api.app", "grove_api.serve", "grove_worker.run", "grove_cli.main", "grove_share.app"],
)
def test_service_does_not_import_torch(module: str) -> None:
    code = (
        f"import sys, {module}; "
        "heavy = {'torch', 'sentence_transformers', 'transformers'} & set(sys.modules); "
        "sys.exit(', '.join(sorted(heavy)) or None)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
