"""Orgs, their projects, project members and project keys: owner sessions only.

A person is a Grove account. Creating an org makes its creator the org owner; org owners
create projects and become each new project's admin. A project's admins add people (by
account ID) with a role, change roles, remove people and issue or revoke project keys.
The last admin of a project cannot be removed or demoted. Roles are read live on every
request; nothing is cached.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid4

import psycopg

from grove_auth.connections import require_owner
from grove_auth.principal import Principal
from grove_auth.project_keys import PROJECT_KEY_COLUMNS, issue_project_key
from grove_contracts.project_memory import (
    AddMemberRequest,
    CreatedProjectKey,
    CreateOrgRequest,
    CreateProjectKeyRequest,
    CreateProjectRequest,
    Member,
    MemberList,
    Org,
    OrgList,
    Project,
    ProjectKey,
    ProjectKeyList,
    ProjectList,
    RemovedMember,
    RevokedProjectKey,
    UpdateOrgRequest,
)
from grove_db.pool import Conn, set_project, transaction
from grove_memory.errors import Forbidden, NotFound, ServiceError
from grove_memory.store import Store


class LastAdmin(ServiceError):
    """A project keeps at least one admin: add another admin first."""

    code = "last_admin"
    status = 409


ORG_COLUMNS = """
    o.id, o.name, o.project_memory_enabled, o.created_at, m.role
"""


#: Creates the org and makes the caller its owner, both rows in one ``SECURITY DEFINER``
#: function of the schema.
FOUND_ORG = "SELECT grove_found_org(%s, %s)"


def create_org(store: Store, principal: Principal, body: CreateOrgRequest) -> Org:
    """A new org owned by the caller."""
    require_owner(principal)
    org_id = uuid4()
    with transaction(store.pool, principal.account_id) as conn:
        conn.execute(FOUND_ORG, (org_id, body.name))
        return _org(conn, org_id)


#: The caller's live orgs with their role, oldest first.
LIST_ORGS = f"""
    SELECT {ORG_COLUMNS} FROM org_members m JOIN orgs o ON o.id = m.org_id
    WHERE m.account_id = grove_current_account() AND o.deleted_at IS NULL
    ORDER BY o.created_at, o.id
"""


def list_orgs(store: Store, principal: Principal) -> OrgList:
    """The orgs the caller belongs to, oldest first."""
    require_owner(principal)
    with transaction(store.pool, principal.account_id) as conn:
        rows = conn.execute(LIST_ORGS).fetchall()
    return OrgList(orgs=[_as_org(r) for r in rows])


def get_org(store: Store, principal: Principal, org_id: UUID) -> Org:
    """One org the caller belongs to."""
    require_owner(principal)
    with transaction(store.pool, principal.account_id) as conn:
        return _org(conn, org_id)


SET_ENTITLEMENTS = "UPDATE orgs SET project_memory_enabled = %s WHERE id = %s"


def update_org(store: Store, principal: Principal, org_id: UUID, body: UpdateOrgRequest) -> Org:
    """Set the org's entitlements (its owner only)."""
    require_owner(principal)
    with transaction(store.pool, principal.account_id) as conn:
        _org_role(conn, org_id, "owner")
        conn.execute(SET_ENTITLEMENTS, (body.entitlements.projectMemory.enabled, org_id))
        return _org(conn, org_id)


INSERT_PROJECT = "INSERT INTO org_projects (org_id, id, name) VALUES (%s, %s, %s)"
#: The project's creator, its first admin.
INSERT_ADMIN = """
    INSERT INTO project_members (org_id, project_id, account_id, role)
    VALUES (%s, %s, %s, 'admin')
"""


def create_project(
    store: Store, principal: Principal, org_id: UUID, body: CreateProjectRequest
) -> Project:
    """A new project in the org (org owners); its creator becomes its admin."""
    require_owner(principal)
    project_id = uuid4()
    with transaction(store.pool, principal.account_id) as conn:
        _org_role(conn, org_id, "owner")
        conn.execute(INSERT_PROJECT, (org_id, project_id, body.name))
        set_project(conn, org_id, project_id)
        conn.execute(INSERT_ADMIN, (org_id, project_id, principal.account_id))
        return _projects(conn, org_id, project_id)[0]


