"""``grove import-from {mem0,markdown,transcript} PATH``: its grammar and its report."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from grove_cli.importers import markdown, mem0, transcript
from grove_cli.importers.plan import MalformedInput, Plan
from grove_cli.importers.sender import Api, ImportStopped, Summary, send

SOURCES = ("mem0", "markdown", "transcript")


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``import-from`` on the ``grove`` command's subcommands."""
    p = commands.add_parser(
        "import-from",
        help="import notes from mem0, a Markdown folder or JSONL transcripts (see docs/import.md)",
        description="Save another system's memories as notes through the API"
        " (GROVE_API_URL, GROVE_API_KEY). Re-running an import replays what was saved.",
    )
    p.add_argument("source", choices=SOURCES)
    p.add_argument("path", type=Path, help="the export file, folder or transcript")
    p.add_argument("--api-url", help="the API's base URL (default: $GROVE_API_URL)")
    p.add_argument("--api-key", help="an API key (default: $GROVE_API_KEY)")
    p.add_argument("--notebook", help="markdown: put the folder's notes in this notebook")
    p.add_argument("--session", help="transcript: the session's name (default: from the file)")
    p.add_argument("--dry-run", action="store_true", help="report what would be sent; send nothing")
    p.set_defaults(func=run)


def plan_of(args: argparse.Namespace) -> Plan:
    """The plan for the named source, or the reason the input cannot be read."""
    path: Path = args.path
    if not path.exists():
        raise MalformedInput(str(path), "no such file or folder")
    if args.source == "markdown":
        if not path.is_dir():
            raise MalformedInput(str(path), "markdown imports a folder")
        return markdown.convert(path, args.notebook)
    if not path.is_file():
        raise MalformedInput(str(path), f"{args.source} imports a file")
    if args.source == "mem0":
        return mem0.convert(path)
    return transcript.convert(path, args.session)


def run(args: argparse.Namespace) -> None:
    """Plan, send and report; exits 1 if the input is malformed or any note failed."""
    try:
        plan = plan_of(args)
    except MalformedInput as ex:
        sys.exit(f"grove: import stopped, nothing sent: {ex}")
    print(f"planned {len(plan.items)} note(s), skipped {len(plan.skipped)}")
    summary = Summary()
    if not args.dry_run:
        try:
            summary = send(_api(args), plan)
        except ImportStopped as ex:
            _details(plan, summary)
            sys.exit(f"grove: import stopped: {ex}")
        print(f"notebooks: {summary.notebooks_created} created, {summary.notebooks_found} existing")
        counts = ", ".join(f"{summary.counts[s]} {s}" for s in ("created", "updated", "replayed"))
        print(f"{counts}, {summary.counts['failed']} failed, {len(plan.skipped)} skipped")
    _details(plan, summary)
    if summary.failed:
        sys.exit(1)


def _api(args: argparse.Namespace) -> Api:
    url = args.api_url or os.environ.get("GROVE_API_URL", "").strip()
    key = args.api_key or os.environ.get("GROVE_API_KEY", "").strip()
    if not url or not key:
        sys.exit("grove: set GROVE_API_URL and GROVE_API_KEY (or --api-url, --api-key)")
    return Api(url, key)


def _details(plan: Plan, summary: Summary) -> None:
    for label, notices in (
        ("adjusted", plan.adjusted),
        ("skipped", plan.skipped),
        ("failed", summary.failed),
    ):
        for notice in notices:
            print(f"{label:<9}{notice.where}: {notice.reason}")
