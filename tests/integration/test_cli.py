"""The ``grove`` admin command: accounts, keys, grants and permanent revocation."""

from __future__ import annotations

import subprocess

import requests

from grove_db import embedded
from tests.support.keys import SECRET, assert_stored_as_keyed_hash
from tests.support.processes import run_script


def grove(database: embedded.EmbeddedDatabase, *args: str) -> subprocess.CompletedProcess[str]:
    result = run_script(
        "grove",
        *args,
        env={"GROVE_MIGRATION_DATABASE_URL": database.migration_url, "GROVE_SECRET_KEY": SECRET},
    )
    assert result.returncode == 0, result.stderr
    return result


def test_created_key_works_until_revoked_for_good(
    database: embedded.EmbeddedDatabase, api_url: str
) -> None:
    account = grove(database, "accounts", "create", "--name", "CLI account").stdout.strip()
    created = grove(database, "keys", "create", "--account", account, "--name", "laptop")
    key = created.stdout.strip()
    key_id = created.stderr.split("key id: ")[1].split()[0]
    assert key.startswith("grv_") and len(key) >= 4 + 43
    headers = {"Authorization": f"Bearer {key}"}
    saved = requests.post(
        f"{api_url}/v1/memories", json={"content": "c", "kind": "fact"}, headers=headers, timeout=10
    )
    assert saved.status_code == 201
    grove(database, "keys", "revoke", "--account", account, key_id)
    after = requests.get(f"{api_url}/v1/memories", headers=headers, timeout=10)
    assert after.status_code == 401
    again = run_script(
        "grove",
        *("keys", "revoke", "--account", account, key_id),
        env={"GROVE_MIGRATION_DATABASE_URL": database.migration_url},
    )
    assert again.returncode != 0
    # Refused because the key is already revoked (not, say, a crash or a missing setting).
    assert again.returncode == 1 and again.stdout == ""
    assert again.stderr.strip() == "grove: no live key with that ID in that account"


def test_read_only_key_reads_but_cannot_write(
    database: embedded.EmbeddedDatabase, api_url: str
) -> None:
    account = grove(database, "accounts", "create", "--name", "RO").stdout.strip()
    key = grove(
        database, "keys", "create", "--account", account, "--name", "ro", "--read-only"
    ).stdout.strip()
    headers = {"Authorization": f"Bearer {key}"}
    assert requests.get(f"{api_url}/v1/memories", headers=headers, timeout=10).status_code == 200
    denied = requests.post(
        f"{api_url}/v1/memories", json={"content": "c", "kind": "fact"}, headers=headers, timeout=10
    )
    assert denied.status_code == 403


def test_keys_are_stored_only_as_keyed_hashes(database: embedded.EmbeddedDatabase) -> None:
    import psycopg

    account = grove(database, "accounts", "create", "--name", "hash").stdout.strip()
    key = grove(database, "keys", "create", "--account", account, "--name", "k").stdout.strip()
    grove_db = database.grove_superuser_url
    with psycopg.connect(grove_db) as conn:
        rows = conn.execute(
            "SELECT prefix, key_hash FROM api_keys WHERE account_id = %s", (account,)
        ).fetchall()
    assert len(rows) == 1
    prefix, digest = rows[0]
    assert key.startswith(prefix) and len(prefix) < 16
    assert key.encode() not in bytes(digest) and len(bytes(digest)) == 32
    assert_stored_as_keyed_hash(key, bytes(digest))
