"""The shortest path a user takes: save a note, then find it again."""

from __future__ import annotations

from tests.support.tenants import Tenant


def test_saved_note_is_recalled_by_its_words(tenant: Tenant) -> None:
    note = tenant.client.save("We deploy with Argo CD every Tuesday")
    response = tenant.client.post("/v1/recall", {"query": "when do we deploy?"})
    assert response.status_code == 200
    ids = [item["memory"]["id"] for item in response.json()["data"]["items"]]
    assert ids == [note["id"]]
