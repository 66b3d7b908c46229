"""The ``grove`` command: ``migrate``, ``accounts``, ``keys``, ``reindex``, ``enrich``, ``import``,
``import-from``, ``indexes``, ``secrets``, ``dev``, ``dev-token``."""

from __future__ import annotations

import argparse
import os
import sys
from uuid import UUID

import psycopg
from psycopg.conninfo import conninfo_to_dict

from grove_auth.keys import share_token_secret
from grove_cli import admin, indexes
from grove_cli.importers import command as import_from
from grove_db.migrate import migrate


def _env(name: str) -> str:
    value = os.environ.get(name, "").strip()
    if not value:
        sys.exit(f"grove: set {name}")
    return value


def _uuid_list(text: str) -> list[UUID]:
    return [UUID(part) for part in text.split(",") if part.strip()]


def _role(given: str | None, setting: str, url_setting: str) -> str | None:
    """A role named on the command line, by its setting, or as the user of its URL."""
    role = given or os.environ.get(setting)
    if not role and os.environ.get(url_setting):
        user = conninfo_to_dict(os.environ[url_setting]).get("user")
        role = str(user) if user else None
    return role


def cmd_migrate(args: argparse.Namespace) -> None:
    runtime_role = _role(args.runtime_role, "GROVE_RUNTIME_ROLE", "GROVE_DATABASE_URL")
    share_role = _role(args.share_role, "GROVE_SHARE_ROLE", "GROVE_SHARE_DATABASE_URL")
    console_role = _role(args.console_role, "GROVE_CONSOLE_ROLE", "GROVE_CONSOLE_DATABASE_URL")
    url = _env("GROVE_MIGRATION_DATABASE_URL")
    applied = migrate(url, runtime_role, share_role, console_role, citus=args.citus)
    print(f"applied {len(applied)} migration(s)" + (f": {applied}" if applied else ""))
    if runtime_role:
        print(f"granted runtime privileges to {runtime_role}")
    if share_role:
        print(f"granted the public share functions to {share_role}")
    if console_role:
        print(f"granted the console session functions to {console_role}")


def cmd_accounts_create(args: argparse.Namespace) -> None:
    print(admin.create_account(_env("GROVE_MIGRATION_DATABASE_URL"), args.name))


def cmd_accounts_capture(args: argparse.Namespace) -> None:
    paused = args.state == "paused"
    if not admin.set_automatic_capture(
        _env("GROVE_MIGRATION_DATABASE_URL"), UUID(args.account), paused
    ):
        sys.exit("grove: no such account")
    print(f"automatic capture {args.state}")


def cmd_enrich(args: argparse.Namespace) -> None:
    try:
        done = admin.enrich(
            _env("GROVE_MIGRATION_DATABASE_URL"),
            UUID(args.account),
            reset=args.action == "reset",
            files=args.files,
        )
    except LookupError:
        sys.exit("grove: no such account")
    print(", ".join(f"{what}: {count}" for what, count in done.items()))


def cmd_accounts_owner(args: argparse.Namespace) -> None:
    issuer = _env("GROVE_OIDC_ISSUER")
    admin.add_owner(_env("GROVE_MIGRATION_DATABASE_URL"), UUID(args.account), issuer, args.subject)
    print(f"{args.subject} ({issuer}) now owns {args.account}")


def cmd_accounts_delete(args: argparse.Namespace) -> None:
    try:
        admin.delete_account(_env("GROVE_MIGRATION_DATABASE_URL"), UUID(args.account))
    except LookupError:
        sys.exit("grove: no such account")
    print(f"deleted {args.account}")


def cmd_accounts_isolate(args: argparse.Namespace) -> None:
    from grove_cli import shards

    try:
        shard, split = shards.isolate(_env("GROVE_ADMIN_DATABASE_URL"), args.account)
    except (LookupError, shards.NeedsCitus, shards.NeedsBypass) as ex:
        sys.exit(f"grove: {ex}")
    except shards.IsolationFailed as ex:
        sys.exit(f"grove: isolating the account failed: {ex}")
    if split:
        print(f"account {args.account} now has shard {shard.shard_id} of its own on {shard.node}")
    else:
        print(f"account {args.account} is already alone on shard {shard.shard_id} on {shard.node}")


