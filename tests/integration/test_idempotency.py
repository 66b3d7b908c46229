"""Idempotent mutations: an operationId (body) or Idempotency-Key (header) replays.

Replaying an ID with the same arguments returns the first result and changes
nothing; other arguments are a conflict; a failed operation leaves no record.
"""

from __future__ import annotations

from typing import Any
from uuid import uuid4

import pytest
import requests

from tests.support.clients import Client, data_of, error_of, race
from tests.support.tenants import Tenant


def note_ids(client: Client) -> list[str]:
    response = client.get("/v1/memories?limit=100")
    assert response.status_code == 200, response.text
    return [item["id"] for item in data_of(response)["items"]]


def revisions(client: Client, note_id: str) -> list[dict[str, Any]]:
    response = client.get(f"/v1/memories/{note_id}/revisions")
    assert response.status_code == 200, response.text
    return data_of(response)["items"]  # type: ignore[no-any-return]


def op() -> str:
    return str(uuid4())


# --- save (POST /v1/memories) -------------------------------------------------------


def test_replayed_save_returns_the_original_note_with_200_and_creates_nothing(
    tenant: Tenant,
) -> None:
    operation = op()
    body = {"content": "replay me", "kind": "fact", "operationId": operation}
    first = tenant.client.post("/v1/memories", body)
    assert first.status_code == 201, first.text
    original = data_of(first)

    replay = tenant.client.post("/v1/memories", body)
    assert replay.status_code == 200, replay.text
    replayed = data_of(replay)
    assert replayed["id"] == original["id"]
    assert replayed["version"] == original["version"] == 1
    assert replayed == original

    assert note_ids(tenant.client) == [original["id"]]
    history = revisions(tenant.client, original["id"])
    assert [r["version"] for r in history] == [1]
    assert history[0]["operationId"] == operation


def test_idempotency_key_header_alone_replays_like_the_body_field(tenant: Tenant) -> None:
    key = op()
    body = {"content": "header keyed", "kind": "decision"}
    first = tenant.client.post("/v1/memories", body, headers={"Idempotency-Key": key})
    assert first.status_code == 201, first.text
    replay = tenant.client.post("/v1/memories", body, headers={"Idempotency-Key": key})
    assert replay.status_code == 200, replay.text
    assert data_of(replay) == data_of(first)
    # The header and the body field name the same operation.
    in_body = tenant.client.post("/v1/memories", {**body, "operationId": key})
    assert in_body.status_code == 200, in_body.text
    assert data_of(in_body)["id"] == data_of(first)["id"]
    assert note_ids(tenant.client) == [data_of(first)["id"]]
    assert revisions(tenant.client, data_of(first)["id"])[0]["operationId"] == key


def test_header_and_body_operation_id_that_agree_are_accepted(tenant: Tenant) -> None:
    key = op()
    body = {"content": "both ways", "kind": "fact", "operationId": key}
    first = tenant.client.post("/v1/memories", body, headers={"Idempotency-Key": key})
    assert first.status_code == 201, first.text
    replay = tenant.client.post("/v1/memories", body, headers={"Idempotency-Key": key.upper()})
    assert replay.status_code == 200, replay.text
    assert data_of(replay)["id"] == data_of(first)["id"]


def test_header_and_body_operation_ids_that_differ_are_rejected_and_save_nothing(
    tenant: Tenant,
) -> None:
    response = tenant.client.post(
        "/v1/memories",
        {"content": "ambiguous", "kind": "fact", "operationId": op()},
        headers={"Idempotency-Key": op()},
    )
    assert response.status_code == 400, response.text
    assert error_of(response)["code"] == "validation_error"
    assert note_ids(tenant.client) == []


@pytest.mark.parametrize("key", ["not-a-uuid", "12345", ""])
def test_idempotency_key_that_is_not_a_uuid_is_rejected(tenant: Tenant, key: str) -> None:
    response = tenant.client.post(
        "/v1/memories", {"content": "bad key", "kind": "fact"}, headers={"Idempotency-Key": key}
    )
    assert response.status_code == 400, response.text
    assert error_of(response)["code"] == "validation_error"
    assert note_ids(tenant.client) == []


def test_body_operation_id_that_is_not_a_uuid_is_rejected(tenant: Tenant) -> None:
    response = tenant.client.post(
        "/v1/memories", {"content": "bad id", "kind": "fact", "operationId": "nope"}
    )
    assert response.status_code == 400, response.text
    assert error_of(response)["code"] == "validation_error"


