"""``grove import``: restoring a Grove export (format v1) into an account."""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from grove_contracts.imports import MAX_IMPORTED_VERSION
from grove_db import embedded
from grove_db.pool import set_tenant
from grove_memory.portability import restore
from grove_memory.portability.restore_checks import RestoreError
from tests.support.clients import data_of
from tests.support.portability import (
    UUID_TEXT,
    body,
    export,
    grove_import,
    populate,
    remapped,
    restored,
    unsaved,
    write,
)
from tests.support.tenants import Tenant

#: An embedding profile no worker in the test suite claims jobs for.
UNSERVED = "unserved"


def table_counts(database: embedded.EmbeddedDatabase, account: uuid.UUID) -> dict[str, int]:
    with psycopg.connect(database.migration_url, row_factory=dict_row) as conn:
        with conn.transaction():
            set_tenant(conn, account)
            return {
                table: conn.execute(f"SELECT count(*) AS n FROM {table}").fetchone()["n"]  # type: ignore[index]
                for table in ("projects", "memories", "memory_revisions", "jobs", "note_words")
            }


def test_round_trip_into_another_account_is_exact_with_ids_mapped(
    database: embedded.EmbeddedDatabase, make_tenant: Callable[[], Tenant], tmp_path: Path
) -> None:
    source, target = make_tenant(), make_tenant()
    populate(source)
    original = export(source)
    result = grove_import(database, write(tmp_path / "a.ndjson", original), target.account_id)
    assert result.returncode == 0, result.stderr
    assert "notes/s)" in result.stderr  # the progress line: counts and rate
    output = result.stdout
    again = export(target)
    assert body(again) == body(remapped(original, target.account_id))
    notes = [line for line in again if line["type"] == "memory"]
    assert len(notes) == 5 and sum(len(n["revisions"]) for n in notes) == 7
    assert any(n["memory"]["archived"] for n in notes)
    assert len([line for line in again if line["type"] == "notebook"]) == 4
    assert "restored 4 notebook(s), 5 note(s) with 7 revision(s)" in output


def test_ids_are_kept_when_no_account_holds_them(
    database: embedded.EmbeddedDatabase, make_tenant: Callable[[], Tenant], tmp_path: Path
) -> None:
    source, target = make_tenant(), make_tenant()
    populate(source)
    fresh: dict[str, str] = {}
    text = UUID_TEXT.sub(
        lambda m: fresh.setdefault(m.group(0), str(uuid.uuid4())), json.dumps(export(source))
    )
    lines = json.loads(text)
    restored(database, write(tmp_path / "fresh.ndjson", lines), target.account_id)
    assert body(export(target)) == body(unsaved(lines))


def test_rerun_creates_nothing_twice(
    database: embedded.EmbeddedDatabase, make_tenant: Callable[[], Tenant], tmp_path: Path
) -> None:
    source, target = make_tenant(), make_tenant()
    populate(source)
    path = write(tmp_path / "a.ndjson", export(source))
    restored(database, path, target.account_id)
    first = table_counts(database, target.account_id)
    output = restored(database, path, target.account_id)
    assert table_counts(database, target.account_id) == first
    assert "restored 0 notebook(s), 0 note(s)" in output
    assert "already present: 4 notebook(s), 5 note(s)" in output


def test_restore_cut_short_resumes_without_duplicates(
    database: embedded.EmbeddedDatabase, make_tenant: Callable[[], Tenant], tmp_path: Path
) -> None:
    source, target = make_tenant(), make_tenant()
    populate(source)
    original = export(source)
    full = write(tmp_path / "full.ndjson", original)
    text = full.read_text()
    # Cut in the middle of the fourth note's line, as a crash mid-copy would leave it.
    cut = text.index('"type": "memory"', text.index('"type": "memory"') + 1)
    for _ in range(2):
        cut = text.index('"type": "memory"', cut + 1)
    (tmp_path / "cut.ndjson").write_text(text[: cut + 40])
    failed = grove_import(database, tmp_path / "cut.ndjson", target.account_id)
    assert failed.returncode == 1
    assert "grove: line 9: not valid JSON" in failed.stderr
    assert table_counts(database, target.account_id)["memories"] == 3
    restored(database, full, target.account_id)
    assert body(export(target)) == body(remapped(original, target.account_id))