def cmd_accounts_quota(args: argparse.Namespace) -> None:
    url, account = _env("GROVE_MIGRATION_DATABASE_URL"), UUID(args.account)
    limits = {
        option: None if value == "default" else int(value)
        for option in admin.QUOTA_OPTIONS
        if (value := getattr(args, option)) is not None
    }
    try:
        if limits:
            admin.set_quotas(url, account, limits)
        rows = admin.quotas(url, account)
    except LookupError as ex:
        sys.exit(f"grove: {ex}")
    for row in rows:
        limit = "default" if row["limit"] is None else row["limit"]
        print(f"{row['quota']:<14} used {row['used']:<12} limit {limit}")


def _limit(value: str) -> str:
    """A quota option's value: a count >= 0 (0: no limit) or ``default``."""
    if value != "default" and not (value.isdigit() and int(value) <= 1 << 50):
        raise argparse.ArgumentTypeError("a whole number >= 0, or 'default'")
    return value


def _dimensions(value: str) -> int:
    """``--dimensions``: a vector size the embeddings table takes (1 to 16,000)."""
    if not (value.isdigit() and 1 <= int(value) <= 16000):
        raise argparse.ArgumentTypeError("a whole number from 1 to 16000")
    return int(value)


def cmd_keys_create(args: argparse.Namespace) -> None:
    notebooks = _uuid_list(args.projects) if args.projects else []
    scoped = bool(notebooks) or args.all_projects
    issued = admin.create_key(
        _env("GROVE_MIGRATION_DATABASE_URL"),
        _env("GROVE_SECRET_KEY"),
        UUID(args.account),
        args.name,
        personal=args.personal or not scoped,
        all_notebooks=args.all_projects,
        notebook_ids=notebooks,
        read_only=args.read_only,
    )
    print(f"key id: {issued.id}", file=sys.stderr)
    print("this key is shown once; store it now", file=sys.stderr)
    print(issued.key)


def cmd_keys_revoke(args: argparse.Namespace) -> None:
    if not admin.revoke(
        _env("GROVE_MIGRATION_DATABASE_URL"), UUID(args.account), UUID(args.key_id)
    ):
        sys.exit("grove: no live key with that ID in that account")
    print("revoked")


def cmd_reindex(args: argparse.Namespace) -> None:
    from grove_cli import reindex

    url = _env("GROVE_MIGRATION_DATABASE_URL")
    account = UUID(args.account) if args.account else None
    try:
        job_ids = reindex.reindex(
            url, args.profile, account, force=args.force, dimensions=args.dimensions
        )
    except ValueError as ex:
        sys.exit(f"grove: {ex}")
    print(f"queued {len(job_ids)} embedding job(s) for profile {args.profile}")
    if args.wait and job_ids and reindex.wait(url, job_ids):
        sys.exit("grove: some notes failed to embed (see GET /v1/memories/{id}: indexing)")


def cmd_import(args: argparse.Namespace) -> None:
    from grove_memory.portability import restore
    from grove_memory.portability.restore_checks import RestoreError

    url = _env("GROVE_MIGRATION_DATABASE_URL")
    profile = args.profile or os.environ.get("GROVE_EMBEDDING_PROFILE") or "minilm"
    try:
        with open(args.file, "rb") if args.file != "-" else sys.stdin.buffer as lines:
            size = os.fstat(lines.fileno()).st_size if args.file != "-" else None
            counts = restore.restore(
                url,
                UUID(args.account),
                lines,
                profile=None if profile == "disabled" else profile,
                total_bytes=size or None,
            )
    except (OSError, RestoreError) as ex:
        sys.exit(f"grove: {ex}")
    print(counts.summary())


def cmd_indexes(args: argparse.Namespace) -> None:
    try:
        changes = indexes.ensure(
            _env("GROVE_MIGRATION_DATABASE_URL"), args.profile, args.min_vectors
        )
    except ValueError as ex:
        sys.exit(f"grove: {ex}")
    indexes.report(changes)
    print(f"{len(changes)} index change(s) for profile {args.profile}")


