"""The ``grove-harness`` command: ``render``, ``verify-rules``, ``hash-rules``.

Exit status 0 on success and 2 on any refusal (a bad option, a rule pack that is not the
reviewed one, an output file that exists), with one line on standard error and nothing
written. It reads only the files it is given and never contacts Grove.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grove_harness.claude_code import DEFAULT_PYTHON, settings_fragment
from grove_harness.errors import HarnessError
from grove_harness.rules import RulePack, load_pinned_rule_pack, read_rule_pack
from grove_harness.spec import (
    DEFAULT_KEY_ENV,
    DEFAULT_LIMIT,
    DEFAULT_QUERY,
    HookSpec,
    checked_spec,
    is_loopback,
)

FORMATS: dict[str, Callable[[HookSpec, str], dict[str, Any]]] = {
    "claude-code": settings_fragment,
}


def cmd_render(args: argparse.Namespace) -> int:
    rules = pinned_rules(args.rules, args.rules_sha256)
    spec = checked_spec(
        args.api_url,
        args.org,
        args.project,
        query=args.query,
        limit=args.limit,
        key_env=args.key_env,
        rules=rules,
    )
    text = json.dumps(FORMATS[args.format](spec, args.python), indent=2) + "\n"
    if spec.api_url.startswith("http://") and not is_loopback(spec.api_url):
        warn(f"{spec.api_url} is plain http: the project key would cross the network unencrypted")
    emit(text, args.output, force=args.force)
    return 0


def pinned_rules(path: str | None, sha256: str | None) -> RulePack | None:
    """The rule pack, if both ``--rules`` and ``--rules-sha256`` are given and agree."""
    if (path is None) != (sha256 is None):
        raise HarnessError(
            "--rules and --rules-sha256 go together: pin the reviewed file by its SHA-256 "
            "(grove-harness hash-rules FILE prints it)"
        )
    if path is None or sha256 is None:
        return None
    return load_pinned_rule_pack(Path(path), sha256)


def emit(text: str, output: str | None, *, force: bool) -> None:
    """Print ``text``, or write it to ``output`` (an existing file only with ``force``)."""
    if output is None:
        sys.stdout.write(text)
        return
    try:
        with open(output, "w" if force else "x", encoding="utf-8") as file:
            file.write(text)
    except FileExistsError as ex:
        raise HarnessError(f"{output} exists; pass --force to replace it") from ex
    except OSError as ex:
        raise HarnessError(f"{output}: cannot write ({ex.strerror})") from ex
    warn(f"wrote {output}; merge its hooks into your Claude Code settings yourself")


def cmd_verify_rules(args: argparse.Namespace) -> int:
    pack = load_pinned_rule_pack(Path(args.file), args.sha256)
    print(f"{args.file}: OK, sha256 {pack.sha256}")
    return 0


def cmd_hash_rules(args: argparse.Namespace) -> int:
    print(read_rule_pack(Path(args.file)).sha256)
    return 0


def warn(message: str) -> None:
    print(f"grove-harness: {message}", file=sys.stderr)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="grove-harness",
        description="Render agent hook configuration for one Grove project (installs nothing).",
    )
    commands = parser.add_subparsers(required=True, metavar="COMMAND")
    add_render(commands)
    verify = commands.add_parser("verify-rules", help="check a rule file against its SHA-256")
    verify.add_argument("file", metavar="FILE")
    verify.add_argument("--sha256", required=True, metavar="HEX", help="the pinned SHA-256")
    verify.set_defaults(run=cmd_verify_rules)
    hash_rules = commands.add_parser("hash-rules", help="print the SHA-256 of a rule file")
    hash_rules.add_argument("file", metavar="FILE")
    hash_rules.set_defaults(run=cmd_hash_rules)
    return parser


def add_render(commands: Any) -> None:
    render = commands.add_parser("render", help="print a SessionStart hook configuration")
    render.add_argument("--api-url", required=True, metavar="URL", help="Grove API base URL")
    render.add_argument("--org", required=True, metavar="ORG_UUID")
    render.add_argument("--project", required=True, metavar="PROJECT_UUID")
    render.add_argument("--query", default=DEFAULT_QUERY, help="what to retrieve at start")
    render.add_argument("--limit", type=int, default=DEFAULT_LIMIT, help="1 to 50 records")
    render.add_argument(
        "--key-env",
        default=DEFAULT_KEY_ENV,
        metavar="NAME",
        help=f"variable holding the project key (default {DEFAULT_KEY_ENV})",
    )
    render.add_argument("--rules", metavar="FILE", help="operator-reviewed rule pack")
    render.add_argument("--rules-sha256", metavar="HEX", help="its pinned SHA-256")
    render.add_argument("--format", choices=sorted(FORMATS), default="claude-code")
    render.add_argument(
        "--python",
        default=DEFAULT_PYTHON,
        help=f"Python 3.8+ on the agent host (default {DEFAULT_PYTHON})",
    )
    render.add_argument("--output", metavar="FILE", help="write here instead of stdout")
    render.add_argument("--force", action="store_true", help="replace an existing --output")
    render.set_defaults(run=cmd_render)


def main(argv: list[str] | None = None) -> int:
    """Run one command; a refusal prints one line on stderr and returns 2."""
    args = build_parser().parse_args(argv)
    try:
        status: int = args.run(args)
    except HarnessError as ex:
        warn(str(ex))
        return ex.exit_status
    return status


if __name__ == "__main__":
    sys.exit(main())
