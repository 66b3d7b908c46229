"""The import rules: only grove-ask may load torch (the other services stay light), no
service imports another, and the libraries import no service."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

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


ROOT = Path(__file__).resolve().parents[2]
SERVICES = {p.name: p for p in ROOT.glob("services/*/grove_*")}


def imported(path: Path) -> set[str]:
    """The top-level packages one source file imports (absolute imports only)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def test_the_service_packages_are_found() -> None:
    assert set(SERVICES) == {
        "grove_api",
        "grove_ask",
        "grove_console",
        "grove_mcp",
        "grove_share",
        "grove_worker",
    }


@pytest.mark.parametrize("package", sorted(SERVICES))
def test_no_service_imports_another(package: str) -> None:
    others = set(SERVICES) - {package}
    wrong = {
        f"{path.relative_to(ROOT)}: {', '.join(sorted(imported(path) & others))}"
        for path in SERVICES[package].rglob("*.py")
        if imported(path) & others
    }
    assert not wrong, wrong


def test_libraries_import_no_service() -> None:
    wrong = {
        str(path.relative_to(ROOT))
        for path in ROOT.glob("libs/*/grove_*/**/*.py")
        if imported(path) & set(SERVICES)
    }
    assert not wrong, wrong
