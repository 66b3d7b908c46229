"""``grove dev``: the whole stack on this machine, in the foreground.

Starts (or reuses) the embedded PostgreSQL under ``.grove/pgdata``, creates the
migration and runtime roles, migrates, creates a demo account and key once, starts
the services as the runtime role, writes ``.grove/dev.env`` when everything answers,
and stops it all on Ctrl-C.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType
from uuid import UUID

import requests

from grove_cli import admin
from grove_db import embedded
from grove_db.migrate import migrate

STATE_DIR = Path(".grove")
READY_TIMEOUT_SECONDS = 60
DEFAULT_API_PORT = "8080"


def run() -> int:
    """Run until interrupted; the exit status is the services' if one dies."""
    STATE_DIR.mkdir(exist_ok=True)
    secret = _secret()
    db = embedded.start((STATE_DIR / "pgdata").resolve(), cleanup_mode="stop")
    migrate(db.migration_url, embedded.RUNTIME_ROLE)
    key = _demo_key(db.migration_url, secret)
    port = os.environ.get("GROVE_API_PORT", DEFAULT_API_PORT)
    api_url = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "GROVE_DATABASE_URL": db.runtime_url,
        "GROVE_SECRET_KEY": secret,
        "GROVE_API_PORT": port,
        "GROVE_API_HOST": "127.0.0.1",
    }
    api = subprocess.Popen([_script("grove-api")], env=env)
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        if not _wait_ready(f"{api_url}/readyz", api):
            print("grove dev: grove-api did not become ready", file=sys.stderr)
            return 1
        _write_env(api_url, key, db)
        _banner(api_url, key)
        while not stopping and api.poll() is None:
            time.sleep(0.2)
        return 0 if stopping else (api.returncode or 1)
    finally:
        if api.poll() is None:
            api.terminate()
            try:
                api.wait(timeout=15)
            except subprocess.TimeoutExpired:
                api.kill()
        (STATE_DIR / "dev.env").unlink(missing_ok=True)
        print("grove dev: stopped", file=sys.stderr)


def _script(name: str) -> str:
    candidate = Path(sys.executable).with_name(name)
    return str(candidate) if candidate.exists() else name


def _secret() -> str:
    path = STATE_DIR / "secret"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(48))
        path.chmod(0o600)
    return path.read_text().strip()


def _demo_key(migration_url: str, secret: str) -> str:
    """The demo account's key, created on the first run and reused afterwards."""
    path = STATE_DIR / "demo.json"
    if path.exists():
        return str(json.loads(path.read_text())["key"])
    account_id: UUID = admin.create_account(migration_url, "Demo")
    issued = admin.create_key(
        migration_url, secret, account_id, "demo", personal=True, all_projects=True
    )
    path.write_text(
        json.dumps({"accountId": str(account_id), "keyId": str(issued.id), "key": issued.key})
    )
    path.chmod(0o600)
    return issued.key


def _wait_ready(url: str, process: subprocess.Popen[bytes]) -> bool:
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if requests.get(url, timeout=1).status_code == 200:
                return True
        except requests.RequestException:
            pass
        time.sleep(0.2)
    return False


def _write_env(api_url: str, key: str, db: embedded.EmbeddedDatabase) -> None:
    lines = [
        f"GROVE_API_URL={api_url}",
        f"GROVE_API_KEY={key}",
        f"GROVE_DATABASE_URL='{db.runtime_url}'",
        f"GROVE_MIGRATION_DATABASE_URL='{db.migration_url}'",
        f"GROVE_SECRET_KEY={_secret()}",
    ]
    path = STATE_DIR / "dev.env"
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o600)


def _banner(api_url: str, key: str) -> None:
    print(
        f"""
Grove is running.
  REST API   {api_url}/v1        (key: {key})
  settings   .grove/dev.env       (source it: set -a; . .grove/dev.env; set +a)

Try:
  curl -s -X POST {api_url}/v1/memories -H "Authorization: Bearer {key}" \\
       -H 'Content-Type: application/json' \\
       -d '{{"content": "We deploy with Argo CD every Tuesday", "kind": "fact"}}'
  curl -s -X POST {api_url}/v1/recall -H "Authorization: Bearer {key}" \\
       -H 'Content-Type: application/json' -d '{{"query": "deploy"}}'

Ctrl-C stops everything.
""",
        flush=True,
    )
