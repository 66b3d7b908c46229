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


def test_ci_run_runs_the_live_project_memory_acceptance() -> None:
    # Under CI=true no test may skip: the opt-in live acceptance gets its three settings
    # (a temporary output folder, the runner "ci", the commit) before the tests run.
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    export = "export MEMORY_LIVE_OUT MEMORY_LIVE_RUNNER MEMORY_LIVE_COMMIT"
    assert lines.index(export) < lines.index("make test")
    assert 'MEMORY_LIVE_RUNNER="${MEMORY_LIVE_RUNNER:-ci}"' in lines
    assert any(line.startswith('MEMORY_LIVE_COMMIT="$(git rev-parse HEAD') for line in lines)
    assert any(line.startswith('MEMORY_LIVE_OUT="${MEMORY_LIVE_OUT:-$(mktemp -d') for line in lines)
