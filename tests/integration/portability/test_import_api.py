"""``POST /v1/import``: an owner restores a Grove export over HTTP (real api, real
PostgreSQL, owner sessions signed by the test provider), exactly as ``grove import``
restores it but with every ID mapped; progress at ``GET /v1/import/{id}``."""

from __future__ import annotations

import io
import json
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from typing import Any

import psycopg
import pytest
import requests
from psycopg.rows import dict_row

from grove_contracts.imports import MAX_IMPORT_LINE_BYTES, MAX_IMPORTED_VERSION
from grove_db.pool import set_tenant
from grove_memory.portability import restore
from grove_memory.portability.restore_checks import RestoreError
from grove_memory.portability.restore_progress import Counts, Progress
from tests.support.clients import Client, data_of, error_of
from tests.support.conversations import Owner, Stack, new_owner, owner, stack
from tests.support.files import uploaded
from tests.support.portability import body, export, populate, remapped
from tests.support.waiting import wait_until

__all__ = ["owner", "stack"]  # the fixtures tests name


def ndjson(lines: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def send(
    client: Client,
    import_id: str,
    data: bytes | Iterator[bytes],
    media: str = "application/x-ndjson",
) -> requests.Response:
    return client.session.post(
        client.base + "/v1/import",
        params={"id": import_id},
        data=data,
        headers=client.headers({"Content-Type": media}),
        timeout=60,
    )


def status(client: Client, import_id: str) -> dict[str, Any]:
    return data_of(client.get(f"/v1/import/{import_id}"))  # type: ignore[no-any-return]


def test_an_export_round_trips_through_the_api_with_ids_mapped(stack: Stack) -> None:
    source, target = new_owner(stack), new_owner(stack)
    populate(source.tenant)
    original = export(source.tenant)
    import_id = str(uuid.uuid4())
    response = send(target.session, import_id, ndjson(original))
    assert response.status_code == 200, response.text
    done = data_of(response)
    assert (done["id"], done["state"], done["error"]) == (import_id, "done", None)
    assert done["counts"] == {
        "notebooks": 4,
        "notes": 5,
        "revisions": 7,
        "conversations": 0,
        "turns": 0,
        "skippedNotebooks": 0,
        "skippedNotes": 0,
        "skippedConversations": 0,
        "files": 0,
        "skippedFiles": 0,
        "connections": 0,
    }
    assert status(target.session, import_id) == done
    again = export(target.tenant)
    assert body(again) == body(remapped(original, target.tenant.account_id))
    assert body(export(source.tenant)) == body(original)  # the source account is untouched


def test_a_cut_short_import_resumes_under_its_id_without_duplicates(stack: Stack) -> None:
    source, target = new_owner(stack), new_owner(stack)
    populate(source.tenant)
    original = export(source.tenant)
    import_id = str(uuid.uuid4())
    first = send(target.session, import_id, ndjson(original[:-2]))  # the last two notes lost
    assert data_of(first)["counts"]["notes"] == 3
    resumed = data_of(send(target.session, import_id, ndjson(original)))
    counts = resumed["counts"]
    assert (counts["notes"], counts["skippedNotes"], counts["skippedNotebooks"]) == (2, 3, 4)
    assert body(export(target.tenant)) == body(remapped(original, target.tenant.account_id))


def test_a_bad_line_stops_the_import_there_and_is_recorded(stack: Stack) -> None:
    source, target = new_owner(stack), new_owner(stack)
    populate(source.tenant)
    original = export(source.tenant)
    notes = [i for i, line in enumerate(original) if line["type"] == "memory"]
    data = ndjson(original[: notes[2]]) + b'{"type": "memory", "memory": \n'
    import_id = str(uuid.uuid4())
    refused = send(target.session, import_id, data)
    assert refused.status_code == 400, refused.text
    error = error_of(refused)
    line = notes[2] + 1
    assert error["code"] == "import_refused"
    assert error["details"][0]["field"] == f"line {line}"
    failed = status(target.session, import_id)
    assert (failed["state"], failed["line"]) == ("failed", line)
    assert failed["counts"]["notes"] == 2
    assert len([x for x in export(target.tenant) if x["type"] == "memory"]) == 2


def test_another_format_version_and_wrong_media_type_are_refused(owner: Owner) -> None:
    header = {"type": "export", "version": 2}
    refused = send(owner.session, str(uuid.uuid4()), ndjson([header]))
    assert refused.status_code == 400
    assert "format version 2 is not supported" in error_of(refused)["message"]
    wrong = send(owner.session, str(uuid.uuid4()), b"{}", media="application/json")
    assert wrong.status_code == 415
    missing = owner.session.session.post(
        owner.session.base + "/v1/import",
        data=b"",
        headers=owner.session.headers({"Content-Type": "application/x-ndjson"}),
    )
    assert missing.status_code == 400  # no id


def test_lines_are_limited_at_the_boundary(owner: Owner) -> None:
    header = {"type": "export", "version": 1, "exportedAt": "2026-12-06T00:00:00Z"}

    def line(size: int) -> bytes:
        start = b'{"type": "connection", "pad": "'
        return start + b"x" * (size - len(start) - 2) + b'"}'

    fits = ndjson([header]) + line(MAX_IMPORT_LINE_BYTES) + b"\n"
    response = send(owner.session, str(uuid.uuid4()), fits)
    assert response.status_code == 200, response.text[:300]
    assert data_of(response)["counts"]["connections"] == 1
    over = ndjson([header]) + line(MAX_IMPORT_LINE_BYTES + 1) + b"\n"
    refused = send(owner.session, str(uuid.uuid4()), over)
    assert refused.status_code == 400
    assert error_of(refused)["details"][0]["field"] == "line 2"


def test_only_the_owner_imports_and_reads_imports_of_their_own_account(
    owner: Owner, stack: Stack
) -> None:
    export_lines = export(owner.tenant)
    import_id = str(uuid.uuid4())
    key = send(owner.key, import_id, ndjson(export_lines))
    assert key.status_code == 403 and error_of(key)["code"] == "owner_session_required"
    assert data_of(send(owner.session, import_id, ndjson(export_lines)))["state"] == "done"
    intruder = new_owner(stack)
    assert intruder.session.get(f"/v1/import/{import_id}").status_code == 404
    assert owner.key.get(f"/v1/import/{import_id}").status_code == 403


def test_one_import_at_a_time_and_progress_is_readable_while_it_runs(
    stack: Stack,
) -> None:
    source, target = new_owner(stack), new_owner(stack)
    populate(source.tenant)
    original = export(source.tenant)
    release = threading.Event()

    def slow() -> Iterator[bytes]:
        yield ndjson(original[:-1])
        release.wait(timeout=30)
        yield ndjson(original[-1:])

    import_id = str(uuid.uuid4())
    result: list[requests.Response] = []
    sender = threading.Thread(target=lambda: result.append(send(target.session, import_id, slow())))
    sender.start()
    try:
        wait_until(lambda: status_or_none(target.session, import_id) == "running")
        busy = send(target.session, str(uuid.uuid4()), ndjson(original))
        assert busy.status_code == 409 and error_of(busy)["code"] == "import_in_progress"
        again = send(target.session, import_id, ndjson(original))
        assert again.status_code == 409
    finally:
        release.set()
        sender.join(timeout=60)
    assert result and result[0].status_code == 200, result[0].text if result else None
    assert data_of(result[0])["counts"]["notes"] == 5


def status_or_none(client: Client, import_id: str) -> str | None:
    response = client.get(f"/v1/import/{import_id}")
    return data_of(response)["state"] if response.status_code == 200 else None


def owner_export(owner: Owner) -> list[dict[str, Any]]:
    response = owner.session.get("/v1/export")
    assert response.status_code == 200, response.text
    return [json.loads(line) for line in response.text.splitlines()]


def test_conversations_round_trip_with_their_turns_and_citations(stack: Stack) -> None:
    source, target = new_owner(stack), new_owner(stack)
    billing = source.tenant.notebook("billing")
    source.key.save("We deploy the billing service with Argo CD every Tuesday.", projectId=billing)
    source.key.save("Priya maintains the billing service.")
    everywhere = source.create(title="Deploys")["id"]
    source.answered(everywhere, "When do we deploy the billing service?", 1)
    scoped = source.create(projectId=billing)["id"]
    turn = source.answered(scoped, "Who deploys billing?", 1)["turn"]
    assert turn["sources"]
    original = owner_export(source)
    import_id = str(uuid.uuid4())
    done = data_of(send(target.session, import_id, ndjson(original)))
    assert (done["counts"]["conversations"], done["counts"]["turns"]) == (2, 2)
    assert done["counts"]["connections"] >= 1  # credentials are never restored

    def conversations(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        found = [line for line in lines if line["type"] == "conversation"]
        for line in found:
            for turn in line["turns"]:
                turn["proposals"] = []  # not restored: their undo data is not exported
        return found

    expected = conversations(remapped(original, target.tenant.account_id))
    assert conversations(owner_export(target)) == expected
    restored_turn = expected[1]["turns"][0]
    assert restored_turn["answer"]["citations"], restored_turn  # or the loop checks nothing
    for citation in restored_turn["answer"]["citations"]:
        note = target.key.get(f"/v1/memories/{citation['noteId']}")
        assert note.status_code == 200  # citations point at the restored notes
    again = data_of(send(target.session, import_id, ndjson(original)))
    assert again["counts"]["skippedConversations"] == 2
    assert len(conversations(owner_export(target))) == 2

    # grove import keeps the conversations' IDs (each account's own) and maps the notes
    # another account holds, the citations with them.
    third = new_owner(stack)
    lines = ndjson(original).splitlines(keepends=True)
    counts = restore.restore(
        stack.database.migration_url,
        third.tenant.account_id,
        lines,
        profile=None,
        progress=io.StringIO(),
    )
    assert (counts.conversations, counts.turns) == (2, 2)
    kept = conversations(owner_export(third))
    assert [c["conversation"]["id"] for c in kept] == [everywhere, scoped]
    assert kept[1]["turns"][0]["answer"]["citations"], kept[1]
    for citation in kept[1]["turns"][0]["answer"]["citations"]:
        assert citation["noteId"] not in {c["noteId"] for c in turn["answer"]["citations"]}
        assert third.key.get(f"/v1/memories/{citation['noteId']}").status_code == 200


def test_a_file_comes_back_through_the_api_and_a_larger_one_is_refused(
    owner: Owner, stack: Stack
) -> None:
    data = b"The gateway restarts at two, every night."
    uploaded(owner.key, data, name="gateway.txt")
    lines = export(owner.tenant)
    target = new_owner(stack)
    done = data_of(send(target.session, str(uuid.uuid4()), ndjson(lines)))
    assert (done["state"], done["counts"]["files"]) == ("done", 1)
    (file,) = data_of(target.key.get("/v1/files"))["items"]
    assert target.key.get(f"/v1/files/{file['id']}/original").content == data
    # A file past what a Restorer may hold stops it at the file's line, nothing written.
    number = next(i for i, line in enumerate(lines, start=1) if line["type"] == "file")
    progress = Progress(Counts())
    with psycopg.connect(
        stack.database.migration_url, row_factory=dict_row, autocommit=True
    ) as conn:
        restorer = restore.Restorer(
            lambda: nullcontext(conn),
            new_owner(stack).tenant.account_id,
            None,
            progress,
            max_file_bytes=len(data) - 1,
        )
        with pytest.raises(RestoreError) as refused:
            restorer.run([ndjson([line]) for line in lines], 10)
    assert refused.value.line == number and "is larger than the" in str(refused.value)
    assert progress.counts.files == 0


# --- hostile lines --------------------------------------------------------------------


def note_count(owner: Owner) -> int:
    return len([line for line in export(owner.tenant) if line["type"] == "memory"])


def refused_at(owner: Owner, data: bytes, line: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Send ``data`` as a new import, refused at ``line``: the error and the import's
    recorded state."""
    import_id = str(uuid.uuid4())
    refused = send(owner.session, import_id, data)
    assert refused.status_code == 400, refused.text[:500]
    error = error_of(refused)
    assert error["code"] == "import_refused"
    assert error["details"][0]["field"] == f"line {line}"
    failed = status(owner.session, import_id)
    assert (failed["state"], failed["line"], failed["error"]) == ("failed", line, error["message"])
    return error, failed


def test_a_deeply_nested_line_fails_the_import_at_its_line_and_the_next_runs_at_once(
    stack: Stack,
) -> None:
    source, target = new_owner(stack), new_owner(stack)
    populate(source.tenant)
    original = export(source.tenant)
    target.key.save("kept whatever the import does")
    notes = [i for i, line in enumerate(original) if line["type"] == "memory"]
    nested = b"[" * 100_000 + b"]" * 100_000 + b"\n"
    inside = b'{"type": "memory", "memory": ' + b"[" * 50_000 + b"]" * 50_000 + b"}\n"
    for bad in (nested, inside):
        data = ndjson(original[: notes[1]]) + bad + ndjson(original[notes[1] :])
        error, _ = refused_at(target, data, notes[1] + 1)
        assert "nested too deeply" in error["message"]
        assert note_count(target) == 1 + 1  # the one kept, and the one before the line
    header = ndjson(original[:1])
    error, _ = refused_at(target, nested + header, 1)
    assert "not a Grove export" in error["message"]
    # Nothing holds the account's imports back: the next one runs at once.
    done = send(target.session, str(uuid.uuid4()), ndjson(original))
    assert done.status_code == 200, done.text
    assert data_of(done)["state"] == "done"
    assert note_count(target) == 1 + 5


def with_version(line: dict[str, Any], version: int) -> dict[str, Any]:
    changed: dict[str, Any] = json.loads(json.dumps(line))
    changed["memory"]["version"] = changed["revisions"][-1]["version"] = version
    return changed


def test_an_imported_version_is_bounded_so_the_note_stays_editable(stack: Stack) -> None:
    source, target = new_owner(stack), new_owner(stack)
    source.key.save("a note whose version is pushed to the edge")
    header, line = export(source.tenant)
    error, _ = refused_at(target, ndjson([header, with_version(line, 2**31 - 1)]), 2)
    assert error["message"] == f"line 2: memory: version: must be 1 to {MAX_IMPORTED_VERSION}"
    error, _ = refused_at(target, ndjson([header, with_version(line, MAX_IMPORTED_VERSION + 1)]), 2)
    assert "version: must be 1 to" in error["message"]
    assert note_count(target) == 0

    done = send(
        target.session,
        str(uuid.uuid4()),
        ndjson([header, with_version(line, MAX_IMPORTED_VERSION)]),
    )
    assert data_of(done)["state"] == "done", done.text
    (note,) = [x["memory"] for x in export(target.tenant) if x["type"] == "memory"]
    assert note["version"] == MAX_IMPORTED_VERSION
    edited = target.key.patch(
        f"/v1/memories/{note['id']}",
        {"content": "edited at the bound", "expectedVersion": MAX_IMPORTED_VERSION},
    )
    assert edited.status_code == 200, edited.text
    assert data_of(edited)["version"] == MAX_IMPORTED_VERSION + 1


#: A field of each kind of line out of bounds: (line type, change, part of the message).
OUT_OF_BOUNDS: list[tuple[str, Callable[[dict[str, Any]], Any], str]] = [
    ("notebook", lambda x: x["notebook"].update(name="n" * 201), "notebook: name:"),
    ("notebook", lambda x: x["notebook"].update(createdAt="3000-01-01T00:00:00Z"), "createdAt"),
    ("conversation", lambda x: x["conversation"].update(title="t" * 201), "title"),
    ("conversation", lambda x: x["conversation"].update(version=2**31 - 1), "version: must be"),
    ("conversation", lambda x: x["turns"][0].update(ordinal=101), "ordinal: must be 1 to 100"),
    ("conversation", lambda x: x["turns"][0].update(query="q" * 6001), "turns.0: query"),
    ("conversation", lambda x: x["turns"][0].update(context={"notes": ["x"]}), "turns.0: notes"),
    ("conversation", lambda x: x["turns"][0].update(attempts=2**31), "attempts: must be"),
    ("conversation", lambda x: x["turns"][0].update(createdAt="1969-12-31T23:59:59Z"), "from 1970"),
    (
        "conversation",
        lambda x: x["turns"][0]["answer"]["citations"][0].update(quote="\u0000"),
        "outside what Grove stores",
    ),
    ("memory", lambda x: x["memory"].update(id="not-a-uuid"), "memory: id:"),
    ("memory", lambda x: x["memory"].update(taskId="t" * 201), "memory: taskId:"),
    ("memory", lambda x: x["memory"]["provenance"].update(sourceAgent="a" * 101), "sourceAgent"),
    ("memory", lambda x: x["memory"].update(retentionDays=366), "memory: retentionDays:"),
    ("memory", lambda x: x["memory"].update(kind="passage"), "memory: kind:"),
    ("memory", lambda x: x["memory"].update(version=0), "memory: version: must be 1 to"),
    (
        "memory",
        lambda x: x["memory"].update(createdAt="0001-01-01T00:00:00+14:00"),
        "memory: createdAt: must be from 1970-01-01 to now",
    ),
    ("memory", lambda x: x["memory"].update(updatedAt="9999-12-31T00:00:00Z"), "updatedAt"),
    (
        "memory",
        lambda x: x["memory"].update(expiresAt="9999-12-31T23:59:59-14:00"),
        "memory: expiresAt: must be from 1970-01-01 to 365 days from now",
    ),
    ("memory", lambda x: x["revisions"][0].update(content="a \u0000 b"), "revisions.0: content"),
    ("memory", lambda x: x["revisions"][0].update(operationId="x"), "operationId"),
    ("file", lambda x: x["file"].update(name="two\nlines.txt"), "file: name:"),
    ("file", lambda x: x["file"].update(name="n" * 256), "file: name:"),
]


def test_each_field_out_of_bounds_is_refused_at_its_line_and_nothing_stored_is_lost(
    stack: Stack,
) -> None:
    source, target = new_owner(stack), new_owner(stack)
    plans = source.tenant.notebook("plans")
    source.key.save("We deploy the billing service every Tuesday.", projectId=plans)
    conversation = source.create(title="Deploys")["id"]
    source.answered(conversation, "When do we deploy the billing service?", 1)
    uploaded(source.key, b"The gateway restarts at two.", name="gateway.txt")
    original = owner_export(source)
    kept = target.key.save("kept whatever the import does")
    kinds = [line["type"] for line in original]

    refusals = []
    for kind, change, expected in OUT_OF_BOUNDS:
        index = kinds.index(kind)
        lines = json.loads(json.dumps(original))
        change(lines[index])
        error, _ = refused_at(target, ndjson(lines), index + 1)
        refusals.append((expected, error["message"]))
    assert [expected for expected, message in refusals if expected not in message] == [], refusals

    assert data_of(target.key.get(f"/v1/memories/{kept['id']}"))["content"] == kept["content"]
    done = send(target.session, str(uuid.uuid4()), ndjson(original))
    assert data_of(done)["state"] == "done", done.text
    assert note_count(target) == 2


def test_an_import_the_database_stops_is_recorded_failed_and_the_next_runs_at_once(
    stack: Stack,
) -> None:
    source, target = new_owner(stack), new_owner(stack)
    populate(source.tenant)
    original = export(source.tenant)
    first_note = next(i for i, line in enumerate(original) if line["type"] == "memory")
    release = threading.Event()

    def held() -> Iterator[bytes]:
        yield ndjson(original[:first_note])
        release.wait(timeout=60)
        yield ndjson(original[first_note:])

    import_id = str(uuid.uuid4())
    result: list[requests.Response] = []
    sender = threading.Thread(target=lambda: result.append(send(target.session, import_id, held())))
    sender.start()
    # The account held against every write until the statement deadline (10 s) cuts the
    # import's next transaction off.
    with psycopg.connect(stack.database.migration_url) as lock, lock.transaction():
        try:
            wait_until(lambda: status_or_none(target.session, import_id) == "running")
            set_tenant(lock, target.tenant.account_id)
            lock.execute(
                "SELECT 1 FROM accounts WHERE id = %s FOR UPDATE", (target.tenant.account_id,)
            )
        finally:
            release.set()
            sender.join(timeout=60)
    assert result, "the import did not answer"
    stopped = result[0]
    assert stopped.status_code == 503, stopped.text
    assert error_of(stopped)["code"] == "database_timeout"
    assert stopped.headers["Retry-After"] == "1"
    failed = status(target.session, import_id)
    assert (failed["state"], failed["error"]) == ("failed", error_of(stopped)["message"])

    # Nothing holds the account's imports back: another runs at once, and this one resumes.
    other = send(target.session, str(uuid.uuid4()), ndjson(original[:first_note]))
    assert other.status_code == 200, other.text
    resumed = send(target.session, import_id, ndjson(original))
    assert data_of(resumed)["state"] == "done", resumed.text
    assert note_count(target) == 5
