"""Every error a library raises answers with a code that ERROR_STATUS knows, at the
status ERROR_STATUS gives it (the edges map codes to statuses through that table), and
derives from its library's one root exception, which derives from the one root error of
them all, grove_contracts' GroveError (the class the services map at their edges)."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest

from grove_contracts.errors import ERROR_STATUS, GroveError

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = sorted(p.name for p in ROOT.glob("libs/*/grove_*") if (p / "__init__.py").exists())


def exceptions(package: str) -> list[type[Exception]]:
    """Each exception class defined in one library's modules."""
    root = importlib.import_module(package)
    modules = [root] + [
        importlib.import_module(info.name)
        for info in pkgutil.walk_packages(root.__path__, package + ".")
    ]
    return [
        value
        for module in modules
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, Exception)
        and value.__module__ == module.__name__
    ]


def carried(error: type[Exception]) -> tuple[str, int] | None:
    """The ``code`` and ``status`` an exception class carries, if it carries both."""
    code, status = getattr(error, "code", None), getattr(error, "status", None)
    return (code, status) if isinstance(code, str) and isinstance(status, int) else None


def error_classes() -> dict[str, tuple[str, int]]:
    """Each exception class of the libraries that carries a ``code`` and ``status``."""
    return {
        f"{value.__module__}.{value.__qualname__}": both
        for package in PACKAGES
        for value in exceptions(package)
        if (both := carried(value)) is not None
    }


ERRORS = error_classes()


def test_the_walk_finds_the_errors() -> None:
    assert len(ERRORS) > 30
    assert ERRORS["grove_memory.errors.VersionConflict"] == ("version_conflict", 409)


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_each_error_code_has_its_status_in_the_table(name: str) -> None:
    code, status = ERRORS[name]
    assert ERROR_STATUS.get(code) == status, f"{name}: {code} answers {status}"


ROOTS = {
    "grove_auth": "AuthError",
    "grove_contracts": "GroveError",
    "grove_db": "DatabaseError",
    "grove_memory": "ServiceError",
}


@pytest.mark.parametrize("package", PACKAGES)
def test_each_library_has_one_root_error_whose_docstring_is_its_message(package: str) -> None:
    defined = exceptions(package)
    roots = [e for e in defined if not any(b.__module__.startswith(package) for b in e.__bases__)]
    assert [r.__name__ for r in roots] == ([ROOTS[package]] if package in ROOTS else [])
    for root in roots:
        assert issubclass(root, GroveError)
        assert root().message == " ".join(str(root.__doc__).split())
        assert all(
            issubclass(e, GroveError) and issubclass(e, root) and e.code and e.status
            for e in defined
        )


@pytest.mark.parametrize("package", PACKAGES)
def test_every_librarys_errors_derive_from_the_one_root_error(package: str) -> None:
    # The services map GroveError once at their edges: an error outside it would answer 500.
    strays = [e.__qualname__ for e in exceptions(package) if not issubclass(e, GroveError)]
    assert not strays, f"{package}: {strays}"
