"""Fresh accounts, so tests never see each other's data."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

from requests.adapters import BaseAdapter

from grove_auth import devissuer
from grove_auth.principal import Principal
from grove_cli import admin
from grove_db import embedded
from tests.support.clients import Client
from tests.support.keys import SECRET


@dataclass
class Tenant:
    """A fresh account with an API key granted personal notes and all notebooks."""

    account_id: UUID
    key_id: UUID
    client: Client
    database: embedded.EmbeddedDatabase

    def key(self, name: str = "extra", **grants: Any) -> Client:
        """Another key on this account with the given grants."""
        issued = admin.create_key(
            self.database.migration_url, SECRET, self.account_id, name, **grants
        )
        return self.client.with_key(issued.key)

    def notebook(self, name: str = "notebook", parent: str | None = None) -> str:
        response = self.client.post("/v1/notebooks", {"name": name, "parentId": parent})
        assert response.status_code == 201, response.text
        return str(response.json()["data"]["id"])


def new_tenant(
    database: embedded.EmbeddedDatabase, base_url: str, transport: BaseAdapter | None = None
) -> Tenant:
    """A fresh account with a full-access key, talking to the API at ``base_url`` (through
    ``transport`` if given, as ``Client`` says)."""
    account_id = admin.create_account(database.migration_url, "Test account")
    issued = admin.create_key(
        database.migration_url, SECRET, account_id, "full", personal=True, all_notebooks=True
    )
    return Tenant(
        account_id, issued.id, Client(base_url, issued.key, transport=transport), database
    )


def owner_of(account_id: UUID) -> Principal:
    """The account's owner as operations in this process see one: every grant."""
    return Principal(
        account_id=account_id,
        connection_id=uuid4(),
        personal=True,
        all_notebooks=True,
        can_write=True,
        can_delete=True,
        kind="owner",
    )


def owner_session(tenant: Tenant, issuer_key: Path) -> Client:
    """A client of the tenant's API as the account's owner session, signed by the API's
    development identity provider (``GROVE_DEV_AUTH``: its issuer is the API's
    ``/dev-issuer``, its key ``issuer_key``), whose subject is made the account's owner
    (once a tenant: an identity owns one account, and a second call is refused)."""
    issuer = tenant.client.base + devissuer.ISSUER_PATH
    subject = f"owner-{tenant.account_id}"
    admin.add_owner(tenant.database.migration_url, tenant.account_id, issuer, subject)
    claims = devissuer.owner_claims(devissuer.OWNER_AUDIENCE)
    return tenant.client.with_key(devissuer.token(issuer_key, issuer, subject, claims))
