"""`.ci/run` is CI on any runner: it says so itself, so a missing tool fails the run."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ci_run_exports_ci_true_before_the_checks() -> None:
    # tests/support/tools.py fails (not skips) a test whose outside tool is missing only
    # under CI=true: a runner that does not set it would pass a run that skipped them.
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert "export CI=true" in lines
    assert lines.index("export CI=true") < lines.index("make lint") < lines.index("make test")
