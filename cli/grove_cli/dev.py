"""``grove dev``: the whole stack on this machine, in the foreground.

Starts (or reuses) the embedded PostgreSQL under ``.grove/pgdata``, creates the
migration, runtime, share and console roles, migrates, creates a demo account and key
once, starts grove-ask and waits for its model to serve, then grove-worker, grove-api
and grove-mcp as the runtime role, grove-share and grove-console (the owner website) as
their own roles, writes ``.grove/dev.env`` when everything answers, and stops it all on
Ctrl-C, each service once with SIGTERM: the doors, then the worker, then grove-ask.

With ``--citus`` the database is a Citus cluster instead (``grove_db.citus``: a
coordinator and two workers on loopback, from a copy of the embedded PostgreSQL with
the shared tools folder's Citus build installed), new for each run and removed on stop,
migrated with ``--citus``; the services connect to the coordinator.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType
from uuid import UUID

import requests

from grove_auth import devissuer
from grove_auth.private_files import write_private
from grove_cli import admin, launch
from grove_db import citus, embedded
from grove_db.migrate import migrate

STATE_DIR = Path(".grove")
READY_TIMEOUT_SECONDS = 60
#: grove-ask loads and warms up its model before it serves: seconds on an idle machine,
#: more than a minute on a busy one.
ASK_READY_TIMEOUT_SECONDS = 300
STOP_TIMEOUT_SECONDS = 15
DEFAULT_API_PORT = "8080"
DEFAULT_ASK_PORT = "50051"
DEFAULT_MCP_PORT = "8081"
DEFAULT_SHARE_PORT = "8082"
DEFAULT_CONSOLE_PORT = "8083"
DEV_OWNER = "dev-owner"


def run(*, distributed: bool = False) -> int:
    """Run until interrupted; the exit status is the services' if one dies.

    ``distributed``: on a Citus cluster of this run (``CitusMissing`` without the build).
    """
    STATE_DIR.mkdir(exist_ok=True)
    secret = _secret()
    if not distributed:
        db = embedded.start((STATE_DIR / "pgdata").resolve(), cleanup_mode="stop")
        return _serve(db, secret, STATE_DIR / "demo.json")
    # Three servers start before the services do: SIGTERM stops them as Ctrl-C does,
    # rather than leaving them running.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        db = start_cluster()
    except KeyboardInterrupt:  # citus.start stops the nodes it had started
        return 130
    try:
        return _serve(db, secret, STATE_DIR / "citus-demo.json")
    except KeyboardInterrupt:  # during the migration, before the services
        return 130
    finally:
        db.server.cleanup()
        (STATE_DIR / "citus-demo.json").unlink(missing_ok=True)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def start_cluster() -> embedded.EmbeddedDatabase:
    """A coordinator and two workers on loopback, new for this run, in a folder under
    the system's temporary folder (a short path: each node's socket is in its data
    directory). Citus comes from ``../shared/tools/citus`` beside this checkout, or
    ``GROVE_CITUS_TOOLS``."""
    tools = citus.tools_folder(Path.cwd().resolve())
    reason = citus.missing(tools)
    if reason:
        raise citus.CitusMissing(
            f"Citus is not available: {reason}. Put the Citus build there (the shared tools"
            " folder's citus/: citus-14.0.1-pg18-linux-x86_64.tar.gz and install.sh) or set"
            " GROVE_CITUS_TOOLS to its folder (docs/scaling.md)"
        )
    root = Path(tempfile.mkdtemp(prefix="grove-dev-citus-"))
    print(f"grove dev: starting a Citus coordinator and two workers in {root}", flush=True)
    try:
        return citus.start(tools, root)
    except BaseException:  # nodes already started are stopped by citus.start itself
        shutil.rmtree(root, ignore_errors=True)
        raise


def _serve(db: embedded.EmbeddedDatabase, secret: str, demo: Path) -> int:
    """Migrate ``db``, then run every service on it until interrupted."""
    migrate(
        db.migration_url,
        embedded.RUNTIME_ROLE,
        embedded.SHARE_ROLE,
        embedded.CONSOLE_ROLE,
        citus=isinstance(db.server, citus.Cluster),
    )
    key = _demo_key(db.migration_url, secret, demo)
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
    services: dict[str, launch.Running] = {}
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    # Until everything answers, SIGTERM ends the start-up as Ctrl-C does.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        if profile != "disabled":
            # The model first: the services started after it connect to a grove-ask that
            # serves, so the first recall finds it (a gRPC channel opened before it
            # listened waits out a reconnect backoff, answering inference_unavailable).
            services["grove-ask"] = _start("grove-ask", env)
            if not _wait_ask(ask_address, services["grove-ask"]):
                print("grove dev: grove-ask did not become ready", file=sys.stderr)
                return 1
            services["grove-worker"] = _start("grove-worker", env)
        for name in ("grove-api", "grove-mcp", "grove-share", "grove-console"):
            services[name] = _start(name, env)
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
                "GROVE_DEMO_ACCOUNT": _demo_account(demo),
                **identity,
            },
            db,
        )
        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        _banner(api_url, mcp_url, share_url, console_url, key, db)
        while not stopping and all(s.process.poll() is None for s in services.values()):
            time.sleep(0.2)
        for name, service in services.items():
            code = service.process.poll()
            if code is not None and not stopping:
                print(f"grove dev: {name} exited with {code}", file=sys.stderr)
                return code or 1
        return 0
    except KeyboardInterrupt:  # Ctrl-C (or SIGTERM) before everything answered
        return 130
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the stop below runs to its end
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        _stop(services)
        (STATE_DIR / "dev.env").unlink(missing_ok=True)
        print("grove dev: stopped", file=sys.stderr)


def _start(name: str, env: dict[str, str]) -> launch.Running:
    """Start a service writing its logs to this terminal, in a process group of its own:
    Ctrl-C reaches ``grove dev`` alone, which stops each service once (``_stop``)."""
    return launch.start(name, env, own_group=True)


def _stop(services: dict[str, launch.Running]) -> None:
    """Stop the services in order, each with one SIGTERM, waiting for each group: the
    doors first (no new requests), then the worker, then grove-ask that both use."""
    front = [s for name, s in services.items() if name not in ("grove-worker", "grove-ask")]
    for group in (front, [services.get("grove-worker")], [services.get("grove-ask")]):
        launch.stop_all([s for s in group if s is not None], timeout=STOP_TIMEOUT_SECONDS)


def _wait_ask(address: str, ask: launch.Running) -> bool:
    """Whether grove-ask serves (its model loaded) within ``ASK_READY_TIMEOUT_SECONDS``.

    A fresh channel for each try: one that failed to connect waits out a growing
    reconnect backoff, and would see a grove-ask that has just started serving late.
    """
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    deadline = time.monotonic() + ASK_READY_TIMEOUT_SECONDS
    while time.monotonic() < deadline and ask.process.poll() is None:
        with grpc.insecure_channel(address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            try:
                request = health_pb2.HealthCheckRequest(service="")
                reply = stub.Check(request, timeout=1, wait_for_ready=True)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return True
            except grpc.RpcError:
                pass
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


def _demo_account(demo: Path) -> str:
    return str(json.loads(demo.read_text())["accountId"])


def _secret(name: str = "secret") -> str:
    """A random secret kept in ``.grove/<name>``, made on first use."""
    path = STATE_DIR / name
    if not path.exists():
        write_private(path, secrets.token_urlsafe(48).encode(), replace=False)
    return path.read_text().strip()


def _demo_key(migration_url: str, secret: str, path: Path) -> str:
    """The demo account's key, created on the first run on a database and reused
    afterwards (kept in ``path``)."""
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


def _database(db: embedded.EmbeddedDatabase) -> str:
    """What the banner says of the database: the embedded server, or the cluster's nodes."""
    cluster = db.server
    if not isinstance(cluster, citus.Cluster):
        return "the embedded PostgreSQL (.grove/pgdata)"
    workers = ", ".join(f"127.0.0.1:{node.port}" for node in cluster.workers)
    return (
        f"Citus: coordinator 127.0.0.1:{cluster.coordinator.port}, workers {workers}"
        " (removed on stop)"
    )


def _banner(
    api_url: str,
    mcp_url: str,
    share_url: str,
    console_url: str,
    key: str,
    db: embedded.EmbeddedDatabase,
) -> None:
    print(
        f"""
Grove is running.
  database   {_database(db)}
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
