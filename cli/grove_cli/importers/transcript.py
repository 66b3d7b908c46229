"""JSONL chat transcripts: one ``{role, content, timestamp}`` per line, one note each.

A file is one session, named by ``--session``, else the lines' ``session_id`` (or
``session``), else the file's name. Every message becomes a ``fact`` reading
``<role>: <content>``; its provenance names the session as ``sourceAgent``
(``transcript:<session>``), so recall reads a turn beside the turns around it, and
``sourceRef`` gives the file, line, role and time. A line that is not such an object
stops the import with its line number, before anything is sent.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from grove_cli.importers.plan import MalformedInput, Notice, Plan, operation_id

SOURCE = "transcript"
MAX_SOURCE_AGENT = 100


def convert(path: Path, session: str | None = None) -> Plan:
    """Plan one note per message of the transcript at ``path``."""
    plan = Plan()
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            message = _message(line, f"{path.name} line {number}")
            named = session or message.get("session_id") or message.get("session") or path.stem
            _add(plan, message, str(named), path.name, number)
    return plan


def _message(line: str, where: str) -> dict[str, Any]:
    try:
        message = json.loads(line)
    except json.JSONDecodeError as ex:
        raise MalformedInput(where, f"not valid JSON: {ex.msg}") from ex
    if not isinstance(message, dict):
        raise MalformedInput(where, "expected a JSON object {role, content, timestamp}")
    if not isinstance(message.get("role"), str) or not message["role"].strip():
        raise MalformedInput(where, "role must be a non-empty string")
    message["content"] = _text(message.get("content"), where)
    return message


def _text(content: Any, where: str) -> str:
    """A message's text: a string, or a list of parts (``{type: text, text}``) joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") if isinstance(p, dict) else p for p in content]
        texts = [p for p in parts if isinstance(p, str)]
        if len(texts) == len(parts):
            return "\n".join(texts)
    raise MalformedInput(where, "content must be a string or a list of text parts")


def _add(plan: Plan, message: dict[str, Any], session: str, file: str, number: int) -> None:
    where = f"{file} line {number}"
    if not message["content"].strip():
        plan.skipped.append(Notice(where, "empty message"))
        return
    ref = f"{file}:{number} {message['role']}"
    if message.get("timestamp") is not None:
        ref += f" at {message['timestamp']}"
    body = {
        "content": f"{message['role']}: {message['content'].strip()}",
        "kind": "fact",
        "provenance": {"sourceAgent": source_agent(session), "sourceRef": ref},
        "operationId": operation_id(SOURCE, session, str(number)),
    }
    plan.add(body, where)


def source_agent(session: str) -> str:
    """``transcript:<session>``, or the session's digest when its name is too long."""
    agent = f"{SOURCE}:{session}"
    if len(agent) <= MAX_SOURCE_AGENT:
        return agent
    return f"{SOURCE}:{hashlib.sha256(session.encode()).hexdigest()[:32]}"
