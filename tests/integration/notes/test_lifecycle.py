"""A note's life: corrections and their revisions, version races, handoffs, retention and
expiry, recall's budget and scope, and forgetting.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from uuid import uuid4

import psycopg
import pytest
import requests

from grove_db import embedded
from tests.support.clients import Client, data_of, error_of, race
from tests.support.tenants import Tenant

DAY = timedelta(days=1)
#: Slack between the database's statement time and the note's created/updated time.
CLOCK_SLACK = timedelta(seconds=5)


def at(timestamp: str) -> datetime:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00"))


def patch(client: Client, note_id: str, body: dict[str, Any], status: int = 200) -> Any:
    response = client.patch(f"/v1/memories/{note_id}", body)
    assert response.status_code == status, response.text
    return response.json()["data"] if status < 300 else error_of(response)


def get(client: Client, note_id: str) -> dict[str, Any]:
    response = client.get(f"/v1/memories/{note_id}")
    assert response.status_code == 200, response.text
    return data_of(response)  # type: ignore[no-any-return]


def listed(client: Client, query: str = "") -> list[str]:
    response = client.get(f"/v1/memories?limit=100{query}")
    assert response.status_code == 200, response.text
    return [item["id"] for item in data_of(response)["items"]]


def searched(client: Client, query: str) -> list[str]:
    response = client.post("/v1/memories/search", {"query": query})
    assert response.status_code == 200, response.text
    return [item["memory"]["id"] for item in data_of(response)["items"]]


def recall(client: Client, **body: Any) -> dict[str, Any]:
    response = client.post("/v1/recall", body)
    assert response.status_code == 200, response.text
    return data_of(response)  # type: ignore[no-any-return]


def recalled(client: Client, **body: Any) -> list[str]:
    return [item["memory"]["id"] for item in recall(client, **body)["items"]]


def exported(client: Client) -> list[dict[str, Any]]:
    response = client.get("/v1/export")
    assert response.status_code == 200, response.text
    return [json.loads(line) for line in response.text.splitlines() if line]


def revisions(client: Client, note_id: str) -> list[dict[str, Any]]:
    response = client.get(f"/v1/memories/{note_id}/revisions")
    assert response.status_code == 200, response.text
    return data_of(response)["items"]  # type: ignore[no-any-return]


def expire(database: embedded.EmbeddedDatabase, note_id: str) -> None:
    """Move a note's expiry into the past, as the superuser (which bypasses RLS)."""
    url = database.grove_superuser_url
    with psycopg.connect(url, autocommit=True) as conn:
        updated = conn.execute(
            "UPDATE memories SET expires_at = now() - interval '1 second' WHERE id = %s",
            (note_id,),
        ).rowcount
    assert updated == 1


# --- corrections and revisions ----------------------------------------------------------


def test_patch_keeps_every_omitted_field_and_replaces_the_supplied_content(
    tenant: Tenant,
) -> None:
    notebook = tenant.notebook("ops")
    note = tenant.client.save(
        "the original body",
        "solution",
        projectId=notebook,
        taskId="task-7",
        capture="automatic",
        provenance={"sourceAgent": "agent-a", "sourceRef": "ref-1"},
        retentionDays=10,
    )
    corrected = patch(tenant.client, note["id"], {"content": "  a wholly new body \n"})
    assert corrected["content"] == "a wholly new body"
    assert corrected["version"] == 2
    unchanged = (
        "id",
        "kind",
        "projectId",
        "taskId",
        "capture",
        "provenance",
        "retentionDays",
        "expiresAt",
        "createdAt",
    )
    assert {k: corrected[k] for k in unchanged} == {k: note[k] for k in unchanged}

    rekinded = patch(tenant.client, note["id"], {"kind": "decision"})
    assert rekinded["content"] == "a wholly new body"
    assert rekinded["kind"] == "decision"
    assert rekinded["version"] == 3
    assert {k: rekinded[k] for k in unchanged if k != "kind"} == {
        k: note[k] for k in unchanged if k != "kind"
    }
    assert get(tenant.client, note["id"]) == rekinded


