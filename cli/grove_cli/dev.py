"""``grove dev``: the whole stack on this machine, in the foreground.

Starts (or reuses) the embedded PostgreSQL under ``.grove/pgdata``, creates the
migration, runtime, share and console roles, migrates, creates a demo account and key
once, starts grove-ask, grove-worker, grove-api and grove-mcp as the runtime role,
grove-share and grove-console (the owner website) as their own roles, writes
``.grove/dev.env`` when everything answers, and stops it all on Ctrl-C.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import sys
import time
from pathlib import Path
from types import FrameType
from uuid import UUID

import requests

from grove_auth import devissuer
from grove_auth.private_files import write_private
from grove_cli import admin, launch
from grove_db import embedded
from grove_db.migrate import migrate

STATE_DIR = Path(".grove")
READY_TIMEOUT_SECONDS = 60
STOP_TIMEOUT_SECONDS = 15
DEFAULT_API_PORT = "8080"
DEFAULT_ASK_PORT = "50051"
DEFAULT_MCP_PORT = "8081"
DEFAULT_SHARE_PORT = "8082"
DEFAULT_CONSOLE_PORT = "8083"
DEV_OWNER = "dev-owner"


def run() -> int:
    """Run until interrupted; the exit status is the services' if one dies."""
    STATE_DIR.mkdir(exist_ok=True)
    secret = _secret()
    db = embedded.start((STATE_DIR / "pgdata").resolve(), cleanup_mode="stop")
    migrate(db.migration_url, embedded.RUNTIME_ROLE, embedded.SHARE_ROLE, embedded.CONSOLE_ROLE)
    key = _demo_key(db.migration_url, secret)
    port = os.environ.get("GROVE_API_PORT", DEFAULT_API_PORT)
    ask_port = os.environ.get("GROVE_ASK_PORT", DEFAULT_ASK_PORT)
    profile = os.environ.get("GROVE_EMBEDDING_PROFILE", "minilm")
    api_url, ask_address = f"http://127.0.0.1:{port}", f"127.0.0.1:{ask_port}"
    env = {
        "GROVE_DATABASE_URL": db.runtime_url,
        "GROVE_SECRET_KEY": secret,
        "GROVE_API_HOST": "127.0.0.1",
        "GROVE_API_PORT": port,
        "GROVE_ASK_HOST": "127.0.0.1",
        "GROVE_ASK_PORT": ask_port,
        "GROVE_ASK_ADDRESS": ask_address,
        "GROVE_EMBEDDING_PROFILE": profile,
    }
    mcp_port = os.environ.get("GROVE_MCP_PORT", DEFAULT_MCP_PORT)
    env["GROVE_MCP_PORT"] = mcp_port
    mcp_url = f"http://127.0.0.1:{mcp_port}/mcp"
    share_port = os.environ.get("GROVE_SHARE_PORT", DEFAULT_SHARE_PORT)
    share_url = f"http://127.0.0.1:{share_port}"
    env.update(
        GROVE_SHARE_PORT=share_port,
        GROVE_SHARE_PUBLIC_URL=share_url,
        GROVE_SHARE_DATABASE_URL=db.share_url,
    )
    console_port = os.environ.get("GROVE_CONSOLE_PORT", DEFAULT_CONSOLE_PORT)
    console_url = f"http://127.0.0.1:{console_port}"
    env.update(
        GROVE_CONSOLE_PORT=console_port,
        GROVE_CONSOLE_DATABASE_URL=db.console_url,
        GROVE_CONSOLE_API_URL=api_url,
        # The website's own secret, as in production (not the server secret).
        GROVE_CONSOLE_SECRET_KEY=_secret("console-secret"),
    )
    identity = dev_identity(api_url, mcp_url, console_url)
    env.update(identity)
    names = ["grove-api", "grove-mcp", "grove-share", "grove-console"]
    if profile != "disabled":
        names = ["grove-ask", "grove-worker", *names]
    # Their logs go to this terminal; readiness is checked below through each service.
    services = {name: launch.start(name, env) for name in names}
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        if "grove-ask" in services and not _wait_ask(ask_address, services["grove-ask"]):
            print("grove dev: grove-ask did not become ready", file=sys.stderr)
            return 1
        for name, url in (
            ("grove-api", api_url),
            ("grove-mcp", mcp_url.removesuffix("/mcp")),
            ("grove-share", share_url),
            ("grove-console", console_url),
        ):
            if not _wait_ready(f"{url}/readyz", services[name]):
                print(f"grove dev: {name} did not become ready", file=sys.stderr)
                return 1
        _write_env(
            {
                "GROVE_API_URL": api_url,
                "GROVE_API_KEY": key,
                "GROVE_MCP_URL": mcp_url,
                "GROVE_SHARE_URL": share_url,
                "GROVE_CONSOLE_URL": console_url,
                "GROVE_ASK_ADDRESS": ask_address,
                "GROVE_DEMO_ACCOUNT": _demo_account(),
                **identity,
            },
            db,
        )
        _banner(api_url, mcp_url, share_url, console_url, key)
        while not stopping and all(s.process.poll() is None for s in services.values()):
            time.sleep(0.2)
        for name, service in services.items():
            code = service.process.poll()
            if code is not None and not stopping:
                print(f"grove dev: {name} exited with {code}", file=sys.stderr)
                return code or 1
        return 0
    finally:
        launch.stop_all(services.values(), timeout=STOP_TIMEOUT_SECONDS)
        (STATE_DIR / "dev.env").unlink(missing_ok=True)
        print("grove dev: stopped", file=sys.stderr)