def list_projects(store: Store, principal: Principal, org_id: UUID) -> ProjectList:
    """The org's projects the caller is in (an org owner: every project)."""
    require_owner(principal)
    with transaction(store.pool, principal.account_id) as conn:
        _org_role(conn, org_id, None)
        return ProjectList(projects=_projects(conn, org_id, None))


LIST_MEMBERS = """
    SELECT account_id, role, created_at, updated_at FROM project_members
    WHERE org_id = %s AND project_id = %s ORDER BY created_at, account_id
"""


def list_members(store: Store, principal: Principal, org_id: UUID, project_id: UUID) -> MemberList:
    """The project's members (any member may see who else is in it)."""
    require_owner(principal)
    with transaction(store.pool, principal.account_id) as conn:
        _project_role(conn, org_id, project_id, None)
        rows = conn.execute(LIST_MEMBERS, (org_id, project_id)).fetchall()
    return MemberList(members=[_as_member(r) for r in rows])


#: A project member is an org member first (kept if already one).
JOIN_ORG = """
    INSERT INTO org_members (org_id, account_id, role) VALUES (%s, %s, 'member')
    ON CONFLICT DO NOTHING
"""
#: Adds the member or changes their role; ``created`` tells which. The change's time is
#: the inserted row's default (``now()``): Citus refuses a function in ``DO UPDATE SET``.
PUT_MEMBER = """
    INSERT INTO project_members (org_id, project_id, account_id, role)
    VALUES (%s, %s, %s, %s)
    ON CONFLICT (org_id, project_id, account_id) DO UPDATE
    SET role = excluded.role, updated_at = excluded.updated_at
    RETURNING account_id, role, created_at, updated_at, (xmax = 0) AS created
"""


def put_member(
    store: Store, principal: Principal, org_id: UUID, project_id: UUID, body: AddMemberRequest
) -> tuple[Member, bool]:
    """Add a person with a role, or change their role (admins, org owners); (member,
    created)."""
    require_owner(principal)
    with transaction(store.pool, principal.account_id) as conn:
        _member_manager(conn, org_id, project_id)
        _lock_members(conn, org_id, project_id)
        if body.role != "admin":
            _keep_an_admin(conn, org_id, project_id, body.accountId)
        try:
            conn.execute(JOIN_ORG, (org_id, body.accountId))
        except psycopg.errors.ForeignKeyViolation as ex:
            raise NotFound("no Grove account has that ID") from ex
        row = conn.execute(PUT_MEMBER, (org_id, project_id, body.accountId, body.role)).fetchone()
    assert row is not None
    return _as_member(row), bool(row["created"])


REMOVE_MEMBER = """
    DELETE FROM project_members WHERE org_id = %s AND project_id = %s
      AND account_id = %s RETURNING account_id
"""


def remove_member(
    store: Store, principal: Principal, org_id: UUID, project_id: UUID, account_id: UUID
) -> RemovedMember:
    """Remove a person from the project (admins, org owners); their keys stop working at
    once."""
    require_owner(principal)
    with transaction(store.pool, principal.account_id) as conn:
        _member_manager(conn, org_id, project_id)
        _lock_members(conn, org_id, project_id)
        _keep_an_admin(conn, org_id, project_id, account_id)
        row = conn.execute(REMOVE_MEMBER, (org_id, project_id, account_id)).fetchone()
    if row is None:
        raise NotFound("that account is not a member of this project")
    return RemovedMember(accountId=account_id, removed=True)


def create_key(
    store: Store,
    principal: Principal,
    org_id: UUID,
    project_id: UUID,
    body: CreateProjectKeyRequest,
) -> CreatedProjectKey:
    """A project key for agents (admins), hashed with ``store.key_secret``; the key is in
    this answer only."""
    require_owner(principal)
    if not store.key_secret:
        raise RuntimeError("this store has no key secret: it cannot issue project keys")
    with transaction(store.pool, principal.account_id) as conn:
        _project_role(conn, org_id, project_id, "admin")
        row, key = issue_project_key(
            conn,
            store.key_secret,
            org_id=org_id,
            project_id=project_id,
            created_by=principal.account_id,
            name=body.name,
            can_write="project_memory:write" in body.scopes,
        )
    return CreatedProjectKey(**dict(_as_key(row)), key=key)


