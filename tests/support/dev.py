"""Grove as ``grove dev`` runs it: the development identity provider's settings, an api
started with it, the README's walkthroughs run against one, and a running ``grove dev``
read line by line."""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from grove_cli.dev import dev_identity
from grove_db import embedded
from tests.support.keys import SECRET
from tests.support.processes import Running, free_port, start_api
from tests.support.tenants import new_tenant


def dev_env(tmp_path: Path, port: int, console_port: int = 1) -> dict[str, str]:
    """The development identity exactly as ``grove dev`` sets it, with a key of this test."""
    identity = dev_identity(
        f"http://127.0.0.1:{port}", "http://127.0.0.1:1/mcp", f"http://127.0.0.1:{console_port}"
    )
    return {**identity, "GROVE_DEV_ISSUER_KEY": str(tmp_path / "dev-issuer.pem")}


def start_dev_api(
    database: embedded.EmbeddedDatabase, tmp_path: Path, console_port: int = 1, **extra: str
) -> tuple[Running, dict[str, str]]:
    """An api with the development provider, as ``make dev`` runs it; and its dev env."""
    port = free_port()
    env = dev_env(tmp_path, port, console_port)
    api = start_api(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_API_PORT": str(port),
            "GROVE_EMBEDDING_PROFILE": "disabled",
            "GROVE_API_WORKERS": "1",
            **env,
            **extra,
        }
    )
    return api, env


def run_readme_walkthrough(
    heading: str, database: embedded.EmbeddedDatabase, tmp_path: Path, **api_env: str
) -> str:
    """Run the first ```sh block under the README's ``heading`` as printed (minus sourcing
    .grove/dev.env) against an api with the development provider, as ``make dev`` has it:
    ``GROVE_API_KEY`` and ``GROVE_DEMO_ACCOUNT`` are a fresh account and its key. Its
    standard output."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split(f"## {heading}\n", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, flags=re.DOTALL)
    assert block is not None
    script = block.group(1).replace(".venv/bin/", f"{Path(sys.executable).parent}/")
    script = "\n".join(line for line in script.splitlines() if not line.startswith("set -a"))
    api, env = start_dev_api(database, tmp_path, console_port=1, **api_env)
    try:
        tenant = new_tenant(database, api.url)
        result = subprocess.run(
            [shutil.which("bash") or "/bin/bash", "-euo", "pipefail", "-c", script],
            env={
                **os.environ,
                **env,
                "GROVE_API_URL": api.url,
                "GROVE_API_KEY": tenant.client.key or "",
                "GROVE_DEMO_ACCOUNT": str(tenant.account_id),
                "GROVE_MIGRATION_DATABASE_URL": database.migration_url,
                "GROVE_SECRET_KEY": SECRET,
            },
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        api.stop()
    assert result.returncode == 0, result.stderr
    return result.stdout


#: What a quiet stop never prints (gunicorn's when a worker is killed, or signalled twice).
ALARMS = ("SIGKILL", "Perhaps out of memory", "Traceback", '"level": "warning"', '"level": "error"')


@dataclass
class Dev:
    """A running ``grove dev``: its directory, process and the lines it has printed."""

    home: Path
    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    ready: queue.Queue[bool] = field(default_factory=queue.Queue)

    def read(self) -> None:
        """Keep every line; say once whether the banner came before the end."""
        assert self.process.stdout is not None
        waiting = True
        for line in self.process.stdout:
            self.lines.append(line)
            if waiting and line.startswith("Grove is running."):
                self.ready.put(True)
                waiting = False
        self.ready.put(False)

    def interrupt(self) -> int:
        """Ctrl-C in its terminal: SIGINT to its whole process group; its exit status."""
        os.killpg(self.process.pid, signal.SIGINT)
        return self.process.wait(timeout=120)
