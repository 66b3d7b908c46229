"""The importers' converters: mem0 exports, Markdown folders and JSONL transcripts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from requests import PreparedRequest, Response
from requests.adapters import BaseAdapter

from grove_cli.importers import markdown, mem0, transcript
from grove_cli.importers.plan import MalformedInput, operation_id
from grove_cli.importers.sender import MAX_ATTEMPTS, Api, ImportStopped, _batches, encoded
from grove_contracts.notes import MAX_CONTENT_CHARS

MEM0_EXPORT = [
    {
        "id": "3c90c3cc-0d44-4b50-8888-8dd25736052a",
        "memory": "Prefers window seats on long flights",
        "user_id": "alice",
        "agent_id": "travel-bot",
        "metadata": {"kind": "preference", "confidence": 0.9},
        "categories": ["travel"],
        "created_at": "2024-07-20T01:30:36.275141-07:00",
        "updated_at": "2024-07-21T09:00:00-07:00",
    },
    {
        "id": "0b9d3c1e-7a55-4f1e-9a77-5b2f6a1d2c33",
        "memory": "Is allergic to peanuts",
        "user_id": "alice",
        "metadata": {"kind": "trivia"},
    },
    {"id": "5", "memory": "   "},
    {"id": "6", "hash": "no text here"},
    "not an object",
    {"id": "7", "memory": "x" * (MAX_CONTENT_CHARS + 1)},
]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_mem0_memories_become_notes_with_mem0_provenance(tmp_path: Path) -> None:
    plan = mem0.convert(write(tmp_path / "mem0.json", json.dumps(MEM0_EXPORT)))
    first, second = (item.body for item in plan.items)
    assert first["kind"] == "preference"
    assert first["content"].startswith(
        "Prefers window seats on long flights\n\n(mem0: created 2024"
    )
    assert "categories travel" in first["content"] and '"confidence": 0.9' in first["content"]
    assert first["provenance"] == {
        "sourceAgent": "mem0",
        "sourceRef": "mem0:3c90c3cc-0d44-4b50-8888-8dd25736052a user:alice agent:travel-bot",
    }
    assert first["operationId"] == operation_id("mem0", "3c90c3cc-0d44-4b50-8888-8dd25736052a")
    assert second["kind"] == "fact"
    assert [n.reason for n in plan.adjusted] == ["kind 'trivia' is not a Grove kind: saved as fact"]


def test_mem0_reports_every_memory_it_skips_with_the_apis_message(tmp_path: Path) -> None:
    plan = mem0.convert(write(tmp_path / "mem0.json", json.dumps({"results": MEM0_EXPORT})))
    assert [(n.where, n.reason) for n in plan.skipped] == [
        ("mem0.json memory 2 (id 5)", "validation_error: content: content must not be empty"),
        ("mem0.json memory 3 (id 6)", "no memory text (memory, text or content)"),
        ("mem0.json memory 4", "not a JSON object"),
        (
            "mem0.json memory 5 (id 7)",
            "validation_error: content: content must be at most 6000 characters after trimming",
        ),
    ]


def test_mem0_export_that_is_not_json_stops_with_its_line(tmp_path: Path) -> None:
    with pytest.raises(MalformedInput) as raised:
        mem0.convert(write(tmp_path / "mem0.json", '[\n {"id": "1",\n  "memory": oops}\n]'))
    assert raised.value.where == "mem0.json line 3"


def test_mem0_operation_ids_are_stable_and_distinct(tmp_path: Path) -> None:
    path = write(tmp_path / "mem0.json", json.dumps(MEM0_EXPORT))
    once = [item.body["operationId"] for item in mem0.convert(path).items]
    again = [item.body["operationId"] for item in mem0.convert(path).items]
    assert once == again and len(set(once)) == 2


LONG_SECTION = "Step one of many. " * 200  # 3,600 characters


def vault(root: Path) -> Path:
    write(
        root / "Work" / "Projects" / "Deploys.md",
        "---\nkind: decision\ntags: [ops, release]\nsource: https://wiki.example/deploys\n---\n"
        "We deploy on Tuesdays.\n",
    )
    write(root / "Work" / "standup.md", "---\ntype: Journal\n---\n# Standup\n\nShip it.\n")
    write(root / "Inbox.md", "A note at the top, no front matter.\n")
    write(
        root / "Work" / "Runbook.md",
        "---\ntags: ops\n---\nOverview line.\n\n# Restore\n## Database\n"
        + LONG_SECTION
        + "\n```\n# not a heading\n```\n## Cache\n"
        + LONG_SECTION
        + "\n# Huge\n"
        + "y" * (MAX_CONTENT_CHARS + 10)
        + "\n",
    )
    write(root / ".obsidian" / "app.json", "{}")
    write(root / "Work" / "diagram.png", "not text")
    return root


def test_markdown_folders_become_notebooks_and_front_matter_kind_tags_and_source(
    tmp_path: Path,
) -> None:
    plan = markdown.convert(vault(tmp_path))
    by_where = {item.where: item for item in plan.items}
    deploys = by_where["Work/Projects/Deploys.md"]
    assert deploys.notebook == ("Work", "Projects")
    assert deploys.body["kind"] == "decision"
    assert deploys.body["content"] == "# Deploys\n\nWe deploy on Tuesdays.\n\nTags: #ops #release"
    assert deploys.body["provenance"] == {
        "sourceAgent": "markdown",
        "sourceRef": "Work/Projects/Deploys.md (source: https://wiki.example/deploys)",
    }
    standup = by_where["Work/standup.md"]
    assert standup.body["kind"] == "fact" and standup.body["content"] == "# Standup\n\nShip it."
    assert [(n.where, n.reason) for n in plan.adjusted] == [
        ("Work/standup.md", "kind 'Journal' is not a Grove kind: saved as fact")
    ]
    assert by_where["Inbox.md"].notebook == ()
    assert markdown.convert(tmp_path, "Vault").items[0].notebook == ("Vault",)


def test_markdown_file_over_the_limit_splits_by_heading_and_skips_an_oversize_section(
    tmp_path: Path,
) -> None:
    plan = markdown.convert(vault(tmp_path))
    runbook = [item for item in plan.items if item.where.startswith("Work/Runbook.md")]
    assert [item.where for item in runbook] == [
        "Work/Runbook.md section 1 (preamble)",
        "Work/Runbook.md section 2 (Restore)",
        "Work/Runbook.md section 3 (Cache)",
    ]
    contents = [item.body["content"] for item in runbook]
    assert contents[0] == "# Runbook\n\nOverview line.\n\nTags: #ops"
    assert contents[1].startswith("# Restore\n## Database\nStep one")
    assert "# not a heading" in contents[1] and contents[1].endswith("Tags: #ops")
    assert contents[2].startswith("# Runbook\n\n## Cache\n")
    assert all(len(c) <= MAX_CONTENT_CHARS for c in contents)
    assert len({item.body["operationId"] for item in runbook}) == 3
    skipped = {n.where: n.reason for n in plan.skipped}
    assert skipped["Work/Runbook.md section 4 (Huge)"].startswith(
        "section is 6029 characters, over the 6000 limit of a note: not imported"
    )
    assert skipped[".obsidian/"] == "hidden folder"
    assert skipped["Work/diagram.png"] == "not a Markdown file"
    # Everything is accounted for: no text is lost without a notice.
    assert "y" * 100 not in "".join(c for c in contents)


def test_markdown_front_matter_that_is_not_yaml_stops_with_its_line(tmp_path: Path) -> None:
    write(tmp_path / "bad.md", "---\ntitle: ok\ntags: [unclosed\n---\nBody\n")
    with pytest.raises(MalformedInput) as raised:
        markdown.convert(tmp_path)
    assert raised.value.where.startswith("bad.md line ")
    assert "front matter is not valid YAML" in raised.value.reason


def test_markdown_folder_name_over_the_notebook_limit_skips_its_files(tmp_path: Path) -> None:
    write(tmp_path / ("n" * 201) / "a.md", "text")
    write(tmp_path / ("n" * 200) / "b.md", "text")
    plan = markdown.convert(tmp_path)
    assert [item.where.split("/")[-1] for item in plan.items] == ["b.md"]
    assert plan.skipped[0].reason.endswith("name must be 1-200 characters after trimming")


TRANSCRIPT = [
    {"role": "user", "content": "I prefer tea to coffee.", "timestamp": "2025-01-02T10:00:00Z"},
    {"role": "assistant", "content": [{"type": "text", "text": "Noted: tea."}], "timestamp": 2},
    {"role": "user", "content": "  "},
    {"role": "user", "content": "z" * MAX_CONTENT_CHARS},
]


def lines(*rows: object) -> str:
    return "".join(row if isinstance(row, str) else json.dumps(row) + "\n" for row in rows)


def test_transcript_messages_become_facts_with_the_session_as_provenance(tmp_path: Path) -> None:
    plan = transcript.convert(write(tmp_path / "chat-42.jsonl", lines(*TRANSCRIPT, "\n")))
    first, second = (item.body for item in plan.items)
    assert first == {
        "content": "user: I prefer tea to coffee.",
        "kind": "fact",
        "provenance": {
            "sourceAgent": "transcript:chat-42",
            "sourceRef": "chat-42.jsonl:1 user at 2025-01-02T10:00:00Z",
        },
        "operationId": operation_id("transcript", "chat-42", "1"),
    }
    assert second["content"] == "assistant: Noted: tea."
    assert [(n.where, n.reason) for n in plan.skipped] == [
        ("chat-42.jsonl line 3", "empty message"),
        (
            "chat-42.jsonl line 4",
            "validation_error: content: content must be at most 6000 characters after trimming",
        ),
    ]
    named = transcript.convert(tmp_path / "chat-42.jsonl", session="s1").items[0].body
    assert named["provenance"]["sourceAgent"] == "transcript:s1"


def test_transcript_malformed_line_stops_with_its_line_number(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", lines(TRANSCRIPT[0], "\n", '{"role": "user", "content": \n'))
    with pytest.raises(MalformedInput) as raised:
        transcript.convert(path)
    assert raised.value.where == "t.jsonl line 3"
    path = write(tmp_path / "t.jsonl", lines(TRANSCRIPT[0], {"content": "no role"}))
    with pytest.raises(MalformedInput, match="line 2: role must be a non-empty string"):
        transcript.convert(path)


def test_transcript_session_too_long_for_source_agent_is_named_by_its_digest() -> None:
    agent = transcript.source_agent("s" * 200)
    assert agent.startswith("transcript:") and len(agent) == len("transcript:") + 32


def test_batches_hold_at_most_100_items_and_stay_under_the_body_limit() -> None:
    small = [(None, {"content": "a"})] * 250
    assert [len(b) for b in _batches(small)] == [100, 100, 50]  # type: ignore[arg-type]
    big = [(None, {"content": "é" * 6000})] * 100  # 12,000 bytes a note in UTF-8
    batches = _batches(big)  # type: ignore[arg-type]
    assert [len(b) for b in batches] == [74, 26]
    assert all(len(encoded({"items": [p[1] for p in b]})) <= 900_000 for b in batches)


class Answers(BaseAdapter):
    """A transport that answers each request with the next of ``statuses``."""

    def __init__(self, *statuses: int) -> None:
        super().__init__()
        self.statuses = list(statuses)
        self.calls = 0

    def send(self, request: PreparedRequest, *args: Any, **kwargs: Any) -> Response:
        response = Response()
        response.status_code = self.statuses[min(self.calls, len(self.statuses) - 1)]
        self.calls += 1
        if response.status_code == 429:
            response.headers["Retry-After"] = "3"
            response._content = (
                b'{"success": false, "error": {"code": "rate_limited", "message": "slow down"}}'
            )
        else:
            response._content = b'{"success": true, "data": {"items": []}}'
        return response

    def close(self) -> None:
        pass


def api_answering(*statuses: int) -> tuple[Api, Answers, list[float]]:
    slept: list[float] = []
    api = Api("http://grove.test", "grv_key", sleep=slept.append)
    answers = Answers(*statuses)
    api.session.mount("http://grove.test", answers)
    return api, answers, slept


def test_rate_limited_calls_wait_for_retry_after_then_succeed() -> None:
    api, answers, slept = api_answering(429, 429, 200)
    assert api.call("GET", "/v1/notebooks") == {"items": []}
    assert slept == [3.0, 3.0] and answers.calls == 3


def test_rate_limiting_that_never_ends_stops_the_import_after_bounded_retries() -> None:
    api, answers, slept = api_answering(429)
    with pytest.raises(ImportStopped, match="429 rate_limited: slow down"):
        api.call("GET", "/v1/notebooks")
    assert answers.calls == MAX_ATTEMPTS and len(slept) == MAX_ATTEMPTS - 1