#: The project's keys, newest first, revoked ones included.
LIST_KEYS = f"""
    SELECT {PROJECT_KEY_COLUMNS} FROM project_keys WHERE org_id = %s AND project_id = %s
    ORDER BY created_at DESC, id
"""


def list_keys(store: Store, principal: Principal, org_id: UUID, project_id: UUID) -> ProjectKeyList:
    """The project's keys, newest first, revoked ones included (admins)."""
    require_owner(principal)
    with transaction(store.pool, principal.account_id) as conn:
        _project_role(conn, org_id, project_id, "admin")
        rows = conn.execute(LIST_KEYS, (org_id, project_id)).fetchall()
    return ProjectKeyList(keys=[_as_key(r) for r in rows])


#: Revoking twice keeps the first revocation time (the key is then only found:
#: ``KEY_OF``). Two statements, not ``coalesce(revoked_at, now())``, which Citus refuses
#: in an ``UPDATE``.
REVOKE_KEY = """
    UPDATE project_keys SET revoked_at = now()
    WHERE org_id = %s AND project_id = %s AND id = %s AND revoked_at IS NULL RETURNING id
"""
KEY_OF = "SELECT id FROM project_keys WHERE org_id = %s AND project_id = %s AND id = %s"


def revoke_key(
    store: Store, principal: Principal, org_id: UUID, project_id: UUID, key_id: UUID
) -> RevokedProjectKey:
    """Revoke a project key for good (admins); effective on its next request."""
    require_owner(principal)
    with transaction(store.pool, principal.account_id) as conn:
        _project_role(conn, org_id, project_id, "admin")
        key = (org_id, project_id, key_id)
        row = conn.execute(REVOKE_KEY, key).fetchone() or conn.execute(KEY_OF, key).fetchone()
    if row is None:
        raise NotFound("no such key")
    return RevokedProjectKey(id=key_id, revoked=True)


#: The caller's role in a live org (no row: not a member, or no such org).
ORG_ROLE = """
    SELECT m.role FROM org_members m JOIN orgs o ON o.id = m.org_id
    WHERE m.org_id = %s AND m.account_id = grove_current_account()
      AND o.deleted_at IS NULL
"""


def _org_role(conn: Conn, org_id: UUID, need: str | None) -> str:
    """Enter the org; the caller's org role (404 if none, 403 if ``need`` is not met)."""
    set_project(conn, org_id, None)
    row = conn.execute(ORG_ROLE, (org_id,)).fetchone()
    if row is None:
        raise NotFound("no such org")
    if need is not None and row["role"] != need:
        raise Forbidden(f"only the org's {need}s may do this")
    return str(row["role"])


#: The caller's role in the project entered with ``set_project`` (NULL: none).
PROJECT_ROLE = "SELECT grove_project_role() AS role"


def _project_role(conn: Conn, org_id: UUID, project_id: UUID, need: str | None) -> str:
    """Enter the project; the caller's live role (404 unless a member of a live project
    of that org; 403 if ``need`` is not met)."""
    set_project(conn, org_id, project_id)
    role = conn.execute(PROJECT_ROLE).fetchone()
    if role is None or role["role"] is None:
        raise NotFound("no such project")
    if need is not None and role["role"] != need:
        raise Forbidden(f"only the project's {need}s may do this")
    return str(role["role"])


#: The caller's project and org roles, and whether the project and its org are live.
MANAGER_ROLES = """
    SELECT grove_project_role() AS project_role, grove_org_role(%s) AS org_role,
           EXISTS (SELECT 1 FROM org_projects p JOIN orgs o ON o.id = p.org_id
                   WHERE p.org_id = %s AND p.id = %s
                     AND p.deleted_at IS NULL AND o.deleted_at IS NULL) AS live
"""


