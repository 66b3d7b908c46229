"""The authenticated caller, whatever credential it presented."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal
from uuid import UUID


@dataclass(frozen=True)
class ProjectKeyGrant:
    """What a project key holds: one org project and the ``project_memory`` family.

    The key acts for the account that created it (``Principal.account_id``), whose live
    membership in the project caps these on every request.
    """

    key_id: UUID
    org_id: UUID
    project_id: UUID
    can_read: bool
    can_write: bool


@dataclass(frozen=True)
class Principal:
    """One connection's standing access to one account.

    ``personal`` grants the account's personal notes (``projectId: null``);
    ``all_notebooks`` grants every current and future notebook; otherwise only the
    notebooks in ``notebook_ids``. Capabilities are read, write and delete.
    """

    account_id: UUID
    connection_id: UUID
    personal: bool
    all_notebooks: bool
    notebook_ids: frozenset[UUID] = field(default_factory=frozenset)
    can_read: bool = True
    can_write: bool = False
    can_delete: bool = False
    kind: Literal["api_key", "oauth", "owner", "project_key"] = "api_key"
    #: For an OAuth client the owner has not approved yet: where to approve it.
    approval_url: str | None = None
    #: For such a client: the owner revoked it (rather than never approving it yet).
    revoked: bool = False
    client_id: str | None = None
    #: For an owner session: the identity (issuer, subject) and when its token expires,
    #: so work that outlives the request's start can check the session again.
    owner_identity: tuple[str, str] | None = None
    session_expires_at: datetime | None = None
    #: For a project key (``kind == "project_key"``): its project and family grants. Such
    #: a principal has no personal or notebook grants at all.
    project_key: ProjectKeyGrant | None = None

    @property
    def is_owner(self) -> bool:
        """An owner session: the account's person, not one of its connections."""
        return self.kind == "owner"

    def may_see_notebook(self, notebook_id: UUID | None) -> bool:
        """Whether notes in this scope (``None`` is personal) are granted."""
        if notebook_id is None:
            return self.personal
        return self.all_notebooks or notebook_id in self.notebook_ids

    def scope_params(self) -> dict[str, Any]:
        """Parameters for the SQL scope predicate in ``grove_memory.scope``."""
        return {
            "account_id": self.account_id,
            "personal": self.personal,
            "all_notebooks": self.all_notebooks,
            "notebook_ids": sorted(self.notebook_ids),
        }
