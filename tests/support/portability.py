"""An account's export and its restore: the export as JSON lines, grove import run as the
administrator runs it, an account populated with what an export must carry, and the
lines a restore into another account should give back."""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from pathlib import Path
from typing import Any

import psycopg

from grove_db import embedded
from grove_db.pool import set_tenant
from grove_memory.portability.restore import mapped_id
from tests.support.processes import run_script
from tests.support.tenants import Tenant

UUID_TEXT = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def grove_import(
    database: embedded.EmbeddedDatabase, path: Path, account: uuid.UUID, *extra: str
) -> subprocess.CompletedProcess[str]:
    return run_script(
        "grove",
        *("import", str(path), "--account", str(account), "--profile", "disabled", *extra),
        env={"GROVE_MIGRATION_DATABASE_URL": database.migration_url},
    )


def restored(
    database: embedded.EmbeddedDatabase, path: Path, account: uuid.UUID, *extra: str
) -> str:
    result = grove_import(database, path, account, *extra)
    assert result.returncode == 0, result.stderr
    return result.stdout


def export(tenant: Tenant) -> list[dict[str, Any]]:
    response = tenant.client.get("/v1/export")
    assert response.status_code == 200, response.text
    return [json.loads(line) for line in response.text.splitlines()]


def write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def body(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An export without its header (whose time differs)."""
    assert lines[0]["type"] == "export" and lines[0]["version"] == 1
    return lines[1:]


def remapped(lines: list[dict[str, Any]], account: uuid.UUID) -> list[dict[str, Any]]:
    """``lines`` with every ID mapped as a restore into ``account`` maps taken IDs
    (operation IDs are kept: they are not items), and no saver (``savedBy``: a restored
    version names none of the exporting account's connections)."""
    lines = unsaved(lines)
    operations = {
        r["operationId"] for line in lines for r in line.get("revisions", []) if r["operationId"]
    }

    def swap(match: re.Match[str]) -> str:
        if match.group(0) in operations:
            return match.group(0)
        return str(mapped_id(account, uuid.UUID(match.group(0))))

    result: list[dict[str, Any]] = json.loads(UUID_TEXT.sub(swap, json.dumps(lines)))
    return result


def unsaved(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``lines`` as restored: every note's and revision's ``savedBy`` null."""
    copied: list[dict[str, Any]] = json.loads(json.dumps(lines))
    for line in copied:
        if line["type"] == "memory":
            for state in (line["memory"], *line["revisions"]):
                state["savedBy"] = None
    return copied


def populate(tenant: Tenant) -> None:
    """Nested notebooks, an archived notebook, notes with several revisions (one moved
    between notebooks), an archived note, a handoff with a lifetime, provenance."""
    top = tenant.notebook("top")
    middle = tenant.notebook("middle", top)
    deep = tenant.notebook("deep", middle)
    shelf = tenant.notebook("shelf")
    tenant.client.save("personal preference for tabs", "preference")
    moved = tenant.client.save(
        "decided to use postgres",
        "decision",
        projectId=top,
        provenance={"sourceAgent": "claude", "sourceRef": "chat 7"},
    )
    for change in ({"content": "decided to use PostgreSQL 18"}, {"projectId": deep}):
        response = tenant.client.patch(f"/v1/memories/{moved['id']}", change)
        assert response.status_code == 200, response.text
    tenant.client.save("handoff: finish the restore", "handoff", taskId="t-1", retentionDays=30)
    archived = tenant.client.save("an old fact", "fact", projectId=middle)
    response = tenant.client.post("/v1/tools/archive_memories", {"ids": [archived["id"]]})
    assert response.status_code == 200, response.text
    tenant.client.save("x" * 6000, "solution", projectId=shelf)
    with psycopg.connect(tenant.database.migration_url) as conn, conn.transaction():
        set_tenant(conn, tenant.account_id)
        conn.execute("UPDATE projects SET archived_at = now() WHERE id = %s", (shelf,))
