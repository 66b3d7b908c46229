"""Reading Dockerfiles: instructions with their continuation lines joined, and what a
runtime image must not install."""

from __future__ import annotations

import re

COMPILERS = re.compile(r"(?<![\w.-])(gcc|g\+\+|cc|clang|build-essential|cmake|make)(?![\w.-])")


def logical_lines(text: str) -> list[str]:
    """Instructions with their continuation lines joined; comments dropped."""
    lines: list[str] = []
    current = ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        lines.append(current + stripped)
        current = ""
    if current:
        lines.append(current)
    return lines
