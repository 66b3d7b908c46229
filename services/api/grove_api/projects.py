"""``/v1/orgs``: orgs, projects, members and project keys (owner sessions), and each
project's shared memory pool under ``.../projects/{projectId}/memory`` (owner sessions
and project keys)."""

from __future__ import annotations

from uuid import UUID

import falcon
from pydantic import BaseModel

from grove_api.body import read_json, read_query
from grove_api.wiring import Wiring
from grove_contracts.errors import success_envelope
from grove_contracts.project_memory import (
    POOL_MAX_REQUEST_BYTES,
    AddMemberRequest,
    CreateOrgRequest,
    CreateProjectKeyRequest,
    CreateProjectRequest,
    KeyQuery,
    ListRecordsQuery,
    RetrieveRequest,
    UpdateMemberRequest,
    UpdateOrgRequest,
    WriteRecordRequest,
)
from grove_memory import orgs
from grove_memory import project_memory as pm
from grove_memory.project_memory import ProjectScope


def _ok(resp: falcon.Response, data: BaseModel, status: int = 200) -> None:
    resp.status = status
    resp.media = success_envelope(data.model_dump(mode="json"))


class OrgResource:
    """Base of the owner routes: the store (its project-key secret) and the body limit."""

    def __init__(self, wiring: Wiring) -> None:
        self.store = wiring.store
        self.max_body = wiring.max_body


class Orgs(OrgResource):
    """``POST /v1/orgs`` and ``GET /v1/orgs``."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json(req, CreateOrgRequest, self.max_body)
        _ok(resp, orgs.create_org(self.store, req.context.principal, body), 201)

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        _ok(resp, orgs.list_orgs(self.store, req.context.principal))


class Org(OrgResource):
    """``GET`` and ``PATCH /v1/orgs/{orgId}`` (entitlements)."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, org_id: UUID) -> None:
        _ok(resp, orgs.get_org(self.store, req.context.principal, org_id))

    def on_patch(self, req: falcon.Request, resp: falcon.Response, org_id: UUID) -> None:
        body = read_json(req, UpdateOrgRequest, self.max_body)
        _ok(resp, orgs.update_org(self.store, req.context.principal, org_id, body))


class Projects(OrgResource):
    """``POST`` and ``GET /v1/orgs/{orgId}/projects``."""

    def on_post(self, req: falcon.Request, resp: falcon.Response, org_id: UUID) -> None:
        body = read_json(req, CreateProjectRequest, self.max_body)
        _ok(resp, orgs.create_project(self.store, req.context.principal, org_id, body), 201)

    def on_get(self, req: falcon.Request, resp: falcon.Response, org_id: UUID) -> None:
        _ok(resp, orgs.list_projects(self.store, req.context.principal, org_id))


class Members(OrgResource):
    """``GET`` and ``POST .../projects/{projectId}/members`` (add, or change a role)."""

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, org_id: UUID, project_id: UUID
    ) -> None:
        _ok(resp, orgs.list_members(self.store, req.context.principal, org_id, project_id))

    def on_post(
        self, req: falcon.Request, resp: falcon.Response, org_id: UUID, project_id: UUID
    ) -> None:
        body = read_json(req, AddMemberRequest, self.max_body)
        member, created = orgs.put_member(
            self.store, req.context.principal, org_id, project_id, body
        )
        _ok(resp, member, 201 if created else 200)


class Member(OrgResource):
    """``PUT`` (role) and ``DELETE .../members/{accountId}``."""

    def on_put(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        org_id: UUID,
        project_id: UUID,
        account_id: UUID,
    ) -> None:
        role = read_json(req, UpdateMemberRequest, self.max_body).role
        body = AddMemberRequest(accountId=account_id, role=role)
        member, _ = orgs.put_member(self.store, req.context.principal, org_id, project_id, body)
        _ok(resp, member)

    def on_delete(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        org_id: UUID,
        project_id: UUID,
        account_id: UUID,
    ) -> None:
        principal = req.context.principal
        _ok(resp, orgs.remove_member(self.store, principal, org_id, project_id, account_id))


class ProjectKeys(OrgResource):
    """``POST`` (the key is in this answer only) and ``GET .../projects/{projectId}/keys``."""

    def on_post(
        self, req: falcon.Request, resp: falcon.Response, org_id: UUID, project_id: UUID
    ) -> None:
        body = read_json(req, CreateProjectKeyRequest, self.max_body)
        principal = req.context.principal
        created = orgs.create_key(self.store, principal, org_id, project_id, body)
        _ok(resp, created, 201)

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, org_id: UUID, project_id: UUID
    ) -> None:
        _ok(resp, orgs.list_keys(self.store, req.context.principal, org_id, project_id))


class ProjectKey(OrgResource):
    """``DELETE .../keys/{keyId}``: revoke."""

    def on_delete(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        org_id: UUID,
        project_id: UUID,
        key_id: UUID,
    ) -> None:
        principal = req.context.principal
        _ok(resp, orgs.revoke_key(self.store, principal, org_id, project_id, key_id))


class PoolResource:
    """Base of the ``.../memory`` routes, the ones project keys may call."""

    accepts_project_keys = True

    def __init__(self, wiring: Wiring) -> None:
        self.store = wiring.store
        self.max_body = max(wiring.max_body, POOL_MAX_REQUEST_BYTES)


class MemoryStatus(PoolResource):
    """``GET .../memory/status``."""

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, org_id: UUID, project_id: UUID
    ) -> None:
        scope = ProjectScope(org_id, project_id)
        _ok(resp, pm.reader(self.store, req.context.principal, scope))


class MemoryRecords(PoolResource):
    """``GET .../memory?limit&kind&after``: records in key order."""

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, org_id: UUID, project_id: UUID
    ) -> None:
        query = read_query(req, ListRecordsQuery)
        scope = ProjectScope(org_id, project_id)
        _ok(resp, pm.list(self.store, req.context.principal, scope, query))


class MemoryEntry(PoolResource):
    """``GET``, ``PUT`` and ``DELETE .../memory/entry`` (``?key=`` for GET and DELETE)."""

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, org_id: UUID, project_id: UUID
    ) -> None:
        key = read_query(req, KeyQuery).key
        _ok(resp, pm.get(self.store, req.context.principal, ProjectScope(org_id, project_id), key))

    def on_put(
        self, req: falcon.Request, resp: falcon.Response, org_id: UUID, project_id: UUID
    ) -> None:
        body = read_json(req, WriteRecordRequest, self.max_body)
        scope = ProjectScope(org_id, project_id)
        _ok(resp, pm.upsert(self.store, req.context.principal, scope, body))

    def on_delete(
        self, req: falcon.Request, resp: falcon.Response, org_id: UUID, project_id: UUID
    ) -> None:
        key = read_query(req, KeyQuery).key
        scope = ProjectScope(org_id, project_id)
        _ok(resp, pm.delete(self.store, req.context.principal, scope, key))


class MemoryRetrieve(PoolResource):
    """``POST .../memory/retrieve``."""

    def on_post(
        self, req: falcon.Request, resp: falcon.Response, org_id: UUID, project_id: UUID
    ) -> None:
        body = read_json(req, RetrieveRequest, self.max_body)
        scope = ProjectScope(org_id, project_id)
        _ok(resp, pm.retrieve(self.store, req.context.principal, scope, body))
