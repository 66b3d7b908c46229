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

KID = "grove-dev-1"
JWKS_PATH = "/.well-known/dev-issuer/jwks.json"
TOKEN_SECONDS = 3600


def load_or_create_key(path: Path) -> rsa.RSAPrivateKey:
    """The dev issuer's private key, created (mode 600) on first use."""
    if not path.exists():
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        path.chmod(0o600)
    loaded = serialization.load_pem_private_key(path.read_bytes(), password=None)
    assert isinstance(loaded, rsa.RSAPrivateKey)
    return loaded


def jwks(path: Path) -> dict[str, Any]:
    """The public JWKS of the dev issuer's key."""
    public = load_or_create_key(path).public_key()
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(public))
    return {"keys": [{**jwk, "kid": KID, "alg": "RS256", "use": "sig"}]}


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
