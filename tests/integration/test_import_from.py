"""``grove import-from``: notes from mem0, Markdown folders and transcripts, via the API."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.clients import Client
from tests.support.processes import run_script
from tests.support.tenants import Tenant


def import_from(client: Client, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"GROVE_API_URL": client.base, "GROVE_API_KEY": client.key or ""}
    return run_script("grove", "import-from", *args, env=env)


def notes(client: Client) -> list[dict[str, Any]]:
    response = client.get("/v1/memories", params={"limit": 100})
    assert response.status_code == 200, response.text
    return list(response.json()["data"]["items"])


def notebooks(client: Client) -> dict[str, dict[str, Any]]:
    response = client.get("/v1/notebooks")
    assert response.status_code == 200, response.text
    return {nb["name"]: nb for nb in response.json()["data"]["items"]}


def vault(root: Path) -> Path:
    (root / "Work" / "Deploys").mkdir(parents=True)
    (root / "Work" / "Deploys" / "Tuesdays.md").write_text(
        "---\nkind: decision\ntags: [ops]\n---\nWe deploy on Tuesdays.\n"
    )
    (root / "Work" / "oncall.md").write_text("# On call\n\nPage Dana first.\n")
    (root / "Inbox.md").write_text("Buy oat milk.\n")
    (root / "cover.png").write_bytes(b"\x89PNG")
    return root


def test_markdown_folder_arrives_in_notebooks_and_a_rerun_creates_nothing(
    tenant: Tenant, make_tenant: Callable[[], Tenant], tmp_path: Path
) -> None:
    first = import_from(tenant.client, "markdown", str(vault(tmp_path)))
    assert first.returncode == 0, first.stderr + first.stdout
    assert "notebooks: 2 created, 0 existing" in first.stdout
    assert "3 created, 0 updated, 0 replayed, 0 failed, 1 skipped" in first.stdout
    assert "skipped  cover.png: not a Markdown file" in first.stdout
    books = notebooks(tenant.client)
    assert books["Deploys"]["parentId"] == books["Work"]["id"]
    by_ref = {note["provenance"]["sourceRef"]: note for note in notes(tenant.client)}
    tuesdays = by_ref["Work/Deploys/Tuesdays.md"]
    assert tuesdays["kind"] == "decision"
    assert tuesdays["projectId"] == books["Deploys"]["id"]
    assert tuesdays["content"] == "# Tuesdays\n\nWe deploy on Tuesdays.\n\nTags: #ops"
    assert tuesdays["provenance"]["sourceAgent"] == "markdown"
    assert by_ref["Work/oncall.md"]["projectId"] == books["Work"]["id"]
    assert by_ref["Inbox.md"]["projectId"] is None

    again = import_from(tenant.client, "markdown", str(tmp_path))
    assert again.returncode == 0, again.stderr + again.stdout
    assert "notebooks: 0 created, 2 existing" in again.stdout
    assert "0 created, 0 updated, 3 replayed, 0 failed" in again.stdout
    assert len(notes(tenant.client)) == 3 and len(notebooks(tenant.client)) == 2

    other = make_tenant().client
    assert notes(other) == [] and notebooks(other) == {}


def test_mem0_export_and_transcript_arrive_with_their_provenance(
    tenant: Tenant, make_tenant: Callable[[], Tenant], tmp_path: Path
) -> None:
    export = tmp_path / "mem0.json"
    export.write_text(
        json.dumps(
            [
                {
                    "id": "m-1",
                    "memory": "Likes window seats",
                    "user_id": "alice",
                    "metadata": {"kind": "preference"},
                    "created_at": "2024-07-20T01:30:36Z",
                },
                {"id": "m-2", "memory": ""},
            ]
        )
    )
    chat = tmp_path / "session-7.jsonl"
    chat.write_text(
        json.dumps({"role": "user", "content": "Our staging DB is pg-2.", "timestamp": "t1"})
        + "\n"
        + json.dumps({"role": "assistant", "content": "Noted.", "timestamp": "t2"})
        + "\n"
    )
    saved = import_from(tenant.client, "mem0", str(export))
    assert saved.returncode == 0, saved.stderr + saved.stdout
    assert "1 created, 0 updated, 0 replayed, 0 failed, 1 skipped" in saved.stdout
    assert "mem0.json memory 1 (id m-2): validation_error: content:" in saved.stdout
    talked = import_from(tenant.client, "transcript", str(chat))
    assert talked.returncode == 0, talked.stderr + talked.stdout
    assert "2 created" in talked.stdout

    by_agent: dict[str, list[dict[str, Any]]] = {}
    for note in notes(tenant.client):
        by_agent.setdefault(note["provenance"]["sourceAgent"], []).append(note)
    (liked,) = by_agent["mem0"]
    assert liked["kind"] == "preference"
    assert liked["content"].startswith("Likes window seats\n\n(mem0: created 2024-07-20")
    assert liked["provenance"]["sourceRef"] == "mem0:m-1 user:alice"
    turns = sorted(by_agent["transcript:session-7"], key=lambda n: n["provenance"]["sourceRef"])
    assert [t["content"] for t in turns] == ["user: Our staging DB is pg-2.", "assistant: Noted."]
    assert {t["kind"] for t in turns} == {"fact"}
    assert turns[0]["provenance"]["sourceRef"] == "session-7.jsonl:1 user at t1"

    assert "1 replayed" in import_from(tenant.client, "mem0", str(export)).stdout
    assert len(notes(tenant.client)) == 3
    assert notes(make_tenant().client) == []


def test_malformed_transcript_line_stops_the_import_before_anything_is_saved(
    tenant: Tenant, tmp_path: Path
) -> None:
    chat = tmp_path / "chat.jsonl"
    chat.write_text('{"role": "user", "content": "fine"}\n{"role": "user", "content": \n')
    result = import_from(tenant.client, "transcript", str(chat))
    assert result.returncode == 1
    assert "import stopped, nothing sent: chat.jsonl line 2: not valid JSON" in result.stderr
    assert notes(tenant.client) == []


def test_key_without_all_notebooks_cannot_create_the_folders_notebooks(
    tenant: Tenant, tmp_path: Path
) -> None:
    personal_only = tenant.key("personal", personal=True)
    result = import_from(personal_only, "markdown", str(vault(tmp_path)))
    assert result.returncode == 1
    assert "403 forbidden" in result.stderr
    assert "needs a key granted all notebooks" in result.stderr
    assert notes(tenant.client) == [] and notebooks(tenant.client) == {}