def test_patch_can_clear_optional_fields_with_null(tenant: Tenant) -> None:
    notebook = tenant.notebook("filed")
    note = tenant.client.save(
        "filed note", "fact", projectId=notebook, taskId="t", provenance={"sourceAgent": "a"}
    )
    cleared = patch(
        tenant.client, note["id"], {"projectId": None, "taskId": None, "provenance": None}
    )
    assert cleared["projectId"] is None
    assert cleared["taskId"] is None
    assert cleared["provenance"] == {"sourceAgent": None, "sourceRef": None}
    assert cleared["content"] == "filed note"


@pytest.mark.parametrize("field", ["content", "kind", "capture"])
def test_patch_with_null_for_a_required_field_is_rejected(tenant: Tenant, field: str) -> None:
    note = tenant.client.save("keep me whole")
    error = patch(tenant.client, note["id"], {field: None}, status=400)
    assert error["code"] == "validation_error"
    assert get(tenant.client, note["id"]) == note


def test_patch_with_blank_content_is_rejected(tenant: Tenant) -> None:
    note = tenant.client.save("not blank")
    assert patch(tenant.client, note["id"], {"content": "   "}, status=400)["code"] == (
        "validation_error"
    )
    assert get(tenant.client, note["id"])["version"] == 1


def test_every_save_adds_one_immutable_revision_holding_the_old_contents(
    tenant: Tenant,
) -> None:
    note = tenant.client.save("one", "fact", retentionDays=3)
    two = patch(tenant.client, note["id"], {"content": "two"})
    three = patch(tenant.client, note["id"], {"kind": "decision", "retentionDays": None})
    history = revisions(tenant.client, note["id"])
    assert [(r["version"], r["content"], r["kind"]) for r in history] == [
        (1, "one", "fact"),
        (2, "two", "fact"),
        (3, "two", "decision"),
    ]
    assert [r["retentionDays"] for r in history] == [3, 3, None]
    assert [r["expiresAt"] for r in history] == [note["expiresAt"], two["expiresAt"], None]
    assert three["version"] == 3
    # Reading the revisions again shows the same, unchanged states.
    assert revisions(tenant.client, note["id"]) == history


@pytest.mark.parametrize("via", ["rest", "tool"])
def test_a_remember_correction_by_id_replaces_the_metadata_it_omits(
    tenant: Tenant, via: str
) -> None:
    notebook = tenant.notebook("work")
    note = tenant.client.save(
        "deploys wait for two reviews",
        "handoff",
        projectId=notebook,
        taskId="release-12",
        capture="automatic",
        provenance={"sourceAgent": "agent-1", "sourceRef": "PR-7"},
        retentionDays=5,
    )
    body = {"id": note["id"], "content": "deploys wait for one review", "kind": "decision"}
    path = "/v1/memories" if via == "rest" else "/v1/tools/remember"
    response = tenant.client.post(path, body)
    assert response.status_code == 200, response.text
    corrected = data_of(response)
    assert (corrected["id"], corrected["version"]) == (note["id"], 2)
    # Wholesale: what the body leaves out takes its default, not the note's old value.
    assert corrected["content"] == "deploys wait for one review"
    assert corrected["kind"] == "decision"
    assert corrected["projectId"] is None  # moved to personal notes
    assert corrected["taskId"] is None
    assert corrected["capture"] == "explicit"
    assert corrected["provenance"] == {"sourceAgent": None, "sourceRef": None}
    # ... but the lifetime, which an omitted retentionDays keeps, exactly.
    assert (corrected["retentionDays"], corrected["expiresAt"]) == (5, note["expiresAt"])
    stored = get(tenant.client, note["id"])
    assert {k: stored[k] for k in stored} == {k: corrected[k] for k in stored}
    latest = revisions(tenant.client, note["id"])[-1]
    assert (latest["projectId"], latest["taskId"], latest["capture"]) == (None, None, "explicit")