def cmd_dev_token(args: argparse.Namespace) -> None:
    from pathlib import Path

    from grove_auth import devissuer

    if os.environ.get("GROVE_ENV") == "production" or os.environ.get("GROVE_DEV_AUTH") != "1":
        sys.exit(
            "grove: dev-token needs GROVE_DEV_AUTH=1 (source .grove/dev.env) outside production"
        )
    issuer = _env("GROVE_OIDC_ISSUER")
    account = UUID(args.account)
    subject = args.subject or "dev-owner"
    migration_url = _env("GROVE_MIGRATION_DATABASE_URL")
    try:
        admin.add_owner(migration_url, account, issuer, subject)
    except psycopg.errors.UniqueViolation:
        # An identity owns one account: a token for it would be the other account's.
        owned = admin.account_of_owner(migration_url, issuer, subject)
        if owned != account:
            sys.exit(
                f"grove: {subject} owns account {owned}, not {account};"
                f" name an identity of its own with --subject (e.g. --subject dev-{account})"
            )
    if args.client:
        claims = {"aud": _env("GROVE_MCP_PUBLIC_URL"), "client_id": args.client, "scope": "openid"}
    else:
        claims = devissuer.owner_claims(_env("GROVE_OIDC_AUDIENCE"))
    print(devissuer.token(Path(_env("GROVE_DEV_ISSUER_KEY")), issuer, subject, claims))


def cmd_secrets_share_token(args: argparse.Namespace) -> None:
    """Print grove-share's one secret, derived from GROVE_SECRET_KEY (for its Secret)."""
    print(share_token_secret(_env("GROVE_SECRET_KEY")))


def cmd_dev(args: argparse.Namespace) -> None:
    from grove_cli.dev import run
    from grove_db.citus import CitusMissing
    from grove_db.embedded import NotInstalled

    try:
        sys.exit(run(distributed=args.citus))
    except (NotInstalled, CitusMissing) as ex:
        sys.exit(f"grove: {ex}")


