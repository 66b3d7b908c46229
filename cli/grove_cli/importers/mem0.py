"""mem0's memory export: a JSON list of memories, one note each.

A memory is ``{id, memory, user_id?, agent_id?, run_id?, metadata?, categories?,
created_at?, updated_at?}`` (the list may also sit under ``results`` or ``memories``, as
mem0's ``get_all`` answers). The note's content is the memory's text, followed by one
line with its dates, categories and metadata, so nothing of it is lost; its provenance
is ``sourceAgent: mem0`` and ``sourceRef: mem0:<id>`` with the user, agent and run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

from grove_cli.importers.plan import MalformedInput, Notice, Plan, operation_id
from grove_contracts.notes import Kind

SOURCE = "mem0"
TEXT_FIELDS = ("memory", "text", "content")
IDENTITIES = (("user_id", "user"), ("agent_id", "agent"), ("run_id", "run"), ("app_id", "app"))


def convert(path: Path) -> Plan:
    """Plan one note per memory of the export at ``path``."""
    memories = _memories(path)
    plan = Plan()
    for index, memory in enumerate(memories):
        where = f"{path.name} memory {index}"
        if not isinstance(memory, dict):
            plan.skipped.append(Notice(where, "not a JSON object"))
            continue
        if memory.get("id") is not None:
            where += f" (id {memory['id']})"
        text = next((memory[f] for f in TEXT_FIELDS if isinstance(memory.get(f), str)), None)
        if text is None:
            plan.skipped.append(Notice(where, "no memory text (memory, text or content)"))
            continue
        plan.add(_body(memory, text, index, plan, where), where)
    return plan


def _memories(path: Path) -> list[Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as ex:
        raise MalformedInput(f"{path.name} line {ex.lineno}", f"not valid JSON: {ex.msg}") from ex
    if isinstance(data, dict):
        data = data.get("results", data.get("memories"))
    if not isinstance(data, list):
        raise MalformedInput(path.name, "expected a JSON list of memories (or {results: [...]})")
    return data


def _body(memory: dict[str, Any], text: str, index: int, plan: Plan, where: str) -> dict[str, Any]:
    identity = str(memory["id"]) if memory.get("id") is not None else f"index {index}"
    ref = [f"mem0:{identity}"]
    ref += [f"{label}:{memory[key]}" for key, label in IDENTITIES if memory.get(key)]
    metadata: dict[str, Any] = memory.get("metadata") or {}
    if not isinstance(metadata, dict):
        metadata = {"metadata": metadata}
    kind = _kind(metadata, plan, where)
    trailer = _trailer(memory, metadata)
    return {
        "content": f"{text.strip()}\n\n{trailer}" if trailer else text,
        "kind": kind,
        "provenance": {"sourceAgent": SOURCE, "sourceRef": " ".join(ref)},
        "operationId": operation_id(SOURCE, identity),
    }


def _kind(metadata: dict[str, Any], plan: Plan, where: str) -> str:
    """``metadata.kind`` when it is one of Grove's kinds (not handoff), else ``fact``."""
    kind = metadata.get("kind")
    if kind is None:
        return "fact"
    if kind in get_args(Kind) and kind != "handoff":
        return str(kind)
    plan.adjusted.append(Notice(where, f"kind {kind!r} is not a Grove kind: saved as fact"))
    return "fact"


def _trailer(memory: dict[str, Any], metadata: dict[str, Any]) -> str:
    """One line keeping what a note has no field for: dates, categories, metadata."""
    parts = [
        f"{label} {memory[key]}"
        for key, label in (("created_at", "created"), ("updated_at", "updated"))
        if memory.get(key)
    ]
    categories = memory.get("categories")
    if isinstance(categories, list) and categories:
        parts.append("categories " + ", ".join(str(c) for c in categories))
    rest = {k: v for k, v in metadata.items() if k != "kind"}
    if rest:
        parts.append("metadata " + json.dumps(rest, ensure_ascii=False, sort_keys=True))
    return f"(mem0: {'; '.join(parts)})" if parts else ""
