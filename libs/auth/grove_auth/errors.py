"""Authentication errors: every one is an ``AuthError``."""

from __future__ import annotations

from grove_contracts.errors import GroveError


class AuthError(GroveError):
    """The credential, or what it asked to do with connections and keys, was refused."""

    code = "forbidden"
    status = 403


class Unauthorized(AuthError):
    """Missing or invalid credentials."""

    code = "unauthorized"
    status = 401


class ProviderUnavailable(AuthError):
    """The identity provider could not be reached to verify the credential; try again."""

    code = "auth_provider_unavailable"
    status = 503


class GrantError(AuthError):
    """The connection or key operation was refused."""

    code = "forbidden"
    status = 403


class OwnerSessionRequired(GrantError):
    """Only the account owner's session may do this; keys and agent tokens may not."""

    code = "owner_session_required"
    status = 403


class ConnectionRequired(GrantError):
    """This OAuth client is not approved yet: the account owner must approve it."""

    code = "connection_required"
    status = 403

    def __init__(self, approval_url: str, client_id: str, revoked: bool = False) -> None:
        state = "revoked this client's access" if revoked else "has not approved this client"
        super().__init__(
            f"the account owner {state} ({client_id}){'' if revoked else ' yet'};"
            f" ask them to open {approval_url}{' to approve it again' if revoked else ''}"
        )
        self.extra = {"approvalUrl": approval_url, "clientId": client_id}


class IdentityNotProvisioned(GrantError):
    """The signed-in identity owns no Grove account."""

    code = "identity_not_provisioned"
    status = 403


class ConnectionNotFound(GrantError):
    """No such connection or key."""

    code = "not_found"
    status = 404


class ConnectionConflict(GrantError):
    """The connection changed since you read it (expectedState differs); read it again."""

    code = "connection_conflict"
    status = 409


class InvalidGrant(GrantError):
    """The grants are not valid."""

    code = "validation_error"
    status = 400