def parser() -> argparse.ArgumentParser:
    """The command-line grammar."""
    top = argparse.ArgumentParser(prog="grove", description=__doc__)
    commands = top.add_subparsers(required=True, metavar="command")

    p = commands.add_parser("migrate", help="apply pending migrations (migration credentials)")
    p.add_argument("--runtime-role", help="role to grant runtime privileges to")
    p.add_argument("--share-role", help="grove-share's role: may only call the share functions")
    p.add_argument(
        "--console-role", help="grove-console's role: may only call its session functions"
    )
    p.add_argument(
        "--citus",
        action="store_true",
        help="the URL is a Citus coordinator's: distribute the tables by account (docs/scaling.md)",
    )
    p.set_defaults(func=cmd_migrate)

    accounts = commands.add_parser("accounts", help="manage accounts").add_subparsers(
        required=True, metavar="action"
    )
    p = accounts.add_parser("create", help="create an account and print its ID")
    p.add_argument("--name", required=True)
    p.set_defaults(func=cmd_accounts_create)

    p = accounts.add_parser("capture", help="pause or resume automatic capture")
    p.add_argument("--account", required=True)
    p.add_argument("state", choices=["paused", "on"])
    p.set_defaults(func=cmd_accounts_capture)

    p = accounts.add_parser("owner", help="let a provider identity (subject) own the account")
    p.add_argument("--account", required=True)
    p.add_argument("--subject", required=True, help="the `sub` claim of the owner's tokens")
    p.set_defaults(func=cmd_accounts_owner)

    p = accounts.add_parser(
        "delete",
        help="delete an account as its owner's DELETE /v1/account does (replay a deletion"
        " after a restore)",
    )
    p.add_argument("--account", required=True)
    p.set_defaults(func=cmd_accounts_delete)

    p = accounts.add_parser(
        "isolate",
        help="give a very large account shards of its own on a Citus cluster",
        description="Splits the account's rows out of the shards it shares, in every"
        " distributed table (isolate_tenant_to_new_shard, CASCADE), on the same node;"
        " an account already alone is left as it is. Connects as GROVE_ADMIN_DATABASE_URL,"
        " a superuser of the coordinator (docs/scaling.md).",
    )
    p.add_argument("account", type=UUID, help="the account's ID")
    p.set_defaults(func=cmd_accounts_isolate)

    p = accounts.add_parser(
        "quota",
        help="show the account's usage and limits; set its own limits",
        description="Limits apply from the next write. 0: no limit; 'default': the"
        " services' GROVE_QUOTA_* setting.",
    )
    p.add_argument("--account", required=True)
    for option in admin.QUOTA_OPTIONS:
        p.add_argument("--" + option.replace("_", "-"), dest=option, type=_limit)
    p.set_defaults(func=cmd_accounts_quota)

    keys = commands.add_parser("keys", help="manage API keys").add_subparsers(
        required=True, metavar="action"
    )
    p = keys.add_parser("create", help="create an API key and print it once")
    p.add_argument("--account", required=True)
    p.add_argument("--name", required=True)
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("--projects", help="comma-separated notebook IDs to grant")
    scope.add_argument(
        "--all-projects", action="store_true", help="all current and future notebooks"
    )
    p.add_argument(
        "--personal",
        action="store_true",
        help="personal notes (the default when no notebook grant is given)",
    )
    p.add_argument("--read-only", action="store_true", help="read only: no write or delete")
    p.set_defaults(func=cmd_keys_create)
    p = keys.add_parser("revoke", help="revoke an API key for good")
    p.add_argument("--account", required=True)
    p.add_argument("key_id")
    p.set_defaults(func=cmd_keys_revoke)

    p = commands.add_parser("reindex", help="queue re-embedding of current revisions")
    p.add_argument("--profile", required=True, help="embedding profile, e.g. minilm")
    p.add_argument("--account", help="only this account (default: every account)")
    p.add_argument("--force", action="store_true", help="also notes already embedded")
    p.add_argument(
        "--dimensions",
        type=_dimensions,
        help="create the profile's HNSW index (up to 2000; larger profiles are searched exactly)",
    )
    p.add_argument("--wait", action="store_true", help="report progress until finished")
    p.set_defaults(func=cmd_reindex)

    p = commands.add_parser(
        "enrich",
        help="make an account's suggestions and notebook briefs again",
        description="reindex: drop the suggestions and queue the classification and every"
        " notebook's brief; reset: also drop the briefs and today's enrichment quota use."
        " --files also extracts every file's passages again.",
    )
    p.add_argument("action", choices=["reindex", "reset"])
    p.add_argument("--account", required=True)
    p.add_argument("--files", action="store_true", help="also re-extract every file")
    p.set_defaults(func=cmd_enrich)

    p = commands.add_parser("import", help="restore a Grove export (NDJSON) into an account")
    p.add_argument("file", help="the export file (GET /v1/export), or - for stdin")
    p.add_argument("--account", required=True, help="the account to restore into")
    p.add_argument(
        "--profile",
        help="embedding profile to queue jobs for, or disabled"
        " (default: GROVE_EMBEDDING_PROFILE, else minilm)",
    )
    p.set_defaults(func=cmd_import)

    p = commands.add_parser(
        "indexes", help="give every account with many vectors an HNSW index of its own"
    )
    p.add_argument("--profile", default="minilm", help="embedding profile (default: minilm)")
    p.add_argument(
        "--min-vectors",
        type=int,
        default=indexes.DEFAULT_MIN_VECTORS,
        help="vectors from which an account gets its own index"
        f" (default: {indexes.DEFAULT_MIN_VECTORS})",
    )
    p.set_defaults(func=cmd_indexes)

    p = commands.add_parser("dev-token", help="print a development owner or agent token")
    p.add_argument("--account", required=True)
    p.add_argument("--client", help="an OAuth client ID: print an agent token for MCP")
    p.add_argument(
        "--subject",
        help="the identity (default: dev-owner); refused if it owns another account",
    )
    p.set_defaults(func=cmd_dev_token)

    secrets = commands.add_parser("secrets", help="secrets derived from GROVE_SECRET_KEY")
    p = secrets.add_subparsers(required=True, metavar="secret").add_parser(
        "share-token", help="print GROVE_SHARE_TOKEN_SECRET, all grove-share needs of it"
    )
    p.set_defaults(func=cmd_secrets_share_token)

    p = commands.add_parser("dev", help="run everything locally on the embedded PostgreSQL")
    p.add_argument(
        "--citus",
        action="store_true",
        help="on a Citus cluster on loopback instead: a coordinator and two workers, new"
        " for this run (docs/scaling.md)",
    )
    p.set_defaults(func=cmd_dev)

    import_from.add_parser(commands)
    return top


def main(argv: list[str] | None = None) -> None:
    """Entry point of ``grove``."""
    args = parser().parse_args(argv)
    args.func(args)
