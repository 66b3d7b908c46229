"""Batch saves (issue 22): ``POST /v1/memories/batch`` saves up to 100 notes, each as a
single save would, answering per item; one bad item never undoes the others."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import requests

from grove_contracts.notes import MAX_BATCH_ITEMS, MAX_CONTENT_CHARS
from tests.support.clients import Client, data_of, error_of
from tests.support.processes import run_script
from tests.support.tenants import Tenant

BATCH = "/v1/memories/batch"


def note(content: str, kind: str = "fact", **fields: Any) -> dict[str, Any]:
    """One item of a batch."""
    return {"content": content, "kind": kind, **fields}


def send(client: Client, items: list[Any]) -> requests.Response:
    return client.post(BATCH, {"items": items})


def outcomes(response: requests.Response) -> list[dict[str, Any]]:
    """The per-item results of a batch that answered 200, checked to be in order."""
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = data_of(response)["items"]
    assert [item["index"] for item in items] == list(range(len(items)))
    return items


def statuses(response: requests.Response) -> list[str]:
    return [item["status"] for item in outcomes(response)]


def stored(client: Client) -> dict[str, dict[str, Any]]:
    """Every live note the client sees, by ID (one page: tests stay under 100 notes)."""
    page = data_of(client.get("/v1/memories?limit=100"))
    assert page["nextCursor"] is None
    return {item["id"]: item for item in page["items"]}


def test_mixed_batch_answers_each_item_and_stores_only_the_good_ones(tenant: Tenant) -> None:
    existing = tenant.client.save("the office opens at nine")
    operation = str(uuid.uuid4())
    first = tenant.client.save("saved once before", operationId=operation)
    response = send(
        tenant.client,
        [
            note("a brand new note"),
            note("the office opens at ten", id=existing["id"]),
            note("in a notebook that does not exist", projectId=str(uuid.uuid4())),
            note("saved once before", operationId=operation),
        ],
    )
    new, corrected, failed, replayed = outcomes(response)
    assert [new["status"], corrected["status"], failed["status"], replayed["status"]] == [
        "created",
        "updated",
        "failed",
        "replayed",
    ]
    assert failed["error"]["code"] == "not_found" and "memory" not in failed
    assert "error" not in new and new["memory"]["content"] == "a brand new note"
    assert corrected["memory"]["id"] == existing["id"] and corrected["memory"]["version"] == 2
    assert replayed["memory"] == {k: v for k, v in first.items() if k != "similar"}
    notes = stored(tenant.client)
    assert {n["content"] for n in notes.values()} == {
        "a brand new note",
        "the office opens at ten",
        "saved once before",
    }
    assert notes[existing["id"]]["version"] == 2


def test_a_hundred_full_notes_pass_and_a_hundred_and_one_are_refused(tenant: Tenant) -> None:
    full = "x" * (MAX_CONTENT_CHARS - 4)
    items = [note(f"{i:03} {full}") for i in range(MAX_BATCH_ITEMS + 1)]
    refused = send(tenant.client, items)
    assert refused.status_code == 400, refused.text
    assert error_of(refused)["code"] == "validation_error"
    assert stored(tenant.client) == {}
    # About 600 KB: over the api's default body limit, within the batch route's own.
    passed = send(tenant.client, items[:MAX_BATCH_ITEMS])
    assert statuses(passed) == ["created"] * MAX_BATCH_ITEMS
    assert len(stored(tenant.client)) == MAX_BATCH_ITEMS


def test_an_empty_batch_is_refused(tenant: Tenant) -> None:
    refused = send(tenant.client, [])
    assert refused.status_code == 400, refused.text
    assert error_of(refused)["code"] == "validation_error"


def test_a_body_over_the_batch_limit_is_refused_with_413(tenant: Tenant) -> None:
    # JSON escapes each "é" as six bytes: 100 such notes are over 3 MB, past 1 MiB.
    items = [note("é" * MAX_CONTENT_CHARS) for _ in range(MAX_BATCH_ITEMS)]
    refused = send(tenant.client, items)
    assert refused.status_code == 413, refused.status_code
    assert error_of(refused)["code"] == "payload_too_large"
    assert stored(tenant.client) == {}


def test_resending_a_batch_replays_every_item_without_duplicates(tenant: Tenant) -> None:
    items = [note(f"note {i}", operationId=str(uuid.uuid4())) for i in range(5)]
    first = outcomes(send(tenant.client, items))
    again = outcomes(send(tenant.client, items))
    assert [item["status"] for item in first] == ["created"] * 5
    assert [item["status"] for item in again] == ["replayed"] * 5
    assert [item["memory"] for item in again] == [item["memory"] for item in first]
    assert len(stored(tenant.client)) == 5


def test_an_operation_id_reused_with_other_fields_fails_that_item(tenant: Tenant) -> None:
    operation = str(uuid.uuid4())
    response = send(
        tenant.client,
        [note("first use", operationId=operation), note("other words", operationId=operation)],
    )
    created, conflicting = outcomes(response)
    assert created["status"] == "created"
    assert conflicting["status"] == "failed"
    assert conflicting["error"]["code"] == "idempotency_conflict"
    assert [n["content"] for n in stored(tenant.client).values()] == ["first use"]


def test_an_item_over_the_content_limit_fails_alone(tenant: Tenant) -> None:
    response = send(
        tenant.client,
        [
            note("y" * MAX_CONTENT_CHARS),
            note("z" * (MAX_CONTENT_CHARS + 1)),
            note("a short one"),
        ],
    )
    longest, too_long, short = outcomes(response)
    assert (longest["status"], too_long["status"], short["status"]) == (
        "created",
        "failed",
        "created",
    )
    assert too_long["error"]["code"] == "validation_error"
    assert [d["field"] for d in too_long["error"]["details"]] == ["content"]
    contents = {n["content"] for n in stored(tenant.client).values()}
    assert contents == {"y" * MAX_CONTENT_CHARS, "a short one"}


def test_another_accounts_notebook_and_note_fail_only_their_items(
    make_tenant: Callable[[], Tenant],
) -> None:
    mine, theirs = make_tenant(), make_tenant()
    notebook = theirs.notebook("private")
    secret = theirs.client.save("their secret", projectId=notebook)
    response = send(
        mine.client,
        [
            note("planted in their notebook", projectId=notebook),
            note("overwrites their note", id=secret["id"]),
            note("my own note"),
        ],
    )
    planted, overwrite, own = outcomes(response)
    assert planted["status"] == overwrite["status"] == "failed"
    assert planted["error"]["code"] == overwrite["error"]["code"] == "not_found"
    assert own["status"] == "created"
    assert [n["content"] for n in stored(mine.client).values()] == ["my own note"]
    assert stored(theirs.client) == {secret["id"]: secret}


def test_a_read_only_key_is_refused_and_nothing_is_stored(tenant: Tenant) -> None:
    reader = tenant.key("reader", personal=True, all_notebooks=True, read_only=True)
    refused = send(reader, [note("not allowed"), note("nor this")])
    assert refused.status_code == 403, refused.text
    assert error_of(refused)["code"] == "forbidden"
    assert stored(tenant.client) == {}


def test_each_note_counts_once_against_the_quota(tenant: Tenant) -> None:
    tenant.client.save("already here")
    quota = run_script(
        "grove",
        *("accounts", "quota", "--account", str(tenant.account_id), "--notes", "3"),
        env={"GROVE_MIGRATION_DATABASE_URL": tenant.database.migration_url},
    )
    assert quota.returncode == 0, quota.stderr
    response = send(tenant.client, [note("second"), note("third"), note("fourth")])
    second, third, fourth = outcomes(response)
    assert (second["status"], third["status"], fourth["status"]) == (
        "created",
        "created",
        "failed",
    )
    assert fourth["error"]["code"] == "quota_exceeded"
    assert len(stored(tenant.client)) == 3


def test_an_idempotency_key_header_is_refused(tenant: Tenant) -> None:
    refused = tenant.client.post(
        BATCH, {"items": [note("one")]}, headers={"Idempotency-Key": str(uuid.uuid4())}
    )
    assert refused.status_code == 400, refused.text
    assert error_of(refused)["code"] == "validation_error"
    assert stored(tenant.client) == {}