def test_malformed_line_stops_there_and_writes_nothing_of_it(
    database: embedded.EmbeddedDatabase, make_tenant: Callable[[], Tenant], tmp_path: Path
) -> None:
    source, target = make_tenant(), make_tenant()
    source.client.save("first", "fact")
    source.client.save("second", "fact")
    lines = export(source)
    too_long = json.loads(json.dumps(lines[2]))
    too_long["revisions"][0]["content"] = "y" * 6001
    failed = grove_import(
        database, write(tmp_path / "bad.ndjson", [*lines[:2], too_long]), target.account_id
    )
    assert failed.returncode == 1
    assert failed.stderr.strip() == (
        "grove: line 3: revisions.0: content: content must be at most 6000 characters"
        " after trimming"
    )
    restored_notes = [line for line in export(target) if line["type"] == "memory"]
    assert [n["memory"]["content"] for n in restored_notes] == ["first"]
    assert table_counts(database, target.account_id)["memory_revisions"] == 1
    bad_kind = json.loads(json.dumps(lines[2]))
    bad_kind["memory"]["kind"] = "rumour"
    failed = grove_import(
        database, write(tmp_path / "kind.ndjson", [lines[0], bad_kind]), target.account_id
    )
    assert failed.returncode == 1 and failed.stderr.startswith("grove: line 2: memory: kind: ")
    assert table_counts(database, target.account_id)["memories"] == 1


def test_other_version_or_no_header_is_refused_before_writing(
    database: embedded.EmbeddedDatabase, make_tenant: Callable[[], Tenant], tmp_path: Path
) -> None:
    source, target = make_tenant(), make_tenant()
    source.notebook("kept out")
    source.client.save("kept out", "fact")
    lines = export(source)
    newer = write(tmp_path / "v2.ndjson", [{**lines[0], "version": 2}, *lines[1:]])
    failed = grove_import(database, newer, target.account_id)
    assert failed.returncode == 1
    assert failed.stderr.strip() == (
        "grove: line 1: export format version 2 is not supported (this grove reads version 1)"
    )
    headless = grove_import(database, write(tmp_path / "no.ndjson", lines[1:]), target.account_id)
    assert headless.returncode == 1
    assert "line 1: not a Grove export" in headless.stderr
    assert table_counts(database, target.account_id) == {
        "projects": 0,
        "memories": 0,
        "memory_revisions": 0,
        "jobs": 0,
        "note_words": 0,
    }


def test_restoring_an_accounts_export_elsewhere_leaves_it_untouched(
    database: embedded.EmbeddedDatabase, make_tenant: Callable[[], Tenant], tmp_path: Path
) -> None:
    source, target = make_tenant(), make_tenant()
    populate(source)
    before, counts = export(source), table_counts(database, source.account_id)
    restored(database, write(tmp_path / "a.ndjson", before), target.account_id)
    assert body(export(source)) == body(before)
    assert table_counts(database, source.account_id) == counts
    ids = {line["memory"]["id"] for line in before if line["type"] == "memory"}
    ids |= {line["notebook"]["id"] for line in before if line["type"] == "notebook"}
    now = export(target)
    taken = {line["memory"]["id"] for line in now if line["type"] == "memory"}
    taken |= {line["notebook"]["id"] for line in now if line["type"] == "notebook"}
    assert len(taken) == len(ids) and not taken & ids


def test_connections_are_skipped_and_restored_notes_are_queued_for_embedding(
    database: embedded.EmbeddedDatabase, make_tenant: Callable[[], Tenant], tmp_path: Path
) -> None:
    source, target = make_tenant(), make_tenant()
    source.client.save("first", "fact")
    note = source.client.save("second", "fact")
    changed = source.client.patch(f"/v1/memories/{note['id']}", {"content": "second, fixed"})
    assert changed.status_code == 200
    lines = export(source)
    connection = {"type": "connection", "connection": {"id": str(uuid.uuid4()), "name": "k"}}
    path = write(tmp_path / "c.ndjson", [lines[0], connection, *lines[1:]])
    # A profile no worker of the suite serves (the session's hybrid worker embeds minilm
    # jobs at once, and test_queue's workers openai ones), so the notes stay pending for
    # the checks and no other test's worker is handed them.
    output = restored(database, path, target.account_id, "--profile", UNSERVED)
    assert "not restored: 1 connection(s)" in output
    with psycopg.connect(database.migration_url, row_factory=dict_row) as conn:
        with conn.transaction():
            set_tenant(conn, target.account_id)
            jobs = conn.execute(
                "SELECT j.memory_id, j.version, j.profile, m.version AS current, m.indexing"
                " FROM jobs j JOIN memories m ON m.id = j.memory_id"
                " WHERE j.kind = 'embed_revision'"
            ).fetchall()
            connections = conn.execute("SELECT count(*) AS n FROM connections").fetchone()
    assert len(jobs) == 2
    assert all(j["version"] == j["current"] and j["profile"] == UNSERVED for j in jobs)
    assert {j["indexing"] for j in jobs} == {"pending"}
    assert connections == {"n": 1}  # the account's own key, nothing from the file
    listed = data_of(target.client.get("/v1/memories"))
    assert {item["indexing"] for item in listed["items"]} == {"pending"}


