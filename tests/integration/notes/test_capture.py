"""Automatic capture can be paused per account and per server; explicit saves always work."""

from __future__ import annotations

from grove_cli import admin
from grove_db import embedded
from tests.support.clients import Client, error_of
from tests.support.processes import start_api
from tests.support.tenants import Tenant

AUTOMATIC = {"content": "noticed on my own", "kind": "fact", "capture": "automatic"}


def test_paused_account_refuses_automatic_saves_but_not_explicit_ones(tenant: Tenant) -> None:
    note = tenant.client.save("explicit before")
    assert admin.set_automatic_capture(tenant.database.migration_url, tenant.account_id, True)
    refused = tenant.client.post("/v1/memories", AUTOMATIC)
    assert refused.status_code == 409
    assert error_of(refused)["code"] == "automatic_capture_paused"
    through_tool = tenant.client.post("/v1/tools/remember", AUTOMATIC)
    assert error_of(through_tool)["code"] == "automatic_capture_paused"
    patched = tenant.client.patch(f"/v1/memories/{note['id']}", {"capture": "automatic"})
    assert patched.status_code == 409
    assert tenant.client.save("explicit while paused")["capture"] == "explicit"
    assert tenant.client.get("/v1/memories").json()["data"]["items"][0]["capture"] == "explicit"
    assert admin.set_automatic_capture(tenant.database.migration_url, tenant.account_id, False)
    assert tenant.client.post("/v1/memories", AUTOMATIC).status_code == 201


def test_pausing_one_account_leaves_others_capturing(make_tenant) -> None:  # type: ignore[no-untyped-def]
    paused, other = make_tenant(), make_tenant()
    admin.set_automatic_capture(paused.database.migration_url, paused.account_id, True)
    assert other.client.post("/v1/memories", AUTOMATIC).status_code == 201


def test_server_setting_pauses_automatic_capture_everywhere(
    database: embedded.EmbeddedDatabase, tenant: Tenant
) -> None:
    api = start_api(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_EMBEDDING_PROFILE": "disabled",
            "GROVE_AUTOMATIC_CAPTURE": "paused",
            "GROVE_API_WORKERS": "1",
        }
    )
    try:
        client = Client(api.url, tenant.client.key)
        refused = client.post("/v1/memories", AUTOMATIC)
        assert error_of(refused)["code"] == "automatic_capture_paused"
        assert client.post("/v1/memories", {**AUTOMATIC, "capture": "explicit"}).status_code == 201
    finally:
        api.stop()
