"""A development identity provider, so ``make dev`` works without a real one.

Enabled only by ``GROVE_DEV_AUTH=1`` and refused when ``GROVE_ENV=production``. Its
RSA key lives under ``.grove/``; grove-api serves the public half as a JWKS, and
``grove dev-token`` signs owner-session or agent tokens with it.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from grove_auth.private_files import write_private

KID = "grove-dev-1"
#: The issuer is ``{api}/dev-issuer``; grove-api serves its discovery document and keys.
ISSUER_PATH = "/dev-issuer"
DISCOVERY_PATH = ISSUER_PATH + "/.well-known/openid-configuration"
JWKS_PATH = ISSUER_PATH + "/jwks"
#: The audience of development owner tokens (the API, as a provider would name it).
OWNER_AUDIENCE = "grove-api"
TOKEN_SECONDS = 3600
#: The client development owner tokens name (the website's, as a provider would issue it).
CONSOLE_CLIENT = "grove-dev-console"


def load_or_create_key(path: Path) -> rsa.RSAPrivateKey:
    """The dev issuer's private key, created (mode 600) on first use.

    Creation is atomic (a private temporary file hard-linked into place), so processes
    starting together (grove-api's workers, ``grove dev-token``) agree on one key.
    """
    if not path.exists():
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        write_private(path, pem, replace=False)
    loaded = serialization.load_pem_private_key(path.read_bytes(), password=None)
    assert isinstance(loaded, rsa.RSAPrivateKey)
    return loaded


def jwks(path: Path) -> dict[str, Any]:
    """The public JWKS of the dev issuer's key."""
    public = load_or_create_key(path).public_key()
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(public))
    return {"keys": [{**jwk, "kid": KID, "alg": "RS256", "use": "sig"}]}


def discovery(issuer: str) -> dict[str, Any]:
    """The dev issuer's discovery document: it signs tokens and has no login pages."""
    return {
        "issuer": issuer,
        "jwks_uri": issuer + "/jwks",
        "id_token_signing_alg_values_supported": ["RS256"],
        "subject_types_supported": ["public"],
        "response_types_supported": [],
    }


def owner_claims(audience: str) -> dict[str, Any]:
    """The claims that make a development token an owner session for ``audience``."""
    return {"aud": audience, "client_id": CONSOLE_CLIENT}


def token(path: Path, issuer: str, subject: str, claims: dict[str, Any]) -> str:
    """A signed token for ``subject`` with the given extra claims."""
    now = int(time.time())
    body = {
        "iss": issuer,
        "sub": subject,
        "iat": now,
        "nbf": now,
        "exp": now + TOKEN_SECONDS,
        "jti": uuid.uuid4().hex,
        **claims,
    }
    return jwt.encode(body, load_or_create_key(path), algorithm="RS256", headers={"kid": KID})