def test_non_uuid_idempotency_key_is_rejected_on_every_mutation(tenant: Tenant) -> None:
    note = tenant.client.save("target")
    bad = {"Idempotency-Key": "definitely-not-a-uuid"}
    calls = [
        tenant.client.patch(f"/v1/memories/{note['id']}", {"content": "x"}, headers=bad),
        tenant.client.post("/v1/memories/forget", {"ids": [note["id"]]}, headers=bad),
        tenant.client.post("/v1/notebooks", {"name": "nb"}, headers=bad),
    ]
    for response in calls:
        assert response.status_code == 400, response.text
        assert error_of(response)["code"] == "validation_error"
    current = data_of(tenant.client.get(f"/v1/memories/{note['id']}"))
    assert (current["content"], current["version"]) == ("target", 1)
    assert data_of(tenant.client.get("/v1/notebooks"))["items"] == []


@pytest.mark.parametrize(
    "change",
    [
        {"content": "other words"},
        {"kind": "decision"},
        {"taskId": "task-9"},
        {"retentionDays": 7},
        {"provenance": {"sourceAgent": "agent-x"}},
    ],
)
def test_reusing_a_save_operation_id_with_other_arguments_is_an_idempotency_conflict(
    tenant: Tenant, change: dict[str, Any]
) -> None:
    operation = op()
    body = {"content": "original words", "kind": "fact", "operationId": operation}
    original = tenant.client.post("/v1/memories", body)
    assert original.status_code == 201, original.text
    conflict = tenant.client.post("/v1/memories", {**body, **change})
    assert conflict.status_code == 409, conflict.text
    assert error_of(conflict)["code"] == "idempotency_conflict"
    assert note_ids(tenant.client) == [data_of(original)["id"]]
    current = data_of(tenant.client.get(f"/v1/memories/{data_of(original)['id']}"))
    assert {**current, "similar": []} == data_of(original)


def test_reusing_an_operation_id_for_a_different_operation_is_a_conflict(tenant: Tenant) -> None:
    operation = op()
    note = tenant.client.save("saved once", operationId=operation)
    patched = tenant.client.patch(
        f"/v1/memories/{note['id']}", {"content": "changed", "operationId": operation}
    )
    assert patched.status_code == 409, patched.text
    assert error_of(patched)["code"] == "idempotency_conflict"
    forgot = tenant.client.post(
        "/v1/memories/forget", {"ids": [note["id"]], "operationId": operation}
    )
    assert forgot.status_code == 409, forgot.text
    assert error_of(forgot)["code"] == "idempotency_conflict"
    notebook = tenant.client.post("/v1/notebooks", {"name": "nb", "operationId": operation})
    assert notebook.status_code == 409, notebook.text
    assert error_of(notebook)["code"] == "idempotency_conflict"
    current = data_of(tenant.client.get(f"/v1/memories/{note['id']}"))
    assert (current["content"], current["version"]) == ("saved once", 1)


def test_replaying_a_save_whose_note_was_forgotten_is_gone_and_the_note_stays_deleted(
    tenant: Tenant,
) -> None:
    operation = op()
    body = {"content": "short lived", "kind": "fact", "operationId": operation}
    note = data_of(tenant.client.post("/v1/memories", body))
    forgot = tenant.client.post("/v1/memories/forget", {"ids": [note["id"]]})
    assert forgot.status_code == 200, forgot.text
    assert data_of(forgot)["results"] == [{"id": note["id"], "outcome": "deleted"}]

    replay = tenant.client.post("/v1/memories", body)
    assert replay.status_code == 410, replay.text
    assert error_of(replay)["code"] == "gone"
    header_replay = tenant.client.post(
        "/v1/memories",
        {"content": "short lived", "kind": "fact"},
        headers={"Idempotency-Key": operation},
    )
    assert header_replay.status_code == 410, header_replay.text
    assert tenant.client.get(f"/v1/memories/{note['id']}").status_code == 404
    assert note_ids(tenant.client) == []


