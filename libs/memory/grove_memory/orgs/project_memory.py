"""Project memory: one org project's shared pool of keyed records.

Every function takes an explicit ``ProjectScope`` and a freshly authenticated principal
(an owner session, or a project key) and checks, inside its own transaction, that the
person behind it is a live member of that project with the role the operation needs: no
grant is cached between calls. Row-level security enforces the same membership in
PostgreSQL (migration 0013). Keys must be the scope's own; personal API keys and agent
tokens are refused (``credential_not_allowed``).

Records are data, never instructions: every answer carries ``dataTrust`` and a notice,
client vectors are reported as ``client_supplied_unverified``, and nothing a body says
changes what the service does.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Literal
from uuid import UUID

from grove_auth.principal import Principal
from grove_contracts.project_memory import (
    EMBEDDING_ORIGIN,
    PROJECT_MEMORY_TOOLS_BY_NAME,
    ClientEmbedding,
    DeletedReply,
    ListRecordsQuery,
    RecordPage,
    RecordReply,
    RetrieveReply,
    RetrieveRequest,
    StatusReply,
    WriteRecordRequest,
)
from grove_db.errors import QuotaExceeded
from grove_db.pool import Conn, set_project, set_tenant, transaction
from grove_memory.errors import Forbidden, NotFound, ServiceError
from grove_memory.store import Store

#: What each project role holds: contributors share agent context (write and delete),
#: admins also manage members and keys.
PERMISSIONS = {
    "viewer": ["project:read"],
    "contributor": ["project:read", "project:share_agent_context"],
    "admin": ["project:read", "project:share_agent_context", "project:manage"],
}
#: Reciprocal rank fusion's constant, and how many candidates each ranking offers.
RRF_K = 60
CANDIDATES_PER_RESULT = 4


class CredentialNotAllowed(ServiceError):
    """Project memory takes owner sessions and project keys only: personal API keys and
    agent tokens are refused whatever their grants. Create a project key instead."""

    code = "credential_not_allowed"
    status = 403


class AuthorityProtected(ServiceError):
    """Keys write only observed records, cannot claim owner_confirmed, and cannot change
    or delete verified or pinned records: ask a project member to do it."""

    code = "authority_protected"
    status = 403


@dataclass(frozen=True)
class ProjectScope:
    """The one org project a call reads or changes."""

    org_id: UUID
    project_id: UUID


@dataclass(frozen=True)
class Access:
    """What ``_enter`` found: names, the person's live role and what the call may do."""

    org_name: str
    project_name: str
    role: str
    can_write: bool


