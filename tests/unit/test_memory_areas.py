"""grove_memory's rooms: the kernel at the package's root, which every area may import,
and the areas, each importing another only along an arrow listed here; the arrows form
no circle, so each area can be read knowing only the kernel and the areas below it."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "libs" / "memory" / "grove_memory"

#: The modules at the package's root: what every operation takes or shares (the store,
#: errors, visibility predicates, cursors, operation records, rows, the grove-ask
#: client). Any area may import them; they import no area.
KERNEL = {"cursors", "errors", "idempotency", "inference", "rows", "scope", "store"}

#: Each area and the other areas it may import, with why.
ALLOWED: dict[str, set[str]] = {
    "search": set(),
    "notes": {"search"},  # the registry tools run recall and search
    "files": {"notes"},  # a file's passages are notes
    "enrichment": {"notes"},  # suggestions skip near-duplicates by the notes' own rules
    "ask": {"notes", "search"},  # evidence by recall; proposals change notes and notebooks
    "portability": {"notes", "ask", "files"},  # the export holds each of them
    "orgs": set(),
}


def sources() -> Iterator[tuple[str, Path]]:
    """Each source file with its room: an area's name, or ``kernel``."""
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        yield ("kernel" if len(parts) == 1 else parts[0]), path


def room_of(module: str) -> str | None:
    """The room of a dotted module name of grove_memory (None if not one of them)."""
    parts = module.split(".")
    if parts[0] != "grove_memory" or len(parts) < 2:
        return None
    return parts[1] if parts[1] in ALLOWED else "kernel"


def imported(path: Path) -> set[str]:
    """The grove_memory modules (or names in them) one source file imports."""
    package = ["grove_memory", *path.relative_to(PACKAGE).parent.parts]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def arrows() -> dict[tuple[str, str], set[str]]:
    """Each arrow between two rooms, with the files that draw it."""
    found: dict[tuple[str, str], set[str]] = {}
    for room, path in sources():
        for name in imported(path):
            target = room_of(name)
            if target is not None and target != room:
                found.setdefault((room, target), set()).add(str(path.relative_to(ROOT)))
    return found


def test_the_rooms_are_the_kernel_and_the_listed_areas() -> None:
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == set(ALLOWED)
    assert all((PACKAGE / area / "__init__.py").is_file() for area in folders)
    # A module added at the root is kernel only if it is listed as such here.
    assert {p.stem for p in PACKAGE.glob("*.py")} - {"__init__"} == KERNEL


def test_the_kernel_imports_no_area() -> None:
    wrong = {
        f"{target}: {', '.join(sorted(files))}"
        for (room, target), files in arrows().items()
        if room == "kernel"
    }
    assert not wrong, wrong


@pytest.mark.parametrize("area", sorted(ALLOWED))
def test_an_area_imports_only_the_kernel_and_the_areas_it_may(area: str) -> None:
    allowed = ALLOWED[area] | {"kernel"}
    wrong = {
        f"{target}: {', '.join(sorted(files))}"
        for (room, target), files in arrows().items()
        if room == area and target not in allowed
    }
    assert not wrong, wrong


def test_the_allowed_arrows_form_no_circle() -> None:
    placed: list[str] = []
    remaining = dict(ALLOWED)
    while remaining:  # peel the areas whose every arrow points at a placed one
        ready = [area for area, targets in remaining.items() if targets <= set(placed)]
        assert ready, f"a circle among {sorted(remaining)}"
        placed += ready
        for area in ready:
            del remaining[area]
    assert all(target in ALLOWED for targets in ALLOWED.values() for target in targets)


def test_each_listed_arrow_is_drawn() -> None:
    """The table says what the code does: an arrow nothing draws any more goes."""
    drawn = set(arrows())
    unused = {(area, t) for area, targets in ALLOWED.items() for t in targets} - drawn
    assert not unused, unused
