"""The server secret every test service shares, and how keys are stored under it."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from grove_auth.keys import derive_secret, hash_key

SECRET = "test-server-secret-" + secrets.token_hex(16)
#: grove-console's own secret (its sessions and sign-in cookie), never the server secret.
CONSOLE_SECRET_KEY = "test-console-secret-" + secrets.token_hex(16)


def assert_stored_as_keyed_hash(key: str, stored: bytes) -> None:
    """Check ``stored`` is the key's HMAC-SHA-256 under the API-key secret derived from the
    server secret (as grove-api, grove-mcp and ``grove keys`` store keys), not a plain hash.
    """
    key_secret = derive_secret(SECRET, "api-key")
    keyed = hmac.new(key_secret, key.encode(), hashlib.sha256).digest()
    assert stored == keyed == hash_key(key_secret, key)
    assert stored != hashlib.sha256(key.encode()).digest()