ACCESS = """
    SELECT o.name AS org_name, o.project_memory_enabled, p.name AS project_name,
           grove_project_role() AS role,
           (SELECT a.deleted_at IS NULL FROM accounts a WHERE a.id = grove_current_account())
               AS account_live
    FROM orgs o JOIN org_projects p ON p.org_id = o.id
    WHERE o.id = %s AND p.id = %s AND o.deleted_at IS NULL AND p.deleted_at IS NULL
"""
LIVE = "(expires_at IS NULL OR expires_at > statement_timestamp())"
IN_SCOPE = "org_id = %(org)s AND project_id = %(project)s"
RECORD_COLUMNS = """
    key, title, body, body_sha256, kind, authority, prov_source, prov_ref,
    prov_verification, prov_observed_at, expires_at, embedding_space, embedding_dims,
    version, written_by, written_by_key, created_at, updated_at
"""
GET_RECORD = f"""
    SELECT {RECORD_COLUMNS} FROM project_memories
    WHERE {IN_SCOPE} AND key = %(key)s AND {LIVE}
"""
LIST_RECORDS = f"""
    SELECT {RECORD_COLUMNS} FROM project_memories
    WHERE {IN_SCOPE} AND {LIVE}
      AND (%(kind)s::text IS NULL OR kind = %(kind)s)
      AND (%(after)s::text IS NULL OR key > %(after)s)
    ORDER BY key LIMIT %(limit)s
"""
# Key principals may replace only observed records (or ones that have expired: an
# expired record is gone); an expired record's key starts afresh at version 1. The
# write's time is the inserted row's default (``excluded.updated_at``, the transaction's
# ``now()``): Citus refuses functions in ``DO UPDATE SET`` (docs/scaling.md).
UPSERT = f"""
    INSERT INTO project_memories AS m (
        org_id, project_id, key, title, body, body_sha256, kind, authority, prov_source,
        prov_ref, prov_verification, prov_observed_at, expires_at, embedding,
        embedding_space, embedding_dims, written_by, written_by_key)
    VALUES (%(org)s, %(project)s, %(key)s, %(title)s, %(body)s, %(sha)s, %(kind)s,
        %(authority)s, %(source)s, %(ref)s, %(verification)s, %(observed)s, %(expires)s,
        %(vector)s::vector, %(space)s, %(dims)s, %(actor)s, %(key_id)s)
    ON CONFLICT (org_id, project_id, key) DO UPDATE SET
        title = excluded.title, body = excluded.body, body_sha256 = excluded.body_sha256,
        kind = excluded.kind, authority = excluded.authority,
        prov_source = excluded.prov_source, prov_ref = excluded.prov_ref,
        prov_verification = excluded.prov_verification,
        prov_observed_at = excluded.prov_observed_at, expires_at = excluded.expires_at,
        embedding = excluded.embedding, embedding_space = excluded.embedding_space,
        embedding_dims = excluded.embedding_dims, written_by = excluded.written_by,
        written_by_key = excluded.written_by_key,
        version = CASE WHEN m.expires_at <= excluded.updated_at THEN 1 ELSE m.version + 1 END,
        created_at = CASE WHEN m.expires_at <= excluded.updated_at THEN excluded.created_at
                          ELSE m.created_at END,
        updated_at = excluded.updated_at
    WHERE NOT %(protect)s OR m.authority = 'observed' OR m.expires_at <= excluded.updated_at
    RETURNING {RECORD_COLUMNS}
"""
DELETE = f"""
    DELETE FROM project_memories
    WHERE {IN_SCOPE} AND key = %(key)s AND {LIVE} AND (NOT %(protect)s OR authority = 'observed')
    RETURNING body_sha256
"""
AUDIT = """
    INSERT INTO project_memory_audit (org_id, project_id, actor, credential, credential_id,
                                      action, key, body_sha256)
    VALUES (%(org)s, %(project)s, %(actor)s, %(credential)s, %(credential_id)s, %(action)s,
            %(key)s, %(sha)s)
"""
# One statement: full-text and (when a vector is sent) cosine candidates among records of
# the same space and dimensions, fused by reciprocal rank; then the winners are reloaded.
CANDIDATES = f"""
    WITH words AS (
        -- Any of the query's words (plainto_tsquery would require all of them).
        SELECT replace(plainto_tsquery('english', %(query)s)::text, '&', '|')::tsquery AS q
    ), lexical AS (
        SELECT key, row_number() OVER (ORDER BY ts_rank_cd(tsv, q) DESC, key) AS rank
        FROM project_memories, words
        WHERE {IN_SCOPE} AND {LIVE} AND tsv @@ q
        ORDER BY ts_rank_cd(tsv, q) DESC, key LIMIT %(candidates)s
    ), compatible AS (
        SELECT key, embedding FROM project_memories
        WHERE {IN_SCOPE} AND {LIVE} AND embedding IS NOT NULL
          AND embedding_space = %(space)s AND embedding_dims = %(dims)s
    ), semantic AS (
        SELECT key, row_number() OVER (ORDER BY embedding <=> %(vector)s::vector, key) AS rank
        FROM compatible ORDER BY embedding <=> %(vector)s::vector, key LIMIT %(candidates)s
    ), fused AS (
        SELECT key, sum(1.0 / ({RRF_K} + rank)) AS score,
               min(rank) FILTER (WHERE source = 'lexical') AS lexical_rank,
               min(rank) FILTER (WHERE source = 'semantic') AS semantic_rank
        FROM (SELECT key, rank, 'lexical' AS source FROM lexical
              UNION ALL SELECT key, rank, 'semantic' FROM semantic) ranked
        GROUP BY key ORDER BY score DESC, key LIMIT %(limit)s
    )
    SELECT (SELECT count(*) FROM compatible) AS compatible,
           coalesce(jsonb_agg(jsonb_build_object('key', key, 'score', score,
                    'lexical', lexical_rank, 'semantic', semantic_rank)), '[]') AS ranked
    FROM fused
"""
RELOAD = f"""
    SELECT {RECORD_COLUMNS} FROM project_memories
    WHERE {IN_SCOPE} AND key = ANY(%(keys)s) AND {LIVE}
"""


