"""Each /v1 route does its job: list, pagination, search, export, notebooks, revisions.

These are the app's own answers, so they run on ``create_app`` in this process: here
``make_tenant`` (and so ``tenant``) makes accounts on the in-process app.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable

import pytest

from tests.support.tenants import Tenant


@pytest.fixture
def make_tenant(make_inprocess_tenant: Callable[[], Tenant]) -> Callable[[], Tenant]:
    """Accounts on the app in this process: these tests need no server."""
    return make_inprocess_tenant


def test_list_pages_through_every_note_once_with_a_cursor(tenant: Tenant) -> None:
    saved = [tenant.client.save(f"note number {i}")["id"] for i in range(7)]
    seen: list[str] = []
    cursor = None
    while True:
        query = "/v1/memories?limit=3" + (f"&cursor={cursor}" if cursor else "")
        page = tenant.client.get(query).json()["data"]
        seen += [item["id"] for item in page["items"]]
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert seen == list(reversed(saved))


def test_notes_created_after_the_first_page_do_not_join_the_listing(tenant: Tenant) -> None:
    for i in range(3):
        tenant.client.save(f"early {i}")
    first = tenant.client.get("/v1/memories?limit=2&sort=updated_asc").json()["data"]
    tenant.client.save("late arrival")
    second = tenant.client.get(
        f"/v1/memories?limit=2&sort=updated_asc&cursor={first['nextCursor']}"
    )
    contents = [item["content"] for item in second.json()["data"]["items"]]
    assert contents == ["early 2"]


def test_tampered_or_foreign_cursor_is_invalid(make_tenant) -> None:  # type: ignore[no-untyped-def]
    owner, other = make_tenant(), make_tenant()
    for i in range(3):
        owner.client.save(f"n{i}")
    cursor = owner.client.get("/v1/memories?limit=1").json()["data"]["nextCursor"]
    body, _, signature = cursor.partition(".")
    tampered = body[:-2] + ("AA" if body[-2:] != "AA" else "BB") + "." + signature
    for bad, client in [
        (tampered, owner.client),
        ("garbage", owner.client),
        (cursor, other.client),  # another account
        (cursor, owner.key("second key")),  # another connection
    ]:
        response = client.get(f"/v1/memories?limit=1&cursor={bad}")
        assert response.status_code == 400, bad
        assert response.json()["error"]["code"] == "invalid_cursor"
    with_other_filter = owner.client.get(f"/v1/memories?limit=1&kind=fact&cursor={cursor}")
    assert with_other_filter.json()["error"]["code"] == "invalid_cursor"


def test_list_filters(tenant: Tenant) -> None:
    notebook = tenant.notebook("work")
    tenant.client.save("pref", "preference", provenance={"sourceAgent": "claude"})
    tenant.client.save("in notebook", projectId=notebook)
    tenant.client.save("temporary", retentionDays=5)

    def contents(query: str) -> set[str]:
        response = tenant.client.get("/v1/memories?" + query)
        assert response.status_code == 200, response.text
        return {item["content"] for item in response.json()["data"]["items"]}

    assert contents("kind=preference") == {"pref"}
    assert contents("sourceAgent=claude") == {"pref"}
    assert contents(f"projectId={notebook}") == {"in notebook"}
    assert contents("projectId=personal") == {"pref", "temporary"}
    assert contents("lifetime=ephemeral") == {"temporary"}
    assert contents("lifetime=permanent") == {"pref", "in notebook"}
    assert contents("updatedAfter=2999-01-01T00:00:00Z") == set()
    assert contents("sort=created_desc&limit=1") == {"temporary"}
    assert tenant.client.get("/v1/memories?sort=sideways").status_code == 400


def test_search_ranks_matches_and_excludes_non_matches(tenant: Tenant) -> None:
    strong = tenant.client.save("Postgres vacuum tuning: postgres autovacuum thresholds")
    weak = tenant.client.save("We once discussed postgres briefly and moved on to lunch plans")
    tenant.client.save("Completely unrelated gardening note")
    response = tenant.client.post("/v1/memories/search", {"query": "postgres"})
    ids = [item["memory"]["id"] for item in response.json()["data"]["items"]]
    assert ids == [strong["id"], weak["id"]]


def test_search_with_only_stop_words_falls_back_to_substring(tenant: Tenant) -> None:
    note = tenant.client.save("to be or not to be, that is the question")
    tenant.client.save("something else entirely")
    response = tenant.client.post("/v1/memories/search", {"query": "to be"})
    ids = [item["memory"]["id"] for item in response.json()["data"]["items"]]
    assert ids == [note["id"]]


def test_search_can_be_limited_to_a_notebook_and_a_kind(tenant: Tenant) -> None:
    notebook = tenant.notebook()
    inside = tenant.client.save("deploy checklist", "solution", projectId=notebook)
    tenant.client.save("deploy checklist", "solution")
    tenant.client.save("deploy checklist", "fact", projectId=notebook)
    response = tenant.client.post(
        "/v1/memories/search", {"query": "deploy", "projectId": notebook, "kind": "solution"}
    )
    assert [item["memory"]["id"] for item in response.json()["data"]["items"]] == [inside["id"]]


def test_revisions_keep_every_saved_state(tenant: Tenant) -> None:
    note = tenant.client.save("first")
    for text in ("second", "third"):
        assert (
            tenant.client.patch(f"/v1/memories/{note['id']}", {"content": text}).status_code == 200
        )
    page = tenant.client.get(f"/v1/memories/{note['id']}/revisions").json()["data"]
    assert [(r["version"], r["content"]) for r in page["items"]] == [
        (1, "first"),
        (2, "second"),
        (3, "third"),
    ]
    first_page = tenant.client.get(f"/v1/memories/{note['id']}/revisions?limit=2").json()["data"]
    assert first_page["nextAfterVersion"] == 2
    rest = tenant.client.get(f"/v1/memories/{note['id']}/revisions?afterVersion=2").json()["data"]
    assert [r["content"] for r in rest["items"]] == ["third"]


def test_export_streams_one_line_per_note_with_its_revisions(tenant: Tenant) -> None:
    notebook = tenant.notebook("kept in export")
    note = tenant.client.save("exported")
    tenant.client.patch(f"/v1/memories/{note['id']}", {"content": "exported again"})
    gone = tenant.client.save("forgotten")
    tenant.client.post("/v1/memories/forget", {"ids": [gone["id"]]})
    response = tenant.client.get("/v1/export", stream=True)
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in response.iter_lines() if line]
    assert [line["type"] for line in lines] == ["export", "notebook", "memory"]
    assert lines[0]["version"] == 1
    assert lines[1]["notebook"]["id"] == notebook
    assert lines[2]["memory"]["content"] == "exported again"
    assert [(r["version"], r["content"]) for r in lines[2]["revisions"]] == [
        (1, "exported"),
        (2, "exported again"),
    ]
    assert all(line["type"] != "connection" for line in lines)  # keys see no connections


def test_notebooks_are_created_nested_and_listed(tenant: Tenant) -> None:
    parent = tenant.notebook("parent")
    child = tenant.notebook("child", parent=parent)
    all_books = tenant.client.get("/v1/notebooks").json()["data"]["items"]
    assert {(b["name"], b["parentId"]) for b in all_books} == {("parent", None), ("child", parent)}
    children = tenant.client.get(f"/v1/notebooks?parentId={parent}").json()["data"]["items"]
    assert [b["id"] for b in children] == [child]
    roots = tenant.client.get("/v1/notebooks?root=true").json()["data"]["items"]
    assert [b["id"] for b in roots] == [parent]
    assert tenant.client.post("/v1/notebooks", {"name": ""}).status_code == 400
    assert tenant.client.post("/v1/notebooks", {"name": "n" * 201}).status_code == 400


def test_only_an_all_notebooks_key_creates_notebooks(tenant: Tenant) -> None:
    personal_only = tenant.key("personal", personal=True)
    response = personal_only.post("/v1/notebooks", {"name": "mine"})
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "forbidden"


def test_update_timestamps_move_and_created_at_stays(tenant: Tenant) -> None:
    note = tenant.client.save("v1")
    time.sleep(0.01)
    updated = tenant.client.patch(f"/v1/memories/{note['id']}", {"content": "v2"}).json()["data"]
    assert updated["createdAt"] == note["createdAt"]
    assert updated["updatedAt"] > note["updatedAt"]
    assert updated["createdAt"].endswith("Z")


def test_notebooks_page_with_a_cursor(tenant: Tenant) -> None:
    made = sorted(tenant.notebook(f"book {i:02}") for i in range(5))
    seen: list[str] = []
    cursor = ""
    while True:
        page = tenant.client.get(f"/v1/notebooks?limit=2{cursor}").json()["data"]
        seen += [b["id"] for b in page["items"]]
        if page["nextCursor"] is None:
            break
        cursor = f"&cursor={page['nextCursor']}"
    assert sorted(seen) == made and len(seen) == 5
    foreign = tenant.key("other key").get(f"/v1/notebooks?limit=2&cursor={cursor[8:]}")
    assert foreign.status_code == 400


def test_a_hidden_parent_stays_hidden(tenant: Tenant) -> None:
    parent = tenant.notebook("secret parent")
    child = tenant.notebook("shared child", parent=parent)
    only_child = tenant.key("child only", personal=False, notebook_ids=[uuid.UUID(child)])
    listed = only_child.get("/v1/notebooks").json()["data"]["items"]
    assert [(b["id"], b["parentId"]) for b in listed] == [(child, None)]
    roots = only_child.get("/v1/notebooks?root=true").json()["data"]["items"]
    assert [b["id"] for b in roots] == [child]
    assert only_child.get(f"/v1/notebooks?parentId={parent}").status_code == 404