def test_failed_patch_adds_no_revision(tenant: Tenant) -> None:
    note = tenant.client.save("steady")
    patch(tenant.client, note["id"], {"content": "stale", "expectedVersion": 2}, status=409)
    patch(tenant.client, note["id"], {"kind": "handoff"}, status=400)
    assert [r["version"] for r in revisions(tenant.client, note["id"])] == [1]
    assert get(tenant.client, note["id"]) == note


def test_patch_of_an_unknown_note_is_404(tenant: Tenant) -> None:
    assert patch(tenant.client, str(uuid4()), {"content": "x"}, status=404)["code"] == "not_found"


# --- version race ------------------------------------------------------------------------


def correct(
    client: Client, note_id: str, content: str
) -> Callable[[requests.Session], requests.Response]:
    """A PATCH of ``note_id`` at version 1, to run on a session of its own."""

    def call(session: requests.Session) -> requests.Response:
        return session.patch(
            f"{client.base}/v1/memories/{note_id}",
            json={"content": content, "expectedVersion": 1},
            headers=client.headers(),
            timeout=30,
        )

    return call


def test_concurrent_patches_at_the_same_version_let_exactly_one_win(tenant: Tenant) -> None:
    client = tenant.client
    for attempt in range(5):
        note = client.save(f"race {attempt} start")

        responses = race(
            [
                correct(client, note["id"], f"race {attempt} left"),
                correct(client, note["id"], f"race {attempt} right"),
            ]
        )
        statuses = sorted(r.status_code for r in responses)
        assert statuses == [200, 409], [r.text for r in responses]
        winner = next(r for r in responses if r.status_code == 200)
        loser = next(r for r in responses if r.status_code == 409)
        assert error_of(loser)["code"] == "version_conflict"
        assert data_of(winner)["version"] == 2

        final = get(client, note["id"])
        assert final["version"] == 2
        assert final["content"] == data_of(winner)["content"]
        history = revisions(client, note["id"])
        assert [(r["version"], r["content"]) for r in history] == [
            (1, f"race {attempt} start"),
            (2, final["content"]),
        ]


def test_concurrent_handoff_saves_for_one_task_make_one_note(tenant: Tenant) -> None:
    client = tenant.client

    def save(content: str) -> Callable[[requests.Session], requests.Response]:
        def call(session: requests.Session) -> requests.Response:
            return session.post(
                f"{client.base}/v1/memories",
                json={"content": content, "kind": "handoff", "taskId": "raced-task"},
                headers=client.headers(),
                timeout=30,
            )

        return call

    responses = race([save("left"), save("right")])
    assert sorted(r.status_code for r in responses) == [200, 201], [r.text for r in responses]
    assert len({data_of(r)["id"] for r in responses}) == 1
    assert sorted(data_of(r)["version"] for r in responses) == [1, 2]
    assert len(listed(client, "&kind=handoff")) == 1


# --- handoffs ----------------------------------------------------------------------------


def test_handoff_requires_a_task_id(tenant: Tenant) -> None:
    response = tenant.client.post("/v1/memories", {"content": "where I stopped", "kind": "handoff"})
    assert response.status_code == 400, response.text
    error = error_of(response)
    assert error["code"] == "validation_error"
    assert any(d["field"] == "taskId" for d in error["details"])
    assert listed(tenant.client) == []


def test_patching_a_note_into_a_handoff_without_a_task_id_is_rejected(tenant: Tenant) -> None:
    note = tenant.client.save("plain fact")
    assert patch(tenant.client, note["id"], {"kind": "handoff"}, status=400)["code"] == (
        "validation_error"
    )
    handoff = tenant.client.save("handoff", "handoff", taskId="t-1")
    assert patch(tenant.client, handoff["id"], {"taskId": None}, status=400)["code"] == (
        "validation_error"
    )


