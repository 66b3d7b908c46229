"""The metrics port's reading of gunicorn workers' metric files."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import generate_latest
from prometheus_client.values import MultiProcessValue

from grove_telemetry import server


def test_a_scrape_leaves_out_the_file_a_new_worker_is_still_creating(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    counted = MultiProcessValue(lambda: 41)
    counted("counter", "grove_things", "grove_things_total", (), (), "Things.").inc(3)
    # Worker 42 has opened its counter file but not sized it yet (prometheus_client's
    # MmapedDict opens, then truncates): reading it whole would fail the scrape.
    (tmp_path / "counter_42.db").touch()
    text = generate_latest(server.registry()).decode()
    assert "grove_things_total 3.0" in text
