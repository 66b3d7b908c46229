"""``grove dev --citus``: the stack on a Citus cluster of its own, as someone trying it runs it.

It starts for real in a scratch directory on free ports (lexical only, so without
grove-ask and the worker, to stay quick), serves a save and a recall through the api on
a coordinator with two workers, and Ctrl-C stops the services and the cluster. Without
the Citus build it says what is missing in one line.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import psycopg
import pytest

from grove_cli.launch import free_port, script
from tests.support.clients import Client, data_of
from tests.support.dev import ALARMS, Dev

#: How long ``grove dev --citus`` may take to serve on a busy machine (three nodes).
READY_SECONDS = 300


def settings(home: Path) -> dict[str, str]:
    """``.grove/dev.env`` as a shell would read it."""
    lines = (home / ".grove" / "dev.env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


def test_grove_dev_citus_serves_on_a_cluster_and_ctrl_c_stops_it(citus_tools: Path) -> None:
    # Under /tmp as the suite's database is: the embedded PostgreSQL's own user reaches it.
    home = Path(tempfile.mkdtemp(prefix="grove-dev-citus-test-"))
    ports = {f"GROVE_{n}_PORT": str(free_port()) for n in ("API", "MCP", "SHARE", "CONSOLE")}
    metrics = {f"GROVE_{n}_METRICS_PORT": "0" for n in ("API", "MCP", "SHARE", "CONSOLE")}
    process = subprocess.Popen(
        [script("grove"), "dev", "--citus"],
        cwd=home,
        env={
            **os.environ,
            **ports,
            **metrics,
            "GROVE_EMBEDDING_PROFILE": "disabled",
            "GROVE_CITUS_TOOLS": str(citus_tools),
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own terminal, as it were: Ctrl-C goes to its group
    )
    dev = Dev(home, process)
    reader = threading.Thread(target=dev.read, daemon=True)
    reader.start()
    try:
        assert dev.ready.get(timeout=READY_SECONDS), "".join(dev.lines[-40:])
        found = settings(home)
        client = Client(found["GROVE_API_URL"], found["GROVE_API_KEY"])
        saved = client.save("The cluster keeps the notes of each account together")
        recalled = data_of(client.post("/v1/recall", {"query": "cluster notes"}))
        assert recalled["items"][0]["memory"]["id"] == saved["id"]
        # The services' database is the coordinator of a distributed schema.
        coordinator = found["GROVE_MIGRATION_DATABASE_URL"].strip("'")
        with psycopg.connect(coordinator) as conn:
            nodes = conn.execute("SELECT count(*) FROM pg_dist_node").fetchone()
            placed = conn.execute(
                "SELECT citus_table_type FROM citus_tables WHERE table_name = 'memories'::regclass"
            ).fetchone()
        assert (nodes, placed) == ((3,), ("distributed",))
        started = next(line for line in dev.lines if "starting a Citus coordinator" in line)
        root = Path(started.rsplit(" in ", 1)[1].strip())
        assert root.is_dir()
        printed = len(dev.lines)
        assert dev.interrupt() == 0
        stopping = "".join(dev.lines[printed:])
        assert stopping.rstrip().endswith("grove dev: stopped"), stopping[-2000:]
        assert not [alarm for alarm in ALARMS if alarm in stopping], stopping
        # The cluster went with it: its nodes stopped and its folder removed.
        assert not root.exists()
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(coordinator, connect_timeout=5).close()
    finally:
        if process.poll() is None:  # the test failed first: stop it as the test would
            dev.interrupt()
        reader.join(30)
        if not reader.is_alive():
            assert process.stdout is not None
            process.stdout.close()
        shutil.rmtree(home, ignore_errors=True)


def test_grove_dev_citus_without_the_citus_build_names_what_is_missing(tmp_path: Path) -> None:
    tools = tmp_path / "no-citus-here"
    done = subprocess.run(
        [script("grove"), "dev", "--citus"],
        cwd=tmp_path,
        env={**os.environ, "GROVE_CITUS_TOOLS": str(tools)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.count("\n") == 1, done.stderr  # one line, no traceback
    assert done.stderr.startswith(
        f"grove: Citus is not available: {tools}/citus-14.0.1-pg18-linux-x86_64.tar.gz is"
        " missing. Put the Citus build there"
    ), done.stderr
    assert "GROVE_CITUS_TOOLS" in done.stderr