def test_saving_a_handoff_for_a_known_task_updates_that_note(tenant: Tenant) -> None:
    first = tenant.client.save(
        "migrated invoices",
        "handoff",
        taskId="billing-42",
        provenance={"sourceAgent": "agent-a"},
    )
    response = tenant.client.post(
        "/v1/memories",
        {"content": "  refunds next  ", "kind": "handoff", "taskId": "billing-42"},
    )
    assert response.status_code == 200, response.text
    second = data_of(response)
    assert second["id"] == first["id"]
    assert second["version"] == first["version"] + 1 == 2
    assert second["content"] == "refunds next"
    assert get(tenant.client, first["id"])["content"] == "refunds next"
    assert listed(tenant.client) == [first["id"]]
    assert [(r["version"], r["content"]) for r in revisions(tenant.client, first["id"])] == [
        (1, "migrated invoices"),
        (2, "refunds next"),
    ]


def test_handoffs_for_one_task_are_separate_per_scope(tenant: Tenant) -> None:
    one, two = tenant.notebook("one"), tenant.notebook("two")
    personal = tenant.client.save("personal", "handoff", taskId="shared-task")
    in_one = tenant.client.save("in one", "handoff", taskId="shared-task", projectId=one)
    in_two = tenant.client.save("in two", "handoff", taskId="shared-task", projectId=two)
    assert len({personal["id"], in_one["id"], in_two["id"]}) == 3

    response = tenant.client.post(
        "/v1/memories",
        {"content": "in one, again", "kind": "handoff", "taskId": "shared-task", "projectId": one},
    )
    assert response.status_code == 200, response.text
    assert data_of(response)["id"] == in_one["id"]
    assert get(tenant.client, personal["id"]) == personal
    assert get(tenant.client, in_two["id"]) == in_two
    assert get(tenant.client, in_one["id"])["content"] == "in one, again"


def test_a_forgotten_handoff_is_replaced_by_a_new_note(tenant: Tenant) -> None:
    old = tenant.client.save("old", "handoff", taskId="t-2")
    tenant.client.post("/v1/memories/forget", {"ids": [old["id"]]})
    new = tenant.client.save("new", "handoff", taskId="t-2")
    assert new["id"] != old["id"]
    assert new["version"] == 1


# --- retention and expiry ------------------------------------------------------------------


def test_new_handoffs_live_30_days_and_other_kinds_are_permanent(tenant: Tenant) -> None:
    handoff = tenant.client.save("pick up here", "handoff", taskId="t")
    assert handoff["retentionDays"] == 30
    assert abs(at(handoff["expiresAt"]) - (at(handoff["createdAt"]) + 30 * DAY)) < CLOCK_SLACK
    for kind in ("preference", "fact", "decision", "solution"):
        note = tenant.client.save(f"a {kind}", kind)
        assert note["retentionDays"] is None
        assert note["expiresAt"] is None


@pytest.mark.parametrize("days", [1, 7, 365])
def test_retention_days_sets_expiry_that_many_days_from_now(tenant: Tenant, days: int) -> None:
    note = tenant.client.save("temporary", "fact", retentionDays=days)
    assert note["retentionDays"] == days
    assert abs(at(note["expiresAt"]) - (at(note["createdAt"]) + days * DAY)) < CLOCK_SLACK
    assert get(tenant.client, note["id"])["expiresAt"] == note["expiresAt"]


def test_correction_without_retention_keeps_retention_and_expiry_exactly(tenant: Tenant) -> None:
    note = tenant.client.save("ephemeral", "fact", retentionDays=5)
    corrected = patch(tenant.client, note["id"], {"content": "ephemeral, corrected"})
    assert corrected["retentionDays"] == 5
    assert corrected["expiresAt"] == note["expiresAt"]

    permanent = tenant.client.save("forever", "decision")
    corrected = patch(tenant.client, permanent["id"], {"content": "forever, corrected"})
    assert (corrected["retentionDays"], corrected["expiresAt"]) == (None, None)

    handoff = tenant.client.save("handoff one", "handoff", taskId="keep-life", retentionDays=9)
    updated = tenant.client.post(
        "/v1/memories", {"content": "handoff two", "kind": "handoff", "taskId": "keep-life"}
    )
    assert updated.status_code == 200, updated.text
    assert data_of(updated)["retentionDays"] == 9
    assert data_of(updated)["expiresAt"] == handoff["expiresAt"]


