"""The metrics port's reading of gunicorn workers' metric files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client import generate_latest
from prometheus_client.values import MultiProcessValue

from grove_telemetry import multiproc, server

#: A master that prepares its directory, forks a worker that exits normally (running the
#: exit hooks it inherited), and says whether the directory outlived the worker.
MASTER = """
import os, sys
from grove_telemetry import multiproc
path = multiproc.prepare("grove-test")
child = os.fork()
if child == 0:
    sys.exit(0)
os.waitpid(child, 0)
print(path, path.exists())
"""


def test_a_scrape_leaves_out_the_file_a_new_worker_is_still_creating(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    counted = MultiProcessValue(lambda: 41)  # type: ignore[no-untyped-call]  # untyped upstream
    counted("counter", "grove_things", "grove_things_total", (), (), "Things.").inc(3)
    # Worker 42 has opened its counter file but not sized it yet (prometheus_client's
    # MmapedDict opens, then truncates): reading it whole would fail the scrape.
    (tmp_path / "counter_42.db").touch()
    text = generate_latest(server.registry()).decode()
    assert "grove_things_total 3.0" in text


def test_a_temporary_metrics_directory_is_removed_when_its_master_exits() -> None:
    env = {k: v for k, v in os.environ.items() if k != multiproc.ENV}
    out = subprocess.run(
        [sys.executable, "-c", MASTER], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out[1] == "True"  # the worker's exit left it
    assert not Path(out[0]).exists()  # the master's removed it


def test_a_given_metrics_directory_is_kept_and_emptied(tmp_path: Path) -> None:
    (tmp_path / "counter_7.db").write_bytes(b"old")
    (tmp_path / "keep.txt").write_text("not ours")
    env = {**os.environ, multiproc.ENV: str(tmp_path)}
    subprocess.run([sys.executable, "-c", MASTER], env=env, check=True, capture_output=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]
