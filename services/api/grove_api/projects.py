"""``/v1/orgs``: orgs, projects, members and project keys (owner sessions), and each
project's shared memory pool under ``.../projects/{projectId}/memory`` (owner sessions
and project keys)."""

from __future__ import annotations

from uuid import UUID

import falcon

from grove_api.body import read_json, read_query
from grove_api.resources import Resource, ok
from grove_api.routing import Operation, Route
from grove_api.wiring import Wiring
from grove_contracts.project_memory import (
    POOL_MAX_REQUEST_BYTES,
    AddMemberRequest,
    CreatedProjectKey,
    CreateOrgRequest,
    CreateProjectKeyRequest,
    CreateProjectRequest,
    DeletedReply,
    KeyQuery,
    ListRecordsQuery,
    Member,
    MemberList,
    Org,
    OrgList,
    Project,
    ProjectKeyList,
    ProjectList,
    RecordPage,
    RecordReply,
    RemovedMember,
    RetrieveReply,
    RetrieveRequest,
    RevokedProjectKey,
    StatusReply,
    UpdateMemberRequest,
    UpdateOrgRequest,
    WriteRecordRequest,
)
from grove_memory.orgs import orgs
from grove_memory.orgs import project_memory as pm
from grove_memory.orgs.project_memory import ProjectScope


class Orgs(Resource):
    """``POST /v1/orgs`` and ``GET /v1/orgs``."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json(req, CreateOrgRequest, self.max_body)
        ok(resp, orgs.create_org(self.store, req.context.principal, body), 201)

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        ok(resp, orgs.list_orgs(self.store, req.context.principal))


class OrgResource(Resource):
    """``GET`` and ``PATCH /v1/orgs/{orgId}`` (entitlements)."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, org_id: UUID) -> None:
        ok(resp, orgs.get_org(self.store, req.context.principal, org_id))

    def on_patch(self, req: falcon.Request, resp: falcon.Response, org_id: UUID) -> None:
        body = read_json(req, UpdateOrgRequest, self.max_body)
        ok(resp, orgs.update_org(self.store, req.context.principal, org_id, body))


class Projects(Resource):
    """``POST`` and ``GET /v1/orgs/{orgId}/projects``."""

    def on_post(self, req: falcon.Request, resp: falcon.Response, org_id: UUID) -> None:
        body = read_json(req, CreateProjectRequest, self.max_body)
        ok(resp, orgs.create_project(self.store, req.context.principal, org_id, body), 201)

    def on_get(self, req: falcon.Request, resp: falcon.Response, org_id: UUID) -> None:
        ok(resp, orgs.list_projects(self.store, req.context.principal, org_id))


class Members(Resource):
    """``GET`` and ``POST .../projects/{projectId}/members`` (add, or change a role)."""

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, org_id: UUID, project_id: UUID
    ) -> None:
        ok(resp, orgs.list_members(self.store, req.context.principal, org_id, project_id))

    def on_post(
        self, req: falcon.Request, resp: falcon.Response, org_id: UUID, project_id: UUID
    ) -> None:
        body = read_json(req, AddMemberRequest, self.max_body)
        member, created = orgs.put_member(
            self.store, req.context.principal, org_id, project_id, body
        )
        ok(resp, member, 201 if created else 200)


class MemberResource(Resource):
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
        ok(resp, member)

    def on_delete(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        org_id: UUID,
        project_id: UUID,
        account_id: UUID,
    ) -> None:
        principal = req.context.principal
        ok(resp, orgs.remove_member(self.store, principal, org_id, project_id, account_id))


class ProjectKeys(Resource):
    """``POST`` (the key is in this answer only) and ``GET .../projects/{projectId}/keys``."""

    def on_post(
        self, req: falcon.Request, resp: falcon.Response, org_id: UUID, project_id: UUID
    ) -> None:
        body = read_json(req, CreateProjectKeyRequest, self.max_body)
        principal = req.context.principal
        created = orgs.create_key(self.store, principal, org_id, project_id, body)
        ok(resp, created, 201)

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, org_id: UUID, project_id: UUID
    ) -> None:
        ok(resp, orgs.list_keys(self.store, req.context.principal, org_id, project_id))


