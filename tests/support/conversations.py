"""The conversation stack: an api taking owner sessions from a fake provider and
answering through a real grove-ask (extractive, lexical), and an account's owner on it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import requests

from grove_auth.principal import Principal
from grove_db import embedded
from grove_db.pool import open_pool
from grove_memory.store import Store
from tests.support.clients import Client, data_of
from tests.support.owners import OwnedAccount, Provider, owned_tenant
from tests.support.processes import Running, start_api, start_ask
from tests.support.tenants import owner_of


@dataclass
class Stack:
    provider: Provider
    ask: Running
    api: Running
    database: embedded.EmbeddedDatabase


def start_answering_api(
    database: embedded.EmbeddedDatabase, provider: Provider, ask: Running, workers: int
) -> Running:
    """An api taking owner sessions from ``provider`` and answering through ``ask``
    (embeddings off: evidence is lexical)."""
    return start_api(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_EMBEDDING_PROFILE": "disabled",
            "GROVE_ASK_ADDRESS": ask.url,
            "GROVE_API_WORKERS": str(workers),
            **provider.env(),
        }
    )


@pytest.fixture(scope="module")
def stack(database: embedded.EmbeddedDatabase) -> Iterator[Stack]:
    provider = Provider()
    ask = start_ask({"GROVE_EMBEDDING_PROFILE": "disabled"})
    api = start_answering_api(database, provider, ask, workers=2)
    yield Stack(provider, ask, api, database)
    api.stop()
    ask.stop()
    provider.close()


@dataclass
class Owner(OwnedAccount):
    """One account on the conversation stack, with conversation helpers."""

    stack: Stack

    def create(self, **fields: Any) -> dict[str, Any]:
        body = {"id": str(uuid.uuid4()), **fields}
        response = self.session.post("/v1/conversations", body)
        assert response.status_code == 201, response.text
        return data_of(response)  # type: ignore[no-any-return]

    def turn(self, conversation: str, query: str, version: int, **fields: Any) -> requests.Response:
        body = {"id": str(uuid.uuid4()), "query": query, "expectedVersion": version, **fields}
        return self.session.post(f"/v1/conversations/{conversation}/turns", body)

    def answered(self, conversation: str, query: str, version: int, **fields: Any) -> Any:
        response = self.turn(conversation, query, version, **fields)
        assert response.status_code == 201, response.text
        return data_of(response)

    def get(self, conversation: str) -> requests.Response:
        return self.session.get(f"/v1/conversations/{conversation}")

    def delete(self, path: str, client: Client | None = None) -> requests.Response:
        caller = client or self.session
        return caller.session.delete(caller.base + path, headers=caller.headers(), timeout=30)

    def principal(self) -> Principal:
        return owner_of(self.tenant.account_id)


def new_owner(stack: Stack) -> Owner:
    return Owner(stack, *owned_tenant(stack.database, stack.api.url))


@pytest.fixture
def owner(stack: Stack) -> Owner:
    return new_owner(stack)


@pytest.fixture
def store(stack: Stack) -> Iterator[Store]:
    pool = open_pool(stack.database.runtime_url)
    yield Store(pool=pool, cursor_secret=b"test-cursor-secret")
    pool.close()