def test_supplying_retention_on_a_correction_restarts_the_lifetime(tenant: Tenant) -> None:
    note = tenant.client.save("renew me", "fact", retentionDays=5)
    renewed = patch(tenant.client, note["id"], {"retentionDays": 5})
    assert renewed["retentionDays"] == 5
    assert at(renewed["expiresAt"]) > at(note["expiresAt"])
    assert abs(at(renewed["expiresAt"]) - (at(renewed["updatedAt"]) + 5 * DAY)) < CLOCK_SLACK

    longer = patch(tenant.client, note["id"], {"retentionDays": 40})
    assert abs(at(longer["expiresAt"]) - (at(longer["updatedAt"]) + 40 * DAY)) < CLOCK_SLACK

    permanent = tenant.client.save("now temporary", "fact")
    limited = patch(tenant.client, permanent["id"], {"retentionDays": 2})
    assert abs(at(limited["expiresAt"]) - (at(limited["updatedAt"]) + 2 * DAY)) < CLOCK_SLACK

    handoff = tenant.client.save("h1", "handoff", taskId="renew")
    updated = tenant.client.post(
        "/v1/memories",
        {"content": "h2", "kind": "handoff", "taskId": "renew", "retentionDays": 30},
    )
    assert updated.status_code == 200, updated.text
    assert at(data_of(updated)["expiresAt"]) > at(handoff["expiresAt"])


def test_supplying_null_retention_makes_a_note_permanent(tenant: Tenant) -> None:
    note = tenant.client.save("was temporary", "fact", retentionDays=5)
    permanent = patch(tenant.client, note["id"], {"retentionDays": None})
    assert (permanent["retentionDays"], permanent["expiresAt"]) == (None, None)
    assert get(tenant.client, note["id"])["expiresAt"] is None

    handoff = tenant.client.save("temp handoff", "handoff", taskId="keep")
    kept = tenant.client.post(
        "/v1/memories",
        {"content": "keep forever", "kind": "handoff", "taskId": "keep", "retentionDays": None},
    )
    assert kept.status_code == 200, kept.text
    assert data_of(kept)["id"] == handoff["id"]
    assert (data_of(kept)["retentionDays"], data_of(kept)["expiresAt"]) == (None, None)


def test_expired_notes_are_hidden_from_get_list_search_recall_and_export(
    tenant: Tenant, database: embedded.EmbeddedDatabase
) -> None:
    doomed = tenant.client.save("quokka sightings are logged daily", "fact", retentionDays=1)
    alive = tenant.client.save("quokka food is stored in the shed", "fact", retentionDays=1)
    handoff = tenant.client.save("quokka census half done", "handoff", taskId="census")
    assert set(searched(tenant.client, "quokka")) == {doomed["id"], alive["id"], handoff["id"]}

    expire(database, doomed["id"])
    expire(database, handoff["id"])

    for note_id in (doomed["id"], handoff["id"]):
        response = tenant.client.get(f"/v1/memories/{note_id}")
        assert response.status_code == 404, response.text
        assert error_of(response)["code"] == "not_found"
    assert listed(tenant.client) == [alive["id"]]
    assert searched(tenant.client, "quokka") == [alive["id"]]
    assert recalled(tenant.client, query="quokka") == [alive["id"]]
    profile = recall(tenant.client, taskId="census")
    assert [item["memory"]["id"] for item in profile["items"]] == [alive["id"]]
    assert profile["handoff"] is None
    lines = exported(tenant.client)
    assert [line["memory"]["id"] for line in lines if line["type"] == "memory"] == [alive["id"]]


def test_list_filters_by_lifetime(tenant: Tenant) -> None:
    permanent = tenant.client.save("permanent", "fact")
    ephemeral = tenant.client.save("ephemeral", "fact", retentionDays=3)
    handoff = tenant.client.save("handoff", "handoff", taskId="t")
    made_permanent = tenant.client.save("made permanent", "fact", retentionDays=3)
    patch(tenant.client, made_permanent["id"], {"retentionDays": None})
    assert set(listed(tenant.client, "&lifetime=permanent")) == {
        permanent["id"],
        made_permanent["id"],
    }
    assert set(listed(tenant.client, "&lifetime=ephemeral")) == {ephemeral["id"], handoff["id"]}
    assert len(listed(tenant.client)) == 4
    assert tenant.client.get("/v1/memories?lifetime=forever").status_code == 400


