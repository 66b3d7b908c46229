"""Orgs and projects with their people: a team of three with project keys made through
the api, and a project of many records written straight to the database."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from grove_auth.principal import Principal
from grove_db import embedded
from grove_memory.orgs.project_memory import ProjectScope
from tests.support.clients import Client, data_of
from tests.support.databases import superuser
from tests.support.owners import OwnedAccount, OwnerStack, owned_tenant
from tests.support.tenants import owner_of


@dataclass
class Person(OwnedAccount):
    """A Grove account (a person) with an owner session on the stack."""

    @property
    def id(self) -> str:
        return str(self.tenant.account_id)


def person(stack: OwnerStack) -> Person:
    tenant, subject = owned_tenant(stack.database, stack.api.url)
    return Person(stack, tenant, subject)


@dataclass
class Team:
    """An org with one project: alice (org owner, admin), bob (contributor), carol
    (viewer); a project key of alice's with read and write, and a read-only one."""

    stack: OwnerStack
    org: str
    project: str
    alice: Person
    bob: Person
    carol: Person
    writer: Client
    reader: Client

    @property
    def base(self) -> str:
        return f"/v1/orgs/{self.org}/projects/{self.project}"

    @property
    def memory(self) -> str:
        return self.base + "/memory"

    def key(self, who: Person, *scopes: str, project: str | None = None) -> Client:
        path = f"/v1/orgs/{self.org}/projects/{project or self.project}/keys"
        created = who.session.post(path, {"name": "agent", "scopes": list(scopes)})
        assert created.status_code == 201, created.text
        return Client(self.stack.api.url, data_of(created)["key"])


def create(client: Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post(path, body)
    assert response.status_code == 201, response.text
    return data_of(response)  # type: ignore[no-any-return]


def new_team(stack: OwnerStack) -> Team:
    alice, bob, carol = person(stack), person(stack), person(stack)
    org = create(alice.session, "/v1/orgs", {"name": "Acme"})["id"]
    project = create(alice.session, f"/v1/orgs/{org}/projects", {"name": "Rocket"})["id"]
    members = f"/v1/orgs/{org}/projects/{project}/members"
    create(alice.session, members, {"accountId": bob.id, "role": "contributor"})
    create(alice.session, members, {"accountId": carol.id, "role": "viewer"})
    team = Team(stack, org, project, alice, bob, carol, None, None)  # type: ignore[arg-type]
    team.writer = team.key(alice, "project_memory:read", "project_memory:write")
    team.reader = team.key(alice, "project_memory:read")
    return team


def project_with(
    database: embedded.EmbeddedDatabase, records: int
) -> tuple[Principal, ProjectScope]:
    """A person, an org and a project they administer holding ``records`` records."""
    account, org, project = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    with superuser(database) as conn:
        conn.execute("INSERT INTO accounts (id, name) VALUES (%s, 'person')", (account,))
        conn.execute(
            "INSERT INTO orgs (id, name, created_by) VALUES (%s, 'org', %s)", (org, account)
        )
        conn.execute(
            "INSERT INTO org_members (org_id, account_id, role) VALUES (%s, %s, 'owner')",
            (org, account),
        )
        conn.execute(
            "INSERT INTO org_projects (org_id, id, name) VALUES (%s, %s, 'p')", (org, project)
        )
        conn.execute(
            "INSERT INTO project_members (org_id, project_id, account_id, role)"
            " VALUES (%s, %s, %s, 'admin')",
            (org, project, account),
        )
        conn.execute(
            "INSERT INTO project_memories (org_id, project_id, key, title, body, body_sha256,"
            " kind, authority, prov_source, prov_ref, prov_verification, prov_observed_at,"
            " written_by, embedding, embedding_space, embedding_dims)"
            " SELECT %s, %s, 'key-' || lpad(i::text, 6, '0'), 'Record ' || i,"
            " 'deploy note number ' || i, sha256(convert_to('deploy note number ' || i, 'UTF8')),"
            " 'fact', 'observed', 'test', 'ref', 'unverified', now(), %s,"
            " ('[' || (i %% 7 + 1) || ',1,0]')::vector, 'space', 3"
            " FROM generate_series(1, %s) AS i",
            (org, project, account, records),
        )
        conn.execute("ANALYZE project_memories")
    return owner_of(account), ProjectScope(org, project)
