"""Checks of the JSON Schemas that tools publish."""

from __future__ import annotations

from typing import Any


def undescribed(schema: Any, path: str = "") -> list[str]:
    """The paths of the properties in ``schema`` without a description, at any depth.

    Every object schema counts, wherever it sits: the top level, ``$defs``, array
    ``items`` and the branches of ``anyOf``. A description must say something (not
    empty or blank).
    """
    found: list[str] = []
    if isinstance(schema, dict):
        for name, prop in (schema.get("properties") or {}).items():
            text = prop.get("description") if isinstance(prop, dict) else None
            if not isinstance(text, str) or not text.strip():
                found.append(f"{path}/properties/{name}")
        for key, value in schema.items():
            found += undescribed(value, f"{path}/{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            found += undescribed(value, f"{path}/{index}")
    return found
