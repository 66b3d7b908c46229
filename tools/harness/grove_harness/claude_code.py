"""Claude Code: a settings fragment with one ``SessionStart`` command hook.

Claude Code runs a command hook through the shell when a session starts (or resumes, or
is cleared or compacted) and adds what it prints to the context. The command is
``python3 -c SOURCE CONFIG`` with both arguments shell-quoted: SOURCE is
``session_start.py`` of this package, CONFIG its JSON configuration (``HookSpec.config``),
so the agent host needs only Python 3.8+ and the key in an environment variable.
"""

from __future__ import annotations

import json
import re
import shlex
from importlib import resources
from typing import Any

from grove_harness.errors import HarnessError
from grove_harness.spec import HookSpec

DEFAULT_PYTHON = "python3"
PYTHON_COMMAND = re.compile(r"[A-Za-z0-9_./+-]{1,200}")
#: Claude Code stops a hook after this long; the hook itself gives up on Grove after 10 s.
HOOK_TIMEOUT_SECONDS = 30
#: Linux refuses a single command-line argument over 128 KiB (``sh -c COMMAND``).
MAX_COMMAND_BYTES = 128 * 1024 - 1


def hook_source() -> str:
    """The hook program run on the agent host (standard library only)."""
    return resources.files("grove_harness").joinpath("session_start.py").read_text("utf-8")


def hook_command(spec: HookSpec, python: str = DEFAULT_PYTHON) -> str:
    """The shell command of the hook; it names the key's variable, never a key."""
    if not PYTHON_COMMAND.fullmatch(python):
        raise HarnessError(f"--python must be a command name or path (got {python!r})")
    config = json.dumps(spec.config(), sort_keys=True, separators=(",", ":"))
    command = " ".join(shlex.quote(part) for part in (python, "-c", hook_source(), config))
    if len(command.encode("utf-8")) > MAX_COMMAND_BYTES:
        raise HarnessError("the hook command would exceed 128 KiB: shorten the rule pack")
    return command


def settings_fragment(spec: HookSpec, python: str = DEFAULT_PYTHON) -> dict[str, Any]:
    """``{"hooks": {"SessionStart": [...]}}`` to merge into a Claude Code settings file."""
    command = hook_command(spec, python)
    hook = {"type": "command", "command": command, "timeout": HOOK_TIMEOUT_SECONDS}
    return {"hooks": {"SessionStart": [{"hooks": [hook]}]}}
