"""The test suite's own import rule: what several test modules share lives in
tests/support, one module per concern, and no module of the suite imports a test module
(whose fixtures and helpers would then run, or be changed, for tests elsewhere)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def is_test_module(name: str) -> bool:
    """Whether a dotted module name names a test module or a conftest."""
    last = name.rsplit(".", 1)[-1]
    return last.startswith("test_") or last == "conftest"


def imported_test_modules(source: str, package: str) -> set[str]:
    """The test modules (dotted names) that ``source``, a module of ``package``, imports."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if is_test_module(alias.name))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, up level - 1 parents
                parents = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parents, *([base] if base else [])])
            if is_test_module(base):
                found.add(base)
            found.update(
                f"{base}.{alias.name}" for alias in node.names if is_test_module(alias.name)
            )
    return found


def suite_imports() -> set[tuple[str, str]]:
    """(file under tests/, test module it imports) for every Python file of the suite."""
    pairs: set[tuple[str, str]] = set()
    for path in TESTS.rglob("*.py"):
        relative = path.relative_to(TESTS)
        if "node_modules" in relative.parts:
            continue
        package = ".".join(["tests", *relative.parent.parts])
        for module in imported_test_modules(path.read_text(), package):
            pairs.add((relative.as_posix(), module))
    return pairs


def test_every_way_of_importing_a_test_module_is_caught() -> None:
    source = "\n".join(
        [
            "import tests.integration.test_owner",
            "from tests.integration.test_mcp import connect",
            "from tests.integration import test_shares",
            "from . import test_restore",
            "from .test_files import upload",
            "from tests.integration.conftest import database",
            "from tests.support.mcp import connect",
            "from tests.support import clients",
        ]
    )
    assert imported_test_modules(source, "tests.integration") == {
        "tests.integration.test_owner",
        "tests.integration.test_mcp",
        "tests.integration.test_shares",
        "tests.integration.test_restore",
        "tests.integration.test_files",
        "tests.integration.conftest",
    }


def test_no_module_of_the_suite_imports_a_test_module() -> None:
    wrong = sorted(suite_imports())
    assert wrong == [], "move what they share to tests/support: " + ", ".join(
        f"{path} imports {module}" for path, module in wrong
    )
