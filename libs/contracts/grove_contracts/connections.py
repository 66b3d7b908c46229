"""Connections (an agent's standing access) and API keys, as the owner manages them."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

from pydantic import BaseModel, Field

from grove_contracts.notes import Strict

Capability = Literal["memory:read", "memory:write", "memory:delete"]


class Grants(Strict):
    """What a connection may reach and do. A notebook grant never covers its children."""

    personal: bool = True
    allProjects: bool = False
    projectIds: Annotated[list[UUID], Field(default_factory=list, max_length=1000)]
    capabilities: Annotated[
        list[Capability],
        Field(
            default_factory=lambda: ["memory:read", "memory:write", "memory:delete"],
            min_length=1,
        ),
    ]


class CreateKeyRequest(Strict):
    """Create an API key (and its connection) with grants; the secret is shown once."""

    name: Annotated[str, Field(min_length=1, max_length=200)]
    grants: Annotated[Grants, Field(default_factory=lambda: Grants.model_validate({}))]


class UpdateConnectionRequest(Strict):
    """Change a connection's grants, guarded by the state fingerprint the caller read."""

    grants: Grants
    expectedState: Annotated[str, Field(min_length=1, max_length=100)] | None = None


class PendingRequest(BaseModel):
    """An OAuth client's outstanding approval request."""

    id: UUID
    expiresAt: datetime


class Connection(BaseModel):
    """A connection as its owner sees it."""

    id: UUID
    name: str
    kind: Literal["api_key", "oauth"]
    status: Literal["active", "pending", "revoked"]
    #: Null for an OAuth client that was never approved: it holds nothing.
    grants: Grants | None
    keyPrefix: str | None
    clientId: str | None
    pendingRequest: PendingRequest | None
    lastContactAt: datetime | None
    createdAt: datetime
    revokedAt: datetime | None
    state: str


class Attempt(BaseModel):
    """What an unapproved client tried and was refused: the tool, the capability it
    needs, and where (a notebook, or null for personal notes or no notebook named)."""

    tool: str
    capability: Literal["read", "write", "delete"]
    projectId: UUID | None


class ConnectionRequest(BaseModel):
    """An OAuth client's approval request, as the approval page shows it.

    ``clientName`` and ``clientVersion`` are what the MCP client says it is (its
    ``clientInfo``), not verified by the provider; ``clientId`` is what the provider
    issued. ``status`` is ``pending`` while it can be answered.
    """

    id: UUID
    status: Literal["pending", "expired", "approved", "denied", "withdrawn"]
    clientId: str | None
    clientName: str | None
    clientVersion: str | None
    scopes: list[str]
    requestedAt: datetime | None
    expiresAt: datetime | None
    #: What the client tried while waiting (its refused tool calls, the latest last).
    attempts: list[Attempt] = []
    connection: Connection


class CreatedKey(BaseModel):
    """A new key: ``key`` is the secret, shown only in this response."""

    id: UUID
    key: str
    connection: Connection


class ConnectionList(BaseModel):
    """Every connection of the account, newest first."""

    items: list[Connection]


class ApiKey(BaseModel):
    """An API key as its owner sees it: its ID and its connection (never the secret)."""

    id: UUID
    connection: Connection


class ApiKeyList(BaseModel):
    """Every API key of the account, newest first."""

    items: list[ApiKey]


class Approval(Strict):
    """Approve a pending OAuth client with these grants."""

    grants: Grants


class DeleteAccountRequest(Strict):
    """Delete the account: type the confirmation phrase exactly."""

    confirmation: Annotated[str, Field(max_length=100)]


class DeletedAccount(BaseModel):
    """The account is deleted: credentials revoked, notes hidden, identities tombstoned."""

    deleted: Literal[True]
    accountId: UUID
