"""The share stack: an api taking owner sessions from a fake provider, with the public
share service it links to, and an account's owner on it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
import requests

from grove_db import embedded
from tests.support.clients import data_of
from tests.support.owners import OwnedAccount, Provider, owned_tenant
from tests.support.processes import Running, start_api, start_share


@dataclass
class Stack:
    provider: Provider
    api: Running
    share: Running
    database: embedded.EmbeddedDatabase


@dataclass
class Owner(OwnedAccount):
    """One account on the share stack, with share helpers."""

    stack: Stack

    def share(self, kind: str, target: str, **fields: Any) -> dict[str, Any]:
        body = {"target": {"type": kind, "id": target}, **fields}
        response = self.session.post("/v1/shares", body)
        assert response.status_code == 201, response.text
        return data_of(response)  # type: ignore[no-any-return]

    def tool(self, name: str, /, **arguments: Any) -> Any:
        response = self.key.post(f"/v1/tools/{name}", arguments)
        assert response.status_code == 200, response.text
        return data_of(response)

    def notebook_action(self, notebook: str, action: str) -> None:
        preview = data_of(self.session.get(f"/v1/notebooks/{notebook}/subtree"))
        done = self.session.post(
            f"/v1/notebooks/{notebook}/{action}", {"fingerprint": preview["fingerprint"]}
        )
        assert done.status_code == 200, done.text


@pytest.fixture(scope="module")
def stack(database: embedded.EmbeddedDatabase) -> Iterator[Stack]:
    provider = Provider()
    share = start_share(database)
    api = start_api(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_EMBEDDING_PROFILE": "disabled",
            "GROVE_API_WORKERS": "1",
            **provider.env(),
            "GROVE_SHARE_PUBLIC_URL": share.url,
        }
    )
    yield Stack(provider, api, share, database)
    api.stop()
    share.stop()
    provider.close()


def new_owner(stack: Stack, name: str = "Test account") -> Owner:
    tenant, subject = owned_tenant(stack.database, stack.api.url)
    with psycopg.connect(stack.database.grove_superuser_url) as conn:
        conn.execute("UPDATE accounts SET name = %s WHERE id = %s", (name, tenant.account_id))
    return Owner(stack, tenant, subject)


def read(url: str, accept: str | None = None, **headers: str) -> requests.Response:
    sent = {"Accept": accept} if accept else {}
    return requests.get(url, headers={**sent, **headers}, timeout=30)


@pytest.fixture
def owner(stack: Stack) -> Owner:
    return new_owner(stack)