def reader(store: Store, principal: Principal, scope: ProjectScope) -> StatusReply:
    """Status: the switches are on and the caller may read; who and what it may do."""
    with transaction(store.pool) as conn:
        access = _enter(conn, store, principal, scope, "read")
    key = principal.project_key
    return StatusReply(
        enabled=True,
        org={"id": str(scope.org_id), "name": access.org_name},
        project={"id": str(scope.project_id), "name": access.project_name},
        access={
            "credential": _credential(principal),
            "keyId": str(key.key_id) if key else None,
            "role": access.role,
            "permissions": PERMISSIONS[access.role],
            "read": True,
            "write": access.can_write,
        },
    )


def get(store: Store, principal: Principal, scope: ProjectScope, key: str) -> RecordReply:
    """One live record; missing or expired: 404."""
    with transaction(store.pool) as conn:
        _enter(conn, store, principal, scope, "read")
        row = conn.execute(GET_RECORD, {**_scope(scope), "key": key}).fetchone()
    if row is None:
        raise NotFound("no record with that key")
    return RecordReply.model_validate({"record": record_json(row)})


def list(
    store: Store, principal: Principal, scope: ProjectScope, query: ListRecordsQuery
) -> RecordPage:
    """Live records in key order (byte order), after ``query.after``; ``nextCursor`` is
    the last key of a full page."""
    params = {**_scope(scope), "kind": query.kind, "after": query.after}
    with transaction(store.pool) as conn:
        _enter(conn, store, principal, scope, "read")
        rows = conn.execute(LIST_RECORDS, {**params, "limit": query.limit + 1}).fetchall()
    more = len(rows) > query.limit
    rows = rows[: query.limit]
    return RecordPage.model_validate(
        {
            "records": [record_json(r) for r in rows],
            "nextCursor": rows[-1]["key"] if more else None,
        }
    )


def upsert(
    store: Store, principal: Principal, scope: ProjectScope, body: WriteRecordRequest
) -> RecordReply:
    """Write a record, or replace the live one with the same key (audited)."""
    protect = principal.kind == "project_key"
    if protect and body.authority != "observed":
        raise AuthorityProtected("keys may write only observed records")
    if protect and body.provenance.verification == "owner_confirmed":
        raise AuthorityProtected("keys cannot claim owner_confirmed provenance")
    sha = hashlib.sha256(body.body.encode("utf-8")).digest()
    vector, space, dims = _vector(body.embedding)
    params = {
        **_scope(scope),
        "key": body.key,
        "title": body.title,
        "body": body.body,
        "sha": sha,
        "kind": body.kind,
        "authority": body.authority,
        "source": body.provenance.source,
        "ref": body.provenance.ref,
        "verification": body.provenance.verification,
        "observed": body.provenance.observedAt,
        "expires": body.expiresAt,
        "vector": vector,
        "space": space,
        "dims": dims,
        "actor": principal.account_id,
        "key_id": principal.project_key.key_id if principal.project_key else None,
        "protect": protect,
    }
    with transaction(store.pool) as conn:
        _enter(conn, store, principal, scope, "write")
        if body.expiresAt is not None:
            future = conn.execute(
                "SELECT %s > statement_timestamp() AS ok", (body.expiresAt,)
            ).fetchone()
            if not (future and future["ok"]):
                raise InvalidExpiry()
        if store.max_project_records:
            # Two concurrent creations in one project count each other.
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                (f"project_records:{scope.org_id}:{scope.project_id}",),
            )
        row = conn.execute(UPSERT, params).fetchone()
        if row is None:
            raise AuthorityProtected("that record is verified or pinned: a key cannot replace it")
        action = "create" if row["version"] == 1 else "replace"
        if action == "create" and store.max_project_records:
            _check_room(conn, scope, store.max_project_records)
        _audit(conn, principal, scope, action, body.key, sha)
    return RecordReply.model_validate({"record": record_json(row)})