# --- recall --------------------------------------------------------------------------------


def test_query_free_recall_gives_the_profile_newest_first_and_the_task_handoff(
    tenant: Tenant,
) -> None:
    preference = tenant.client.save("I prefer tabs", "preference")
    fact = tenant.client.save("The API runs on port 8080", "fact")
    decision = tenant.client.save("We chose PostgreSQL", "decision")
    tenant.client.save("Fixed the flaky test by pinning time", "solution")
    handoff = tenant.client.save("Half-way through the migration", "handoff", taskId="mig-1")
    tenant.client.save("Another task's handoff", "handoff", taskId="mig-2")
    patch(tenant.client, preference["id"], {"content": "I prefer spaces"})

    result = recall(tenant.client, taskId="mig-1")
    assert [item["memory"]["id"] for item in result["items"]] == [
        preference["id"],
        decision["id"],
        fact["id"],
    ]
    assert result["items"][0]["memory"]["content"] == "I prefer spaces"
    assert result["handoff"]["id"] == handoff["id"]

    without_task = recall(tenant.client)
    assert [item["memory"]["id"] for item in without_task["items"]] == [
        preference["id"],
        decision["id"],
        fact["id"],
    ]
    assert without_task["handoff"] is None
    assert recall(tenant.client, taskId="no-such-task")["handoff"] is None


def test_recall_handoff_comes_from_the_named_notebook(tenant: Tenant) -> None:
    notebook = tenant.notebook("work")
    personal = tenant.client.save("personal handoff", "handoff", taskId="t")
    filed = tenant.client.save("notebook handoff", "handoff", taskId="t", projectId=notebook)
    assert recall(tenant.client, taskId="t")["handoff"]["id"] == personal["id"]
    assert recall(tenant.client, taskId="t", projectId=notebook)["handoff"]["id"] == filed["id"]


def test_recall_with_a_query_never_reaches_an_unnamed_notebook(tenant: Tenant) -> None:
    named, other = tenant.notebook("named"), tenant.notebook("other")
    personal = tenant.client.save("zebra crossing rules", "fact")
    in_named = tenant.client.save("zebra stripes are unique", "fact", projectId=named)
    in_other = tenant.client.save("zebra herd migration", "fact", projectId=other)

    assert recalled(tenant.client, query="zebra") == [personal["id"]]
    assert set(recalled(tenant.client, query="zebra", projectId=named)) == {
        personal["id"],
        in_named["id"],
    }
    assert recalled(tenant.client, query="zebra", projectId=named, includePersonal=False) == [
        in_named["id"]
    ]
    assert recalled(tenant.client, query="zebra", projectId=other, includePersonal=False) == [
        in_other["id"]
    ]
    # Query-free recall keeps to the same scopes.
    assert recalled(tenant.client) == [personal["id"]]
    assert set(recalled(tenant.client, projectId=named)) == {personal["id"], in_named["id"]}


def test_recall_returns_at_most_limit_items(tenant: Tenant) -> None:
    notes = [tenant.client.save(f"walrus fact number {i}", "fact") for i in range(6)]
    with_query = recall(tenant.client, query="walrus", limit=2)
    assert len(with_query["items"]) == 2
    assert with_query["omitted"] == 4
    profile = recall(tenant.client, limit=3)
    assert [item["memory"]["id"] for item in profile["items"]] == [
        n["id"] for n in reversed(notes[-3:])
    ]
    assert len(recall(tenant.client, query="walrus", limit=20)["items"]) == 6


