"""The near-duplicate warning on save: ``remember`` answers ``similar``, the notes in the
same scope that say much the same (lexically: the new note's vector comes later), so an
agent can update one instead of saving a copy. In-process api, real PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import psycopg
import requests

from grove_contracts.notes import MAX_SIMILAR
from grove_memory.notes import duplicates
from tests.support.clients import Client, data_of
from tests.support.tenants import Tenant

DEPLOY = "We deploy the billing service with Argo CD every Tuesday morning."
AGAIN = "Every Tuesday morning we deploy the billing service using Argo CD."
FRIDAY = "We deploy the search service with Jenkins every Friday at 5pm."
PLANT = "The office plant needs water on Fridays."


def saved(client: Client, content: str, **fields: Any) -> dict[str, Any]:
    response = client.post("/v1/memories", {"content": content, "kind": "fact", **fields})
    assert response.status_code == 201, response.text
    return data_of(response)  # type: ignore[no-any-return]


def test_a_save_names_the_near_duplicates_in_its_scope(inprocess_tenant: Tenant) -> None:
    client = inprocess_tenant.client
    first = saved(client, DEPLOY)
    assert first["similar"] == []
    saved(client, FRIDAY)  # the same template, another fact
    saved(client, PLANT)
    second = saved(client, AGAIN)
    assert duplicates.lexical_similarity(AGAIN, DEPLOY) >= duplicates.SAVE_LEXICAL_THRESHOLD
    assert duplicates.lexical_similarity(AGAIN, FRIDAY) < duplicates.SAVE_LEXICAL_THRESHOLD
    expected = round(duplicates.lexical_similarity(AGAIN, DEPLOY), 3)
    assert second["similar"] == [{"id": first["id"], "version": 1, "similarity": expected}]
    # The plain note resource does not carry it.
    assert "similar" not in data_of(client.get(f"/v1/memories/{second['id']}"))


def test_only_the_same_scope_live_notes_and_at_most_three_most_similar_first(
    make_inprocess_tenant: Callable[[], Tenant],
) -> None:
    tenant = make_inprocess_tenant()
    client = tenant.client
    ops = tenant.notebook("ops")
    saved(client, DEPLOY, projectId=ops)  # another notebook
    archived = saved(client, DEPLOY)
    client.post("/v1/tools/archive_memories", {"ids": [archived["id"]]})
    copies = [saved(client, DEPLOY + suffix) for suffix in ("", " Ask Priya.", " Ask Sam first.")]
    copies.append(saved(client, DEPLOY + " Ask Priya, then Sam, then the on-call lead."))
    other = make_inprocess_tenant()
    saved(other.client, DEPLOY)  # another account
    answer = saved(client, DEPLOY)
    similar = answer["similar"]
    assert len(similar) == MAX_SIMILAR
    assert [s["similarity"] for s in similar] == sorted(
        (s["similarity"] for s in similar), reverse=True
    )
    assert similar[0] == {"id": copies[0]["id"], "version": 1, "similarity": 1.0}
    assert {s["id"] for s in similar} <= {c["id"] for c in copies}
    in_ops = saved(client, AGAIN, projectId=ops)
    assert len(in_ops["similar"]) == 1


def test_a_replayed_save_answers_the_same_similar_notes(inprocess_tenant: Tenant) -> None:
    client = inprocess_tenant.client
    first = saved(client, DEPLOY)
    body = {"content": AGAIN, "kind": "fact", "operationId": str(uuid.uuid4())}
    answer = client.post("/v1/memories", body)
    saved(client, DEPLOY + " Another copy.")  # would be named by a new save
    replay: requests.Response = client.post("/v1/memories", body)
    assert replay.status_code == 200
    assert data_of(replay) == data_of(answer)
    assert [s["id"] for s in data_of(replay)["similar"]] == [first["id"]]


def test_the_tool_answers_similar_and_batch_items_do_not(inprocess_tenant: Tenant) -> None:
    client = inprocess_tenant.client
    first = saved(client, DEPLOY)
    tool = client.post("/v1/tools/remember", {"content": AGAIN, "kind": "fact"})
    assert tool.status_code == 200, tool.text
    assert [s["id"] for s in data_of(tool)["similar"]] == [first["id"]]
    batch = client.post("/v1/memories/batch", {"items": [{"content": AGAIN, "kind": "fact"}]})
    (item,) = data_of(batch)["items"]
    assert item["status"] == "created" and "similar" not in item["memory"]


def test_a_key_limited_to_a_notebook_is_told_only_of_notes_it_may_see(
    inprocess_tenant: Tenant,
) -> None:
    tenant = inprocess_tenant
    ops = tenant.notebook("ops")
    in_ops = saved(tenant.client, DEPLOY, projectId=ops)
    saved(tenant.client, DEPLOY)  # personal: not granted to the key below
    limited = tenant.key("ops only", personal=False, notebook_ids=[uuid.UUID(ops)])
    answer = saved(limited, AGAIN, projectId=ops)
    assert [s["id"] for s in answer["similar"]] == [in_ops["id"]]


def test_a_notes_bands_follow_its_content_notebook_and_deletion(inprocess_tenant: Tenant) -> None:
    """The candidates' index (``note_bands``, migrations 0035 and 0037) is kept by the
    trigger on memories: the bands of the current content hashed with the current scope,
    none once forgotten."""
    tenant = inprocess_tenant
    client = tenant.client
    note = saved(client, DEPLOY)
    twin = saved(client, DEPLOY)  # the same bands: an edit of the note leaves the twin's

    def bands(of_note: dict[str, Any] = note) -> tuple[list[int], set[Any]]:
        with psycopg.connect(tenant.database.grove_superuser_url) as conn:
            rows = conn.execute(
                "SELECT band, project_id FROM note_bands WHERE memory_id = %s ORDER BY band",
                (of_note["id"],),
            ).fetchall()
        return [band for band, _ in rows], {project for _, project in rows}

    def of(content: str, notebook: Any = None) -> list[int]:
        with psycopg.connect(tenant.database.grove_superuser_url) as conn:
            row = conn.execute(
                "SELECT grove_note_bands(%s, %s, tsvector_to_array(to_tsvector('english', %s)))",
                (tenant.account_id, notebook, content),
            ).fetchone()
        assert row is not None
        return sorted(row[0])

    assert bands() == (of(DEPLOY), {None}) and len(of(DEPLOY)) == 21  # 7 words, each pair

    def written() -> set[str]:  # the transactions that wrote the note's bands
        with psycopg.connect(tenant.database.grove_superuser_url) as conn:
            rows = conn.execute(
                "SELECT xmin::text FROM note_bands WHERE memory_id = %s", (note["id"],)
            ).fetchall()
        return {xmin for (xmin,) in rows}

    before = written()
    kind_only = client.patch(f"/v1/memories/{note['id']}", {"kind": "preference"})
    assert kind_only.status_code == 200, kind_only.text
    assert written() == before  # same content and scope: the bands are not rewritten
    edited = client.patch(f"/v1/memories/{note['id']}", {"content": PLANT})
    assert edited.status_code == 200, edited.text
    assert bands() == (of(PLANT), {None}) and of(PLANT) != of(DEPLOY)
    ops = tenant.notebook("ops")
    moved = client.patch(f"/v1/memories/{note['id']}", {"projectId": ops})
    assert moved.status_code == 200, moved.text
    assert bands() == (of(PLANT, ops), {uuid.UUID(ops)}) and of(PLANT, ops) != of(PLANT)
    assert [s["id"] for s in saved(client, PLANT, projectId=ops)["similar"]] == [note["id"]]
    assert saved(client, PLANT)["similar"] == []  # personal: no longer its scope
    forgotten = client.post("/v1/memories/forget", {"ids": [note["id"]]})
    assert forgotten.status_code == 200, forgotten.text
    assert bands() == ([], set())
    assert bands(twin) == (of(DEPLOY), {None})