class ProjectKey(Resource):
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
        ok(resp, orgs.revoke_key(self.store, principal, org_id, project_id, key_id))


class PoolResource(Resource):
    """Base of the ``.../memory`` routes: project keys may call them too (``BearerAuth``
    refuses a project key anywhere else), and their bodies may be larger."""

    accepts_project_keys = True

    def __init__(self, wiring: Wiring) -> None:
        super().__init__(wiring)
        self.max_body = max(wiring.max_body, POOL_MAX_REQUEST_BYTES)


class MemoryStatus(PoolResource):
    """``GET .../memory/status``."""

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, org_id: UUID, project_id: UUID
    ) -> None:
        scope = ProjectScope(org_id, project_id)
        ok(resp, pm.reader(self.store, req.context.principal, scope))


class MemoryRecords(PoolResource):
    """``GET .../memory?limit&kind&after``: records in key order."""

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, org_id: UUID, project_id: UUID
    ) -> None:
        query = read_query(req, ListRecordsQuery)
        scope = ProjectScope(org_id, project_id)
        ok(resp, pm.list(self.store, req.context.principal, scope, query))


class MemoryEntry(PoolResource):
    """``GET``, ``PUT`` and ``DELETE .../memory/entry`` (``?key=`` for GET and DELETE)."""

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, org_id: UUID, project_id: UUID
    ) -> None:
        key = read_query(req, KeyQuery).key
        ok(resp, pm.get(self.store, req.context.principal, ProjectScope(org_id, project_id), key))

    def on_put(
        self, req: falcon.Request, resp: falcon.Response, org_id: UUID, project_id: UUID
    ) -> None:
        body = read_json(req, WriteRecordRequest, self.max_body)
        scope = ProjectScope(org_id, project_id)
        ok(resp, pm.upsert(self.store, req.context.principal, scope, body))

    def on_delete(
        self, req: falcon.Request, resp: falcon.Response, org_id: UUID, project_id: UUID
    ) -> None:
        key = read_query(req, KeyQuery).key
        scope = ProjectScope(org_id, project_id)
        ok(resp, pm.delete(self.store, req.context.principal, scope, key))


class MemoryRetrieve(PoolResource):
    """``POST .../memory/retrieve``."""

    def on_post(
        self, req: falcon.Request, resp: falcon.Response, org_id: UUID, project_id: UUID
    ) -> None:
        body = read_json(req, RetrieveRequest, self.max_body)
        scope = ProjectScope(org_id, project_id)
        ok(resp, pm.retrieve(self.store, req.context.principal, scope, body))


POOL = (
    "Owner sessions and project keys (`grvp_...`) only: personal API keys and agent tokens"
    " get 403 `credential_not_allowed`. A project you cannot read answers 404."
)