def test_recall_keeps_content_within_max_chars(tenant: Tenant) -> None:
    for i in range(6):
        tenant.client.save(f"narwhal {i} " + "tusk " * 28, "fact")
    for body in ({"query": "narwhal tusk"}, {}):
        result = recall(tenant.client, maxChars=300, **body)
        contents = [item["memory"]["content"] for item in result["items"]]
        assert 1 <= len(contents) < 6
        assert sum(len(c) for c in contents) <= 300
        assert result["usedChars"] <= 300
        assert result["omitted"] == 6 - len(contents)
        assert not any(item["contentTruncated"] for item in result["items"])


def test_recall_truncates_a_best_note_that_alone_exceeds_the_budget(tenant: Tenant) -> None:
    long = tenant.client.save("okapi " * 200, "fact")
    result = recall(tenant.client, query="okapi", maxChars=200)
    assert [item["memory"]["id"] for item in result["items"]] == [long["id"]]
    item = result["items"][0]
    assert item["contentTruncated"] is True
    assert len(item["memory"]["content"]) <= 200
    assert long["content"].startswith(item["memory"]["content"])
    assert result["usedChars"] <= 200


def test_recall_counts_the_handoff_against_max_chars(tenant: Tenant) -> None:
    tenant.client.save("lemur " + "note " * 30, "fact")
    handoff = tenant.client.save("lemur handoff " + "step " * 30, "handoff", taskId="lemur")
    result = recall(tenant.client, query="lemur", taskId="lemur", maxChars=200)
    assert result["handoff"]["id"] == handoff["id"]
    contents = [result["handoff"]["content"]] + [i["memory"]["content"] for i in result["items"]]
    assert sum(len(c) for c in contents) <= 200
    assert result["items"] == []
    assert result["usedChars"] <= 200


def test_recall_does_not_pad_with_notes_under_the_relevance_floor(tenant: Tenant) -> None:
    match = tenant.client.save("Our kubernetes cluster runs kubernetes 1.29", "fact")
    for text in ("I like green tea", "Standup is at ten", "The office is on floor three"):
        tenant.client.save(text, "preference")
    assert recalled(tenant.client, query="kubernetes") == [match["id"]]

    runbook = tenant.client.save(
        "Kubernetes cluster autoscaling runbook: kubernetes cluster autoscaling scales the"
        " kubernetes cluster; check kubernetes cluster autoscaling logs when kubernetes"
        " cluster autoscaling stalls",
        "solution",
    )
    tenant.client.save("The build cluster lives in the basement next to the printers", "fact")
    result = recall(tenant.client, query="kubernetes cluster autoscaling")
    ids = [item["memory"]["id"] for item in result["items"]]
    # The runbook scores far above the one-word mention of "cluster", which is dropped.
    assert ids[0] == runbook["id"]
    assert set(ids) == {runbook["id"], match["id"]}


# --- forget --------------------------------------------------------------------------------


def test_forget_accepts_at_most_100_ids(tenant: Tenant) -> None:
    note = tenant.client.save("survivor")
    too_many = [str(uuid4()) for _ in range(100)] + [note["id"]]
    response = tenant.client.post("/v1/memories/forget", {"ids": too_many})
    assert response.status_code == 400, response.text
    assert error_of(response)["code"] == "validation_error"
    assert get(tenant.client, note["id"]) == note

    hundred = [str(uuid4()) for _ in range(99)] + [note["id"]]
    response = tenant.client.post("/v1/memories/forget", {"ids": hundred})
    assert response.status_code == 200, response.text
    outcomes = {r["id"]: r["outcome"] for r in data_of(response)["results"]}
    assert len(outcomes) == 100
    assert outcomes.pop(note["id"]) == "deleted"
    assert set(outcomes.values()) == {"not_found"}
    assert tenant.client.post("/v1/memories/forget", {"ids": []}).status_code == 400


