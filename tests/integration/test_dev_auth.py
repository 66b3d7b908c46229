"""The development identity provider: grove-api serves its JWKS, grove dev-token signs."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from uuid import UUID

import requests

from grove_cli import admin
from grove_db import embedded
from tests.support.clients import Client
from tests.support.dev import dev_env, start_dev_api
from tests.support.keys import CONSOLE_SECRET_KEY, SECRET
from tests.support.processes import free_port, run_script, start_console
from tests.support.tenants import new_tenant


def test_dev_token_gives_a_working_owner_session(
    database: embedded.EmbeddedDatabase, tmp_path: Path
) -> None:
    api, env = start_dev_api(database, tmp_path)
    try:
        account = admin.create_account(database.migration_url, "dev")
        result = run_script(
            "grove",
            *("dev-token", "--account", str(account), "--subject", f"dev-{account}"),
            env={
                **env,
                "GROVE_MIGRATION_DATABASE_URL": database.migration_url,
                "GROVE_SECRET_KEY": SECRET,
            },
        )
        assert result.returncode == 0, result.stderr
        owner = Client(api.url, result.stdout.strip())
        response = owner.get("/v1/connections")
        assert response.status_code == 200, response.text
        assert response.json()["data"]["items"] == []
    finally:
        api.stop()


def test_dev_token_refuses_a_subject_that_owns_another_account(
    database: embedded.EmbeddedDatabase, tmp_path: Path
) -> None:
    env = {**dev_env(tmp_path, free_port()), "GROVE_MIGRATION_DATABASE_URL": database.migration_url}
    issuer = env["GROVE_OIDC_ISSUER"]
    first = admin.create_account(database.migration_url, "first")
    second = admin.create_account(database.migration_url, "second")

    def dev_token(account: UUID, subject: str) -> subprocess.CompletedProcess[str]:
        command = ("dev-token", "--account", str(account), "--subject", subject)
        return run_script("grove", *command, env=env)

    for _ in range(2):  # the owner again: a token each time
        token = dev_token(first, "dev-owner")
        assert token.returncode == 0 and token.stdout.count(".") == 2, token.stderr
    # Another account with the same identity: refused, not a token for the first account.
    refused = dev_token(second, "dev-owner")
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr.strip() == (
        f"grove: dev-owner owns account {first}, not {second};"
        f" name an identity of its own with --subject (e.g. --subject dev-{second})"
    )
    assert admin.account_of_owner(database.migration_url, issuer, "dev-owner") == first
    own = dev_token(second, f"dev-{second}")
    assert own.returncode == 0 and own.stdout.count(".") == 2, own.stderr
    assert admin.account_of_owner(database.migration_url, issuer, f"dev-{second}") == second


def test_the_website_signs_in_with_the_development_issuer(
    database: embedded.EmbeddedDatabase, tmp_path: Path
) -> None:
    console_port = free_port()
    api, env = start_dev_api(database, tmp_path, console_port)
    console = start_console(database, console_port, {**env, "GROVE_CONSOLE_API_URL": api.url})
    try:
        tenant = new_tenant(database, api.url)
        subject = f"dev-{tenant.account_id}"
        issuer = env["GROVE_OIDC_ISSUER"]
        admin.add_owner(database.migration_url, tenant.account_id, issuer, subject)
        browser = requests.Session()
        page = browser.get(f"{console.url}/", timeout=10)
        assert "Development sign-in" in page.text
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert csrf is not None
        forged = browser.post(
            f"{console.url}/dev/login", data={"subject": subject, "csrf": "guess"}, timeout=10
        )
        assert forged.status_code == 403
        signed_in = browser.post(
            f"{console.url}/dev/login",
            data={"subject": subject, "csrf": csrf.group(1), "next": "/connections"},
            timeout=10,
        )
        assert signed_in.status_code == 200, signed_in.text
        assert signed_in.url == f"{console.url}/connections"
        assert (tenant.client.key or "")[:12] in signed_in.text  # the account's key is listed
    finally:
        console.stop()
        api.stop()


#: How grove-api and grove-console refuse the development identity in production.
REFUSED = "invalid configuration: GROVE_DEV_AUTH must not be enabled when GROVE_ENV=production"


def test_dev_auth_is_refused_in_production(
    database: embedded.EmbeddedDatabase, tmp_path: Path
) -> None:
    result = run_script(
        "grove-api",
        env={
            **dev_env(tmp_path, free_port()),
            "GROVE_ENV": "production",
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_SECRET_KEY": SECRET,
        },
    )
    assert result.returncode != 0
    assert "GROVE_DEV_AUTH" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert result.returncode == 1 and result.stderr.strip() == f"grove-api: {REFUSED}"
    # A real account and everything dev-token needs: in development the same command
    # prints a token, so in production only the production guard can refuse it.
    account = str(admin.create_account(database.migration_url, "dev-token in production"))

    def dev_token(env: str) -> subprocess.CompletedProcess[str]:
        return run_script(
            "grove",
            *("dev-token", "--account", account),
            env={
                **dev_env(tmp_path, 1),
                "GROVE_MIGRATION_DATABASE_URL": database.migration_url,
                "GROVE_ENV": env,
            },
        )

    allowed = dev_token("development")
    assert allowed.returncode == 0 and allowed.stdout.count(".") == 2, allowed.stderr
    token = dev_token("production")
    assert token.returncode != 0
    assert token.returncode == 1 and token.stdout == ""
    assert token.stderr.strip() == (
        "grove: dev-token needs GROVE_DEV_AUTH=1 (source .grove/dev.env) outside production"
    )
    console = run_script(
        "grove-console",
        env={
            **dev_env(tmp_path, free_port()),
            "GROVE_ENV": "production",
            "GROVE_WEBSITE_ORIGIN": "https://memory.example",
            "GROVE_CONSOLE_DATABASE_URL": database.console_url,
            "GROVE_CONSOLE_SECRET_KEY": CONSOLE_SECRET_KEY,
        },
    )
    assert console.returncode != 0
    assert "GROVE_DEV_AUTH" in console.stderr and len(console.stderr.strip().splitlines()) == 1
    assert console.returncode == 1 and console.stderr.strip() == f"grove-console: {REFUSED}"


def test_a_malformed_apps_challenge_stops_the_api_at_start(
    database: embedded.EmbeddedDatabase,
) -> None:
    for value in ("two words", "x" * 513):
        result = run_script(
            "grove-api",
            env={
                "OPENAI_APPS_CHALLENGE": value,
                "GROVE_DATABASE_URL": database.runtime_url,
                "GROVE_SECRET_KEY": SECRET,
            },
        )
        assert result.returncode != 0
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "OPENAI_APPS_CHALLENGE" in result.stderr.upper()
