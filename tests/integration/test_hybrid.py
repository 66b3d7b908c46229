"""Recall and search by meaning, with the real MiniLM, the worker and pgvector."""

from __future__ import annotations

from typing import Any

from tests.integration.conftest import Tenant, data_of, wait_until


def indexed(tenant: Tenant, note: dict[str, Any]) -> dict[str, Any]:
    """Wait until the worker has embedded the note's current revision."""

    def ready() -> dict[str, Any] | None:
        current = data_of(tenant.client.get(f"/v1/memories/{note['id']}"))
        return current if current["indexing"] == "ready" else None

    return wait_until(ready)  # type: ignore[no-any-return]


def test_note_is_recalled_by_meaning_with_no_shared_word(hybrid_tenant: Tenant) -> None:
    note = hybrid_tenant.client.save("We deploy with Argo CD every Tuesday")
    assert note["indexing"] == "pending"
    indexed(hybrid_tenant, note)
    response = hybrid_tenant.client.post("/v1/recall", {"query": "what is our release cadence?"})
    body = data_of(response)
    assert body["retrieval"] == {"lexical": True, "semantic": True}
    assert [item["memory"]["id"] for item in body["items"]] == [note["id"]]