def test_only_the_schema_owner_may_probe_other_accounts_ids(
    database: embedded.EmbeddedDatabase, make_tenant: Callable[[], Tenant]
) -> None:
    source, other = make_tenant(), make_tenant()
    note = source.client.save("mine", "fact")
    notebook = source.notebook("mine")
    probe = (
        "SELECT (SELECT count(*) FROM memories WHERE id = %s)"
        " + (SELECT count(*) FROM projects WHERE id = %s) AS n"
    )
    seen: dict[str, Any] = {}
    for role, url in (("owner", database.migration_url), ("runtime", database.runtime_url)):
        with psycopg.connect(url, row_factory=dict_row) as conn, conn.transaction():
            set_tenant(conn, other.account_id)
            conn.execute("SELECT set_config('grove.id_probe', 'on', true)")
            seen[role] = conn.execute(probe, (note["id"], notebook)).fetchone()
    assert seen == {"owner": {"n": 2}, "runtime": {"n": 0}}


def test_a_note_the_database_refuses_mid_group_stops_there_with_the_notes_before_it(
    database: embedded.EmbeddedDatabase,
    make_tenant: Callable[[], Tenant],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Groups of three: lines 2-4 are one group, 5-7 the next. Line 6's handoff collides
    # with the target's own live handoff: the first group stays restored, of the second
    # only line 5; nothing of line 6, nor of what follows it.
    monkeypatch.setattr(restore, "GROUP_NOTES", 3)
    source, target = make_tenant(), make_tenant()
    target.client.save("the target's own handoff", "handoff", taskId="t-9")
    for index in range(7):
        if index == 4:
            source.client.save("handoff: collides", "handoff", taskId="t-9")
        else:
            source.client.save(f"note {index}", "fact")
    lines = [json.dumps(line).encode() for line in export(source)]
    with pytest.raises(RestoreError) as raised:
        restore.restore(
            database.migration_url, target.account_id, lines, profile=None, progress=io.StringIO()
        )
    assert str(raised.value) == (
        "line 6: the account already has a live handoff with this taskId in that scope"
    )
    contents = {n["memory"]["content"] for n in export(target) if n["type"] == "memory"}
    assert contents == {"the target's own handoff"} | {f"note {i}" for i in range(4)}
    assert table_counts(database, target.account_id)["memory_revisions"] == 5
    # Run again without the collision: it resumes, and writes nothing twice.
    del lines[5]
    counts = restore.restore(
        database.migration_url, target.account_id, lines, profile=None, progress=io.StringIO()
    )
    assert (counts.notes, counts.skipped_notes) == (2, 4)
    assert table_counts(database, target.account_id)["memories"] == 7


def test_a_note_whose_notebook_is_not_in_the_export_stops_at_its_line(
    database: embedded.EmbeddedDatabase, make_tenant: Callable[[], Tenant], tmp_path: Path
) -> None:
    source, target = make_tenant(), make_tenant()
    for content in ("first", "second", "third"):
        source.client.save(content, "fact")
    lines = export(source)
    stray = str(uuid.uuid4())
    lines[2]["memory"]["projectId"] = stray
    failed = grove_import(database, write(tmp_path / "stray.ndjson", lines), target.account_id)
    assert failed.returncode == 1
    assert failed.stderr.strip() == f"grove: line 3: notebook {stray} is not in the export"
    restored_notes = [line for line in export(target) if line["type"] == "memory"]
    assert [n["memory"]["content"] for n in restored_notes] == ["first"]


def test_grove_import_refuses_hostile_lines_as_the_api_does(
    database: embedded.EmbeddedDatabase, make_tenant: Callable[[], Tenant], tmp_path: Path
) -> None:
    source, target = make_tenant(), make_tenant()
    source.client.save("first", "fact")
    source.client.save("second", "fact")
    header, first, second = export(source)
    kept = target.client.save("kept whatever the import does")
    nested = tmp_path / "nested.ndjson"
    nested.write_bytes(
        (json.dumps(header) + "\n" + json.dumps(first) + "\n").encode()
        + b"[" * 100_000
        + b"]" * 100_000
        + b"\n"
    )
    failed = grove_import(database, nested, target.account_id)
    assert failed.returncode == 1
    assert failed.stderr.strip() == "grove: line 3: nested too deeply: not a line of a Grove export"
    edge = json.loads(json.dumps(second))
    edge["memory"]["version"] = edge["revisions"][0]["version"] = 2**31 - 1
    failed = grove_import(
        database, write(tmp_path / "edge.ndjson", [header, first, edge]), target.account_id
    )
    assert failed.returncode == 1
    assert failed.stderr.strip() == (
        f"grove: line 3: memory: version: must be 1 to {MAX_IMPORTED_VERSION}"
    )
    notes = {
        line["memory"]["id"]: line["memory"] for line in export(target) if line["type"] == "memory"
    }
    assert sorted(n["content"] for n in notes.values()) == ["first", kept["content"]]
    assert notes[kept["id"]] == kept