def retrieve(
    store: Store, principal: Principal, scope: ProjectScope, body: RetrieveRequest
) -> RetrieveReply:
    """Ranked live records: full text, plus cosine among same-space vectors, by RRF."""
    vector, space, dims = _vector(body.embedding)
    params = {
        **_scope(scope),
        "query": body.query,
        "vector": vector,
        "space": space,
        "dims": dims,
        "limit": body.limit,
        "candidates": body.limit * CANDIDATES_PER_RESULT,
    }
    with transaction(store.pool) as conn:
        _enter(conn, store, principal, scope, "read")
        found = conn.execute(CANDIDATES, params).fetchone()
        assert found is not None  # an aggregate always answers one row
        ranked = found["ranked"]
        # Reloaded with the expiry test again: a record that expired since it was ranked
        # is not returned.
        rows = conn.execute(RELOAD, {**_scope(scope), "keys": [r["key"] for r in ranked]})
        by_key = {row["key"]: row for row in rows.fetchall()}
    records = [
        {
            **record_json(by_key[r["key"]]),
            "score": float(r["score"]),
            "ranks": {"lexical": r["lexical"], "semantic": r["semantic"]},
        }
        for r in ranked
        if r["key"] in by_key
    ]
    return RetrieveReply.model_validate(
        {
            "records": records,
            "semantic": {
                "requested": body.embedding is not None,
                "applied": found["compatible"] > 0,
                "space": space,
                "dimensions": dims,
                "compatibleRecords": found["compatible"],
                "origin": EMBEDDING_ORIGIN if body.embedding is not None else None,
            },
        }
    )


def delete(store: Store, principal: Principal, scope: ProjectScope, key: str) -> DeletedReply:
    """Delete a live record (audited); keys cannot delete verified or pinned ones."""
    protect = principal.kind == "project_key"
    with transaction(store.pool) as conn:
        _enter(conn, store, principal, scope, "write")
        row = conn.execute(DELETE, {**_scope(scope), "key": key, "protect": protect}).fetchone()
        if row is None:
            if protect and conn.execute(GET_RECORD, {**_scope(scope), "key": key}).fetchone():
                raise AuthorityProtected(
                    "that record is verified or pinned: a key cannot delete it"
                )
            raise NotFound("no record with that key")
        _audit(conn, principal, scope, "delete", key, row["body_sha256"])
    return DeletedReply(key=key, deleted=True)


class InvalidExpiry(ServiceError):
    """expiresAt: must be in the future."""

    code = "validation_error"
    status = 400


def _enter(
    conn: Conn,
    store: Store,
    principal: Principal,
    scope: ProjectScope,
    need: Literal["read", "write"],
) -> Access:
    """Check the switches, the credential and the person's live role; enter the project.

    Anything the caller may not read answers 404 alike (a foreign org, another org's
    project, a project they are not in, a switched-off pool), never a 403 with details.
    """
    if not store.project_memory_enabled:
        raise NotFound("project memory is not enabled")
    if principal.kind not in ("owner", "project_key"):
        raise CredentialNotAllowed()
    key = principal.project_key
    if key is not None and (key.org_id, key.project_id) != (scope.org_id, scope.project_id):
        raise NotFound("no such project")
    set_tenant(conn, principal.account_id)
    set_project(conn, scope.org_id, scope.project_id)
    row = conn.execute(ACCESS, (scope.org_id, scope.project_id)).fetchone()
    if (
        row is None
        or not row["project_memory_enabled"]
        or row["role"] is None
        or not row["account_live"]
    ):
        raise NotFound("no such project")
    can_write = row["role"] in ("contributor", "admin") and (key is None or key.can_write)
    if need == "write" and not can_write:
        if key is not None and not key.can_write:
            raise Forbidden("this key holds project_memory:read only")
        raise Forbidden(f"a {row['role']} cannot change project memory")
    return Access(row["org_name"], row["project_name"], row["role"], can_write)