def _member_manager(conn: Conn, org_id: UUID, project_id: UUID) -> None:
    """Enter the project as someone who may change its members: one of its admins, or an
    owner of its org (who can step in when no admin is left); else 404 or 403."""
    set_project(conn, org_id, project_id)
    row = conn.execute(MANAGER_ROLES, (org_id, org_id, project_id)).fetchone()
    assert row is not None
    if row["project_role"] == "admin" or (row["org_role"] == "owner" and row["live"]):
        return
    if row["project_role"] is None:
        raise NotFound("no such project")
    raise Forbidden("only the project's admins or the org's owners may do this")


LOCK_PROJECT = "SELECT 1 FROM org_projects WHERE org_id = %s AND id = %s FOR UPDATE"


def _lock_members(conn: Conn, org_id: UUID, project_id: UUID) -> None:
    """Serialize membership changes of one project (the last-admin rule needs it)."""
    conn.execute(LOCK_PROJECT, (org_id, project_id))


#: The project's admins other than ``leaving``, and whether ``leaving`` is one.
COUNT_ADMINS = """
    SELECT count(*) FILTER (WHERE account_id <> %s) AS others,
           count(*) FILTER (WHERE account_id = %s) AS leaving
    FROM project_members WHERE org_id = %s AND project_id = %s AND role = 'admin'
"""


def _keep_an_admin(conn: Conn, org_id: UUID, project_id: UUID, leaving: UUID) -> None:
    """Refuse a change that would leave the project without an admin."""
    row = conn.execute(COUNT_ADMINS, (leaving, leaving, org_id, project_id)).fetchone()
    if row is not None and row["leaving"] and not row["others"]:
        raise LastAdmin()


#: One live org with the caller's role (no row: not a member, or no such org).
SELECT_ORG = f"""
    SELECT {ORG_COLUMNS} FROM orgs o JOIN org_members m ON m.org_id = o.id
      AND m.account_id = grove_current_account()
    WHERE o.id = %s AND o.deleted_at IS NULL
"""


def _org(conn: Conn, org_id: UUID) -> Org:
    set_project(conn, org_id, None)
    row = conn.execute(SELECT_ORG, (org_id,)).fetchone()
    if row is None:
        raise NotFound("no such org")
    return _as_org(row)


#: The org's live projects (or only ``project``) the caller may see, with their role.
SELECT_PROJECTS = """
    SELECT p.id, p.org_id, p.name, p.created_at, pm.role FROM org_projects p
    LEFT JOIN project_members pm ON pm.org_id = p.org_id AND pm.project_id = p.id
      AND pm.account_id = grove_current_account()
    WHERE p.org_id = %(org)s AND p.deleted_at IS NULL
      AND (%(project)s::uuid IS NULL OR p.id = %(project)s)
      AND (pm.role IS NOT NULL OR grove_org_role(%(org)s) = 'owner')
    ORDER BY p.created_at, p.id
"""


def _projects(conn: Conn, org_id: UUID, project_id: UUID | None) -> list[Project]:
    """The org's live projects the caller may see (org owners: all), with their role."""
    rows = conn.execute(SELECT_PROJECTS, {"org": org_id, "project": project_id}).fetchall()
    return [
        Project(
            id=r["id"], orgId=r["org_id"], name=r["name"], role=r["role"], createdAt=r["created_at"]
        )
        for r in rows
    ]


def _as_org(row: dict[str, Any]) -> Org:
    return Org(
        id=row["id"],
        name=row["name"],
        role=row["role"],
        entitlements={"projectMemory": {"enabled": row["project_memory_enabled"]}},
        createdAt=row["created_at"],
    )


def _as_member(row: dict[str, Any]) -> Member:
    return Member(
        accountId=row["account_id"],
        role=row["role"],
        createdAt=row["created_at"],
        updatedAt=row["updated_at"],
    )


def _as_key(row: dict[str, Any]) -> ProjectKey:
    scopes = ["project_memory:read"] + (["project_memory:write"] if row["can_write"] else [])
    return ProjectKey(
        id=row["id"],
        name=row["name"],
        prefix=row["prefix"],
        scopes=scopes,
        createdBy=row["created_by"],
        createdAt=row["created_at"],
        revokedAt=row["revoked_at"],
    )