ROUTES: tuple[Route, ...] = (
    Route(
        Orgs,
        (
            Operation(
                "POST",
                "/v1/orgs",
                "Create an org (you become its owner)",
                Org,
                body=CreateOrgRequest,
                status=201,
                creates={"org_id": "/id"},
                auth="owner",
            ),
            Operation("GET", "/v1/orgs", "List the orgs you belong to", OrgList, auth="owner"),
        ),
    ),
    Route(
        OrgResource,
        (
            Operation("GET", "/v1/orgs/{org_id:uuid}", "Read one of your orgs", Org, auth="owner"),
            Operation(
                "PATCH",
                "/v1/orgs/{org_id:uuid}",
                "Set the org's entitlements (org owners)",
                Org,
                body=UpdateOrgRequest,
                auth="owner",
            ),
        ),
    ),
    Route(
        Projects,
        (
            Operation(
                "POST",
                "/v1/orgs/{org_id:uuid}/projects",
                "Create a project (org owners; you become its admin)",
                Project,
                body=CreateProjectRequest,
                status=201,
                creates={"project_id": "/id"},
                auth="owner",
            ),
            Operation(
                "GET",
                "/v1/orgs/{org_id:uuid}/projects",
                "List the org's projects you are in (an org owner: all)",
                ProjectList,
                auth="owner",
            ),
        ),
    ),
    Route(
        Members,
        (
            Operation(
                "GET",
                "/v1/orgs/{org_id:uuid}/projects/{project_id:uuid}/members",
                "List the project's members",
                MemberList,
                auth="owner",
            ),
            Operation(
                "POST",
                "/v1/orgs/{org_id:uuid}/projects/{project_id:uuid}/members",
                "Add a person with a role, or change their role (admins)",
                Member,
                body=AddMemberRequest,
                status=201,
                also=(200,),
                errors=(409,),
                auth="owner",
            ),
        ),
    ),
    Route(
        MemberResource,
        (
            Operation(
                "PUT",
                "/v1/orgs/{org_id:uuid}/projects/{project_id:uuid}/members/{account_id:uuid}",
                "Change a member's role (admins)",
                Member,
                body=UpdateMemberRequest,
                errors=(409,),
                auth="owner",
            ),
            Operation(
                "DELETE",
                "/v1/orgs/{org_id:uuid}/projects/{project_id:uuid}/members/{account_id:uuid}",
                "Remove a member (admins)",
                RemovedMember,
                errors=(409,),
                auth="owner",
            ),
        ),
    ),
    Route(
        ProjectKeys,
        (
            Operation(
                "POST",
                "/v1/orgs/{org_id:uuid}/projects/{project_id:uuid}/keys",
                "Create a project key (admins; the key is in this answer only)",
                CreatedProjectKey,
                body=CreateProjectKeyRequest,
                status=201,
                auth="owner",
            ),
            Operation(
                "GET",
                "/v1/orgs/{org_id:uuid}/projects/{project_id:uuid}/keys",
                "List the project's keys (admins)",
                ProjectKeyList,
                auth="owner",
            ),
        ),
    ),
    Route(
        ProjectKey,
        (
            Operation(
                "DELETE",
                "/v1/orgs/{org_id:uuid}/projects/{project_id:uuid}/keys/{key_id:uuid}",
                "Revoke a project key (admins)",
                RevokedProjectKey,
                auth="owner",
            ),
        ),
    ),
    Route(
        MemoryStatus,
        (
            Operation(
                "GET",
                "/v1/orgs/{org_id:uuid}/projects/{project_id:uuid}/memory/status",
                "Project memory: enabled, the org and project, what you may do",
                StatusReply,
                description=POOL,
            ),
        ),
    ),
    Route(
        MemoryRecords,
        (
            Operation(
                "GET",
                "/v1/orgs/{org_id:uuid}/projects/{project_id:uuid}/memory",
                "Project memory: records in key order",
                RecordPage,
                query=ListRecordsQuery,
                description=POOL,
            ),
        ),
    ),
    Route(
        MemoryEntry,
        (
            Operation(
                "GET",
                "/v1/orgs/{org_id:uuid}/projects/{project_id:uuid}/memory/entry",
                "Project memory: one record by key (missing or expired: 404)",
                RecordReply,
                query=KeyQuery,
                description=POOL,
            ),
            Operation(
                "PUT",
                "/v1/orgs/{org_id:uuid}/projects/{project_id:uuid}/memory/entry",
                "Project memory: write a record, or replace the one with the same key",
                RecordReply,
                body=WriteRecordRequest,
                description=POOL,
            ),
            Operation(
                "DELETE",
                "/v1/orgs/{org_id:uuid}/projects/{project_id:uuid}/memory/entry",
                "Project memory: delete a record by key",
                DeletedReply,
                query=KeyQuery,
                description=POOL,
            ),
        ),
    ),
    Route(
        MemoryRetrieve,
        (
            Operation(
                "POST",
                "/v1/orgs/{org_id:uuid}/projects/{project_id:uuid}/memory/retrieve",
                "Project memory: ranked records (full text, plus your vectors by RRF)",
                RetrieveReply,
                body=RetrieveRequest,
                description=POOL,
            ),
        ),
    ),
)
