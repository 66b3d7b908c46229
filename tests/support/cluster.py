"""One Citus cluster for a whole test run, shared by its parallel test processes.

A cluster is three PostgreSQL servers and takes seconds to start; under pytest-xdist each
process that draws a Citus test would otherwise start its own. The first process to
need one starts it (``grove_db.citus``) and migrates it with ``--citus``; the others
find it in a file beside pytest's temporary folders, which every process of one run
shares. Each counts itself in and out, and the last one out stops it.
"""

from __future__ import annotations

import fcntl
import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

from grove_db import citus, embedded
from grove_db.migrate import migrate

#: Shards per table: a few on each worker, so that accounts spread over shards and
#: nodes as on a production cluster, while placing the tables takes half the
#: time of Citus's default 32 (5 s instead of 10 on this loaded 2-core machine).
SHARDS = 8
#: The prefix of tables a test makes for a while on the shared cluster (a throwaway
#: migration's): checks of the whole cluster's placement leave them out.
THROWAWAY = "throwaway_"


@contextmanager
def _locked(folder: Path) -> Iterator[Path]:
    """The cluster's state file, under an exclusive lock while the block runs."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "citus.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield folder / "citus.json"


def join(tools: Path, folder: Path) -> embedded.EmbeddedDatabase:
    """The run's cluster, started and migrated by the first process that asks."""
    with _locked(folder) as state:
        if state.exists():
            shared = json.loads(state.read_text())
        else:
            db = citus.start(tools, folder / "cluster")
            citus.set_shard_count(db, SHARDS)
            migrate(
                db.migration_url,
                embedded.RUNTIME_ROLE,
                embedded.SHARE_ROLE,
                embedded.CONSOLE_ROLE,
                citus=True,
            )
            citus.refuse_fan_out(db)
            cluster: citus.Cluster = db.server
            shared = {
                "users": 0,
                "urls": {k: v for k, v in asdict(db).items() if k != "server"},
                "ports": [node.port for node in cluster.nodes],
                "pginstall": str(cluster.pginstall),
            }
        shared["users"] += 1
        state.write_text(json.dumps(shared))
    return embedded.EmbeddedDatabase(server=_cluster(folder, shared), **shared["urls"])


def leave(folder: Path) -> None:
    """Count this process out; the last one stops the cluster and removes the folder (a
    process that asks later starts a new one)."""
    with _locked(folder) as state:
        shared = json.loads(state.read_text())
        shared["users"] -= 1
        if shared["users"] > 0:
            state.write_text(json.dumps(shared))
            return
        _cluster(folder, shared).cleanup()
    shutil.rmtree(folder, ignore_errors=True)


def _cluster(folder: Path, shared: dict[str, object]) -> citus.Cluster:
    """The ``Cluster`` a state file describes."""
    root = folder / "cluster"
    ports = shared["ports"]
    assert isinstance(ports, list)
    nodes = [citus.Node(root / f"node{n}", int(port)) for n, port in enumerate(ports)]
    return citus.Cluster(root, Path(str(shared["pginstall"])), nodes[0], nodes[1:])
