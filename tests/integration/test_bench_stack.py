"""A benchmark stopped with SIGTERM stops the stack it started (bench.stack).

A small script holds ``bench.stack.stack`` open (PostgreSQL, grove-api and a grove-ask
without a model, so it starts at once) and reports its processes; SIGTERM to the script
alone, as ``kill`` or a timeout sends it, must leave none of them running.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[2]
HOLD = """
import json, time
import psutil, psycopg
from bench.stack import stack

with stack("disabled") as running:
    running.start_ask()
    with psycopg.connect(running.db.superuser_url) as conn:
        # Asked while the connection is open: its backend process ends with it.
        backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        postmaster = psutil.Process(backend).ppid()
    print(json.dumps({"postmaster": postmaster}), flush=True)
    time.sleep(600)
"""


def test_a_benchmark_stopped_with_sigterm_stops_its_stack() -> None:
    command = [sys.executable, "-c", HOLD]
    started: list[psutil.Process] = []
    with subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True) as script:
        try:
            assert script.stdout is not None
            line = script.stdout.readline()
            assert line, f"the script ended first ({script.wait()})"
            started.append(psutil.Process(json.loads(line)["postmaster"]))
            started += psutil.Process(script.pid).children(recursive=True)
            commands = [" ".join(p.cmdline()) for p in started]
            assert any("grove-ask" in c for c in commands), commands
            assert any("grove-api" in c for c in commands), commands
            script.send_signal(signal.SIGTERM)
            assert script.wait(timeout=120) == 128 + signal.SIGTERM
            _, alive = psutil.wait_procs(started, timeout=30)
            assert not alive, [(p.pid, p.cmdline()) for p in alive]
        finally:  # what a failure left running
            if script.poll() is None:
                script.kill()
            for process in started:
                if process.is_running():
                    process.kill()