def test_replaying_a_patch_of_a_forgotten_note_is_gone(tenant: Tenant) -> None:
    note = tenant.client.save("to patch then forget")
    operation = op()
    body = {"content": "patched", "operationId": operation}
    assert tenant.client.patch(f"/v1/memories/{note['id']}", body).status_code == 200
    tenant.client.post("/v1/memories/forget", {"ids": [note["id"]]})
    replay = tenant.client.patch(f"/v1/memories/{note['id']}", body)
    assert replay.status_code == 410, replay.text
    assert error_of(replay)["code"] == "gone"
    assert tenant.client.get(f"/v1/memories/{note['id']}").status_code == 404


# --- correct (PATCH /v1/memories/{id}) ------------------------------------------------


def test_replayed_patch_returns_the_original_version_and_adds_no_revision(
    tenant: Tenant,
) -> None:
    note = tenant.client.save("version one")
    operation = op()
    body = {"content": "version two", "expectedVersion": 1, "operationId": operation}
    first = tenant.client.patch(f"/v1/memories/{note['id']}", body)
    assert first.status_code == 200, first.text
    assert data_of(first)["version"] == 2

    replay = tenant.client.patch(f"/v1/memories/{note['id']}", body)
    assert replay.status_code == 200, replay.text
    assert data_of(replay) == data_of(first)
    # A replay even after a later change returns the first result, not a conflict.
    later = tenant.client.patch(f"/v1/memories/{note['id']}", {"content": "version three"})
    assert data_of(later)["version"] == 3
    again = tenant.client.patch(
        f"/v1/memories/{note['id']}", body, headers={"Idempotency-Key": operation}
    )
    assert again.status_code == 200, again.text
    assert data_of(again) == data_of(first)

    history = revisions(tenant.client, note["id"])
    assert [(r["version"], r["content"]) for r in history] == [
        (1, "version one"),
        (2, "version two"),
        (3, "version three"),
    ]
    assert [r["operationId"] for r in history] == [None, operation, None]
    assert data_of(tenant.client.get(f"/v1/memories/{note['id']}"))["content"] == "version three"


def test_reusing_a_patch_operation_id_with_other_arguments_is_a_conflict(tenant: Tenant) -> None:
    note = tenant.client.save("original")
    other = tenant.client.save("another note")
    operation = op()
    first = tenant.client.patch(
        f"/v1/memories/{note['id']}", {"content": "first fix", "operationId": operation}
    )
    assert first.status_code == 200, first.text
    for path, body in [
        (f"/v1/memories/{note['id']}", {"content": "second fix", "operationId": operation}),
        (
            f"/v1/memories/{note['id']}",
            {"content": "first fix", "kind": "decision", "operationId": operation},
        ),
        (f"/v1/memories/{other['id']}", {"content": "first fix", "operationId": operation}),
    ]:
        response = tenant.client.patch(path, body)
        assert response.status_code == 409, response.text
        assert error_of(response)["code"] == "idempotency_conflict"
    assert [r["version"] for r in revisions(tenant.client, note["id"])] == [1, 2]
    assert data_of(tenant.client.get(f"/v1/memories/{other['id']}"))["version"] == 1


def test_failed_patch_leaves_no_record_so_the_operation_id_can_be_retried(
    tenant: Tenant,
) -> None:
    note = tenant.client.save("start")
    tenant.client.patch(f"/v1/memories/{note['id']}", {"content": "moved on"})
    operation = op()
    stale = tenant.client.patch(
        f"/v1/memories/{note['id']}",
        {"content": "my fix", "expectedVersion": 1, "operationId": operation},
    )
    assert stale.status_code == 409, stale.text
    assert error_of(stale)["code"] == "version_conflict"

    retried = tenant.client.patch(
        f"/v1/memories/{note['id']}",
        {"content": "my fix", "expectedVersion": 2, "operationId": operation},
    )
    assert retried.status_code == 200, retried.text
    assert data_of(retried)["version"] == 3
    assert data_of(retried)["content"] == "my fix"
    history = revisions(tenant.client, note["id"])
    assert [r["version"] for r in history] == [1, 2, 3]
    assert history[-1]["operationId"] == operation