def _check_room(conn: Conn, scope: ProjectScope, max_records: int) -> None:
    """Refuse a record beyond the pool's limit (the caller's write rolls back).

    Expired records count until a write replaces them.
    """
    row = conn.execute(
        f"SELECT count(*) AS held FROM project_memories WHERE {IN_SCOPE}", _scope(scope)
    ).fetchone()
    if row is not None and row["held"] > max_records:
        raise QuotaExceeded(
            f"this project's memory may hold at most {max_records} records; delete some first"
        )


def _scope(scope: ProjectScope) -> dict[str, Any]:
    return {"org": scope.org_id, "project": scope.project_id}


def _credential(principal: Principal) -> str:
    return "project_key" if principal.project_key else "owner_session"


def _vector(embedding: ClientEmbedding | None) -> tuple[str | None, str | None, int | None]:
    if embedding is None:
        return None, None, None
    text = "[" + ",".join(repr(float(v)) for v in embedding.values) + "]"
    return text, embedding.space, len(embedding.values)


def _audit(
    conn: Conn, principal: Principal, scope: ProjectScope, action: str, key: str, sha: bytes
) -> None:
    grant = principal.project_key
    conn.execute(
        AUDIT,
        {
            **_scope(scope),
            "actor": principal.account_id,
            "credential": _credential(principal),
            "credential_id": grant.key_id if grant else principal.connection_id,
            "action": action,
            "key": key,
            "sha": sha,
        },
    )


def record_json(row: dict[str, Any]) -> dict[str, Any]:
    """A record row as its wire resource."""
    return {
        "key": row["key"],
        "title": row["title"],
        "body": row["body"],
        "bodySha256": bytes(row["body_sha256"]).hex(),
        "kind": row["kind"],
        "authority": row["authority"],
        "provenance": {
            "source": row["prov_source"],
            "ref": row["prov_ref"],
            "verification": row["prov_verification"],
            "observedAt": row["prov_observed_at"],
        },
        "expiresAt": row["expires_at"],
        "embedding": (
            {
                "space": row["embedding_space"],
                "dimensions": row["embedding_dims"],
                "origin": EMBEDDING_ORIGIN,
            }
            if row["embedding_space"] is not None
            else None
        ),
        "version": row["version"],
        "writtenBy": {
            "accountId": row["written_by"],
            "credential": "project_key" if row["written_by_key"] else "owner_session",
            "keyId": row["written_by_key"],
        },
        "createdAt": row["created_at"],
        "updatedAt": row["updated_at"],
    }


def call_tool(
    store: Store, principal: Principal, name: str, arguments: dict[str, Any]
) -> dict[str, Any]:
    """Run one ``project_memory_*`` MCP tool: the same functions as the REST routes.

    The MCP edge of project memory: answers the JSON of the tool's output model (the
    tool result's ``structuredContent``).
    """
    tool = PROJECT_MEMORY_TOOLS_BY_NAME[name]
    request: Any = tool.input_model.model_validate(arguments)
    data: dict[str, Any] = _run_tool(store, principal, name, request).model_dump(mode="json")
    return data


def _run_tool(
    store: Store, principal: Principal, name: str, request: Any
) -> StatusReply | RecordPage | RecordReply | RetrieveReply | DeletedReply:
    scope = ProjectScope(request.orgId, request.projectId)
    if name == "project_memory_status":
        return reader(store, principal, scope)
    if name == "project_memory_list":
        return list(store, principal, scope, request)
    if name == "project_memory_get":
        return get(store, principal, scope, request.key)
    if name == "project_memory_write":
        return upsert(store, principal, scope, request)
    if name == "project_memory_retrieve":
        return retrieve(store, principal, scope, request)
    return delete(store, principal, scope, request.key)


def tools_for(store: Store, principal: Principal) -> bool:
    """Whether ``tools/list`` shows the project tools to this credential: a project key,
    both switches on, and its creator still in the project."""
    key = principal.project_key
    if key is None or not store.project_memory_enabled:
        return False
    try:
        reader(store, principal, ProjectScope(key.org_id, key.project_id))
    except ServiceError:
        return False
    return True
