"""The README's tour runs as a new user runs it: ``grove dev`` in one terminal, then every
shell block of the tour in order in one other shell, and Ctrl-C stops it quietly.

``grove dev`` runs as printed (the embedded PostgreSQL, grove-ask with MiniLM, the worker,
every service) in a scratch directory on free ports, with ``.venv`` there pointing at this
checkout's; the blocks share one bash, so what one leaves (its variables, the working
directory) is what the next one gets; docs/python.md's first examples follow. The first
recall comes right after the banner, so a model still loading fails it.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from grove_cli.launch import free_port
from tests.support.dev import ALARMS, Dev

README = Path(__file__).resolve().parents[2] / "README.md"
TOUR = README.read_text().split("## A five-minute tour\n", 1)[1].split("\n## Documentation", 1)[0]
#: Every shell block of the tour, in order; but Claude Code's, which needs its own CLI.
BLOCKS = [
    block
    for block in re.findall(r"```(?:sh|bash)\n(.*?)```", TOUR, flags=re.DOTALL)
    if "claude mcp add" not in block
]
#: The first two examples of docs/python.md (the client, sync and async), run in the same
#: shell by the checkout's Python as that page says.
PYTHON_DOCS = re.findall(
    r"```python\n(.*?)```",
    (README.parent / "docs" / "python.md").read_text(),
    flags=re.DOTALL,
)[:2]
#: How long ``grove dev`` may take to say it is ready on a busy machine (model included).
READY_SECONDS = 600


@pytest.fixture(scope="module")
def dev() -> Iterator[Dev]:
    # Under /tmp as the suite's database is (tests/integration/conftest.py): the embedded
    # PostgreSQL's own user reaches it there.
    home = Path(tempfile.mkdtemp(prefix="grove-tour-"))
    (home / ".venv").symlink_to(Path(sys.executable).parents[1])
    ports = {f"GROVE_{n}_PORT": str(free_port()) for n in ("API", "ASK", "MCP", "SHARE")}
    ports["GROVE_CONSOLE_PORT"] = str(free_port())
    metrics = {
        f"GROVE_{n}_METRICS_PORT": "0" for n in ("API", "ASK", "MCP", "SHARE", "CONSOLE", "WORKER")
    }
    process = subprocess.Popen(
        [str(home / ".venv" / "bin" / "grove"), "dev"],
        cwd=home,
        env={**os.environ, **ports, **metrics},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own terminal, as it were: Ctrl-C goes to its group
    )
    running = Dev(home, process)
    reader = threading.Thread(target=running.read, daemon=True)
    reader.start()
    try:
        started = running.ready.get(timeout=READY_SECONDS)
        assert started, "".join(running.lines[-40:])
        yield running
    finally:
        if process.poll() is None:  # the test failed first: stop it as the test would
            try:
                running.interrupt()
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        reader.join(30)
        if not reader.is_alive():
            assert process.stdout is not None
            process.stdout.close()
        shutil.rmtree(home, ignore_errors=True)


def test_the_tour_has_its_blocks() -> None:
    assert len(BLOCKS) >= 8 and len(PYTHON_DOCS) == 2
    assert "set -a; . .grove/dev.env; set +a" in BLOCKS[0]


def test_the_tour_runs_in_one_shell_and_ctrl_c_stops_grove_dev_quietly(dev: Dev) -> None:
    examples = [f".venv/bin/python - <<'EOF'\n{code}EOF\n" for code in PYTHON_DOCS]
    script = "\n".join([*BLOCKS, *examples])
    result = subprocess.run(
        [shutil.which("bash") or "/bin/bash", "-euo", "pipefail", "-c", script],
        cwd=dev.home,
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr[-3000:])
    assert '"success": false' not in result.stdout, result.stdout
    # The first recall (just after the banner) used the model: a semantic retrieval.
    assert '"retrieval": {"lexical": true, "semantic": true}' in result.stdout, result.stdout
    assert "Prefers short answers" in result.stdout.splitlines()  # the MCP example's recall
    assert "<html" in result.stdout  # the share's page
    assert "we deploy on tuesdays" in result.stdout.splitlines()  # docs/python.md's listing
    printed = len(dev.lines)
    assert dev.interrupt() == 0
    stopping = "".join(dev.lines[printed:])
    assert stopping.rstrip().endswith("grove dev: stopped"), stopping[-2000:]
    assert not [alarm for alarm in ALARMS if alarm in stopping], stopping
    assert not (dev.home / ".grove" / "dev.env").exists()