def _wait_ask(address: str, ask: launch.Running) -> bool:
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline and ask.process.poll() is None:
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=1)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return True
            except grpc.RpcError:
                time.sleep(0.3)
    return False


def dev_identity(api_url: str, mcp_url: str, console_url: str) -> dict[str, str]:
    """Settings of the development identity provider (served by grove-api itself); the
    website (grove-console) signs in with it through its development sign-in."""
    return {
        "GROVE_DEV_AUTH": "1",
        "GROVE_DEV_ISSUER_KEY": str((STATE_DIR / "dev-issuer.pem").resolve()),
        "GROVE_OIDC_ISSUER": f"{api_url}{devissuer.ISSUER_PATH}",
        "GROVE_OIDC_AUDIENCE": devissuer.OWNER_AUDIENCE,
        "GROVE_OIDC_AUTHORIZED_PARTY": devissuer.CONSOLE_CLIENT,
        "GROVE_WEBSITE_ORIGIN": console_url,
        "GROVE_MCP_PUBLIC_URL": mcp_url,
    }


def _demo_account() -> str:
    return str(json.loads((STATE_DIR / "demo.json").read_text())["accountId"])


def _secret(name: str = "secret") -> str:
    """A random secret kept in ``.grove/<name>``, made on first use."""
    path = STATE_DIR / name
    if not path.exists():
        write_private(path, secrets.token_urlsafe(48).encode(), replace=False)
    return path.read_text().strip()


def _demo_key(migration_url: str, secret: str) -> str:
    """The demo account's key, created on the first run and reused afterwards."""
    path = STATE_DIR / "demo.json"
    if path.exists():
        return str(json.loads(path.read_text())["key"])
    account_id: UUID = admin.create_account(migration_url, "Demo")
    api_url = f"http://127.0.0.1:{os.environ.get('GROVE_API_PORT', DEFAULT_API_PORT)}"
    admin.add_owner(migration_url, account_id, f"{api_url}{devissuer.ISSUER_PATH}", DEV_OWNER)
    issued = admin.create_key(
        migration_url, secret, account_id, "demo", personal=True, all_notebooks=True
    )
    demo = {"accountId": str(account_id), "keyId": str(issued.id), "key": issued.key}
    write_private(path, json.dumps(demo).encode())
    return issued.key


def _wait_ready(url: str, service: launch.Running) -> bool:
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    while time.monotonic() < deadline and service.process.poll() is None:
        try:
            if requests.get(url, timeout=1).status_code == 200:
                return True
        except requests.RequestException:
            pass
        time.sleep(0.2)
    return False


def _write_env(urls: dict[str, str], db: embedded.EmbeddedDatabase) -> None:
    lines = [
        *(f"{name}={value}" for name, value in urls.items()),
        f"GROVE_DATABASE_URL='{db.runtime_url}'",
        f"GROVE_MIGRATION_DATABASE_URL='{db.migration_url}'",
        f"GROVE_SECRET_KEY={_secret()}",
    ]
    write_private(STATE_DIR / "dev.env", ("\n".join(lines) + "\n").encode())


def _banner(api_url: str, mcp_url: str, share_url: str, console_url: str, key: str) -> None:
    print(
        f"""
Grove is running.
  REST API   {api_url}/v1        (key: {key})
  MCP        {mcp_url}     (the same key as a Bearer token)
  shares     {share_url}/public/shares/…   (public links; see README "Public share links")
  website    {console_url}        (development sign-in as {DEV_OWNER}: approve agents, keys)
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