def test_failed_save_leaves_no_record_so_the_operation_id_can_be_retried(
    tenant: Tenant,
) -> None:
    operation = op()
    missing_notebook = tenant.client.post(
        "/v1/memories",
        {"content": "filed", "kind": "fact", "projectId": str(uuid4()), "operationId": operation},
    )
    assert missing_notebook.status_code == 404, missing_notebook.text
    notebook = tenant.notebook("real")
    retried = tenant.client.post(
        "/v1/memories",
        {"content": "filed", "kind": "fact", "projectId": notebook, "operationId": operation},
    )
    assert retried.status_code == 201, retried.text
    assert data_of(retried)["projectId"] == notebook
    assert note_ids(tenant.client) == [data_of(retried)["id"]]


# --- forget and notebooks --------------------------------------------------------------


def test_replayed_forget_returns_the_original_outcomes(tenant: Tenant) -> None:
    keep = tenant.client.save("keep me")
    drop = tenant.client.save("drop me")
    operation = op()
    body = {"ids": [drop["id"]], "operationId": operation}
    first = tenant.client.post("/v1/memories/forget", body)
    assert first.status_code == 200, first.text
    assert data_of(first)["results"] == [{"id": drop["id"], "outcome": "deleted"}]

    replay = tenant.client.post("/v1/memories/forget", body)
    assert replay.status_code == 200, replay.text
    assert data_of(replay) == data_of(first)

    conflict = tenant.client.post(
        "/v1/memories/forget", {"ids": [keep["id"]], "operationId": operation}
    )
    assert conflict.status_code == 409, conflict.text
    assert error_of(conflict)["code"] == "idempotency_conflict"
    assert note_ids(tenant.client) == [keep["id"]]


def test_replayed_notebook_creation_returns_the_same_notebook(tenant: Tenant) -> None:
    operation = op()
    first = tenant.client.post("/v1/notebooks", {"name": "projects", "operationId": operation})
    assert first.status_code == 201, first.text
    replay = tenant.client.post(
        "/v1/notebooks", {"name": "projects"}, headers={"Idempotency-Key": operation}
    )
    assert replay.status_code == 200, replay.text
    assert data_of(replay) == data_of(first)
    conflict = tenant.client.post("/v1/notebooks", {"name": "other", "operationId": operation})
    assert conflict.status_code == 409, conflict.text
    assert error_of(conflict)["code"] == "idempotency_conflict"
    books = data_of(tenant.client.get("/v1/notebooks"))["items"]
    assert [b["id"] for b in books] == [data_of(first)["id"]]


def test_operation_ids_are_bound_to_the_credential(tenant: Tenant) -> None:
    operation = op()
    body = {"content": "mine", "kind": "fact", "operationId": operation}
    assert tenant.client.post("/v1/memories", body).status_code == 201
    other_key = tenant.key("second", personal=True, all_notebooks=True)
    try:
        response = other_key.post("/v1/memories", body)
        assert response.status_code == 409, response.text
        assert error_of(response)["code"] == "idempotency_conflict"
    finally:
        other_key.session.close()


# --- concurrency -------------------------------------------------------------------------


def test_concurrent_saves_with_one_operation_id_create_exactly_one_note(tenant: Tenant) -> None:
    client = tenant.client
    created: list[str] = []
    for attempt in range(5):
        body = {"content": f"raced save {attempt}", "kind": "fact", "operationId": op()}

        def save(session: requests.Session, body: dict[str, Any] = body) -> requests.Response:
            return session.post(
                client.base + "/v1/memories", json=body, headers=client.headers(), timeout=30
            )

        responses = race([save, save])
        assert sorted(r.status_code for r in responses) == [200, 201], [r.text for r in responses]
        ids = {data_of(r)["id"] for r in responses}
        assert len(ids) == 1
        versions = {data_of(r)["version"] for r in responses}
        assert versions == {1}
        created.append(ids.pop())
        assert [r["version"] for r in revisions(client, created[-1])] == [1]
    assert sorted(note_ids(client)) == sorted(created)


def test_concurrent_header_keyed_saves_create_exactly_one_note(tenant: Tenant) -> None:
    client = tenant.client
    key = op()
    body = {"content": "raced by header", "kind": "preference"}

    def save(session: requests.Session) -> requests.Response:
        return session.post(
            client.base + "/v1/memories",
            json=body,
            headers=client.headers({"Idempotency-Key": key}),
            timeout=30,
        )

    responses = race([save, save, save])
    assert sorted(r.status_code for r in responses) == [200, 200, 201], [r.text for r in responses]
    assert len({data_of(r)["id"] for r in responses}) == 1
    assert len(note_ids(client)) == 1
