"""Start and stop this install's console scripts (grove-api, grove-ask, ...) as processes.

The one launcher behind ``grove dev``, the benchmarks' stack and the tests' services. A
service started with a readiness pattern has its stderr read on a thread, so it never
blocks on a full pipe, and ``start`` returns once a line matches; one started without
writes to this process's stderr, where ``grove dev`` shows its logs, and the caller checks
readiness its own way.
"""

from __future__ import annotations

import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

#: The line gunicorn logs once it listens (group 1: the port, for services on port 0).
GUNICORN_READY = r"Listening at: http://127\.0\.0\.1:(\d+)"
#: grove-ask's log line once it serves (group 1: the port).
ASK_READY = r'"event": "listening".*"port": (\d+)'
#: grove-worker's log line once its loop runs.
WORKER_READY = r'"event": "started"'

READY_TIMEOUT_SECONDS = 120
STOP_TIMEOUT_SECONDS = 30
DRAIN_JOIN_SECONDS = 10
LAST_OUTPUT_CHARS = 2000


class LaunchError(RuntimeError):
    """A service exited, or stayed silent, before it logged that it was ready."""


@dataclass
class Running:
    """A started console script.

    ``port`` is the first group of the readiness pattern's match ("" without one); ``url``
    is the caller's to set, as only the caller knows the scheme and path. With a readiness
    pattern, stderr is read on ``drain`` into ``lines``: every line up to readiness, and
    the later ones too unless the caller asked not to keep them. ``stop`` ends the process
    with ``quit_signal``, killing it if it has not exited in time.
    """

    name: str
    process: subprocess.Popen[str]
    quit_signal: int = signal.SIGTERM
    port: str = ""
    url: str = ""
    lines: list[str] = field(default_factory=list)
    drain: threading.Thread | None = None

    def quit(self, sig: int | None = None) -> None:
        """Send ``sig`` (``quit_signal`` by default) unless the process has already exited."""
        if self.process.poll() is None:
            self.process.send_signal(self.quit_signal if sig is None else sig)

    def wait(self, timeout: float = STOP_TIMEOUT_SECONDS) -> int:
        """Wait for the process to exit, SIGKILL it after ``timeout`` seconds, and wait
        for the drain to read the rest of its output; the exit code."""
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.drain is not None:
            self.drain.join(timeout=DRAIN_JOIN_SECONDS)
        return self.process.returncode

    def stop(self, sig: int | None = None, timeout: float = STOP_TIMEOUT_SECONDS) -> int:
        """``quit`` then ``wait``: the exit code (negative: the signal that ended it)."""
        self.quit(sig)
        return self.wait(timeout)


def free_port() -> int:
    """A port free on loopback right now, for a service that must know its own URL
    before it starts (grove-mcp, the console, an identity provider)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def script(name: str) -> str:
    """The path of this install's console script ``name``, beside the interpreter; the
    bare name, looked up on PATH, if it is not there (e.g. a ``pip install --user``)."""
    candidate = Path(sys.executable).with_name(name)
    return str(candidate) if candidate.exists() else name


def start(
    name: str,
    env: dict[str, str],
    ready: str | None = None,
    *,
    quit_signal: int = signal.SIGTERM,
    keep_lines: bool = True,
    timeout: float = READY_TIMEOUT_SECONDS,
    own_group: bool = False,
) -> Running:
    """Start the console script ``name`` with this process's environment plus ``env``.

    Without ``ready`` it returns at once and the script writes to this process's stderr.
    With ``ready``, a regular expression, it returns once a stderr line matches (its first
    group, if any, is ``port``); lines after that are kept in ``lines`` only if
    ``keep_lines`` (a long benchmark would otherwise hold every log line). Raises
    ``LaunchError`` with the last output if the script exits first, or if no line
    matches within ``timeout`` seconds (it is killed then). With ``own_group`` the script
    runs in a process group of its own, so a terminal's Ctrl-C reaches only this process,
    which stops it (``grove dev``).
    """
    process = subprocess.Popen(
        [script(name)],
        env={**os.environ, **env},
        stderr=None if ready is None else subprocess.PIPE,
        text=True,
        process_group=0 if own_group else None,
    )
    running = Running(name, process, quit_signal)
    if ready is None:
        return running
    found: queue.Queue[re.Match[str] | None] = queue.Queue()
    running.drain = threading.Thread(
        target=_drain, args=(running, re.compile(ready), found, keep_lines), daemon=True
    )
    running.drain.start()
    try:
        match = found.get(timeout=timeout)
    except queue.Empty:
        running.stop(signal.SIGKILL)
        raise _failed(running, f"was not ready within {timeout:g} s") from None
    except BaseException:  # interrupted (Ctrl-C, a benchmark's SIGTERM): leave none running
        running.stop()
        raise
    if match is None:
        raise _failed(running, f"exited with {running.stop()} before it was ready")
    running.port = match.group(1) if match.groups() else ""
    return running


def stop_all(services: Iterable[Running], timeout: float = STOP_TIMEOUT_SECONDS) -> None:
    """Stop several services together: each gets its quit signal before any is waited
    for, so they shut down side by side."""
    services = list(services)
    for service in services:
        service.quit()
    for service in services:
        service.wait(timeout)


def _drain(
    running: Running,
    ready: re.Pattern[str],
    found: queue.Queue[re.Match[str] | None],
    keep_lines: bool,
) -> None:
    """Read stderr to its end: the lines into ``running.lines`` (after readiness only if
    ``keep_lines``), the readiness match into ``found``, and ``None`` once it ends."""
    stream = running.process.stderr
    assert stream is not None
    waiting = True
    with stream:
        for line in stream:
            if waiting or keep_lines:
                running.lines.append(line)
            if waiting and (match := ready.search(line)):
                found.put(match)
                waiting = False
    found.put(None)


def _failed(running: Running, what: str) -> LaunchError:
    output = "".join(running.lines)[-LAST_OUTPUT_CHARS:]
    return LaunchError(f"{running.name} {what}; its last output:\n{output}")