def test_forget_reports_an_outcome_for_each_note(tenant: Tenant) -> None:
    plain = tenant.client.save("plain")
    versioned = tenant.client.save("versioned")
    patch(tenant.client, versioned["id"], {"content": "versioned v2"})
    stale = tenant.client.save("stale")
    missing = str(uuid4())
    response = tenant.client.post(
        "/v1/memories/forget",
        {
            "items": [
                {"id": plain["id"]},
                {"id": versioned["id"], "expectedVersion": 2},
                {"id": stale["id"], "expectedVersion": 3},
                {"id": missing},
            ]
        },
    )
    assert response.status_code == 200, response.text
    assert data_of(response)["results"] == [
        {"id": plain["id"], "outcome": "deleted"},
        {"id": versioned["id"], "outcome": "deleted"},
        {"id": stale["id"], "outcome": "version_conflict"},
        {"id": missing, "outcome": "not_found"},
    ]
    assert get(tenant.client, stale["id"]) == stale
    again = tenant.client.post("/v1/memories/forget", {"ids": [plain["id"]]})
    assert data_of(again)["results"] == [{"id": plain["id"], "outcome": "not_found"}]


def test_forget_needs_exactly_one_of_ids_or_items(tenant: Tenant) -> None:
    note = tenant.client.save("x")
    both = tenant.client.post(
        "/v1/memories/forget", {"ids": [note["id"]], "items": [{"id": note["id"]}]}
    )
    assert both.status_code == 400, both.text
    assert tenant.client.post("/v1/memories/forget", {}).status_code == 400
    assert get(tenant.client, note["id"]) == note


def test_forgotten_notes_disappear_from_every_read(tenant: Tenant) -> None:
    gone = tenant.client.save("capybara pool schedule", "fact")
    patch(tenant.client, gone["id"], {"content": "capybara pool schedule, revised"})
    kept = tenant.client.save("capybara diet notes", "fact")
    response = tenant.client.post("/v1/memories/forget", {"ids": [gone["id"]]})
    assert data_of(response)["results"] == [{"id": gone["id"], "outcome": "deleted"}]

    assert tenant.client.get(f"/v1/memories/{gone['id']}").status_code == 404
    assert tenant.client.get(f"/v1/memories/{gone['id']}/revisions").status_code == 404
    assert patch(tenant.client, gone["id"], {"content": "revive"}, status=404)["code"] == (
        "not_found"
    )
    assert listed(tenant.client) == [kept["id"]]
    assert searched(tenant.client, "capybara") == [kept["id"]]
    assert recalled(tenant.client, query="capybara") == [kept["id"]]
    assert recalled(tenant.client) == [kept["id"]]
    lines = exported(tenant.client)
    notes = [line for line in lines if line["type"] == "memory"]
    assert {line["memory"]["id"] for line in notes} == {kept["id"]}
    assert {r["memoryId"] for line in notes for r in line["revisions"]} == {kept["id"]}


# --- known gap, last so that -x runs everything else first ---------------------------


def test_recall_stays_within_max_chars_even_with_an_oversized_handoff(tenant: Tenant) -> None:
    # The task's handoff is packed first and counted, but never cut to fit the budget.
    tenant.client.save("ibis " + "note " * 10, "fact")
    tenant.client.save("ibis handoff " + "step " * 100, "handoff", taskId="ibis")
    result = recall(tenant.client, query="ibis", taskId="ibis", maxChars=200)
    contents = [i["memory"]["content"] for i in result["items"]]
    if result["handoff"] is not None:
        contents.append(result["handoff"]["content"])
    assert sum(len(c) for c in contents) <= 200, result
    assert result["usedChars"] <= 200, result


def test_saving_a_handoff_for_an_expired_task_starts_a_fresh_note(
    tenant: Tenant, database: embedded.EmbeddedDatabase
) -> None:
    old = tenant.client.save("old secret plan", "handoff", taskId="t-exp")
    expire(database, old["id"])
    response = tenant.client.post(
        "/v1/memories", {"content": "new plan", "kind": "handoff", "taskId": "t-exp"}
    )
    assert response.status_code == 201, response.text
    fresh = data_of(response)
    assert fresh["id"] != old["id"] and fresh["version"] == 1
    assert tenant.client.get(f"/v1/memories/{old['id']}/revisions").status_code == 404
    assert "old secret plan" not in json.dumps(exported(tenant.client))
