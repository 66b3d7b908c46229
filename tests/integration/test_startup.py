"""Services refuse to run as a role that could bypass row-level security."""

from __future__ import annotations

import subprocess

import pytest

from grove_db import embedded
from tests.support.keys import SECRET
from tests.support.processes import run_script


def run_api(database_url: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_script(
        "grove-api",
        env={
            "GROVE_DATABASE_URL": database_url,
            "GROVE_SECRET_KEY": SECRET,
            "GROVE_API_PORT": "0",
            **env,
        },
    )


def test_api_refuses_a_superuser_connection(database: embedded.EmbeddedDatabase) -> None:
    superuser_grove = database.grove_superuser_url
    result = run_api(superuser_grove)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert lines == ["grove-api: refusing to run: database role 'postgres' is a superuser"]


def test_api_refuses_the_table_owner(database: embedded.EmbeddedDatabase) -> None:
    result = run_api(database.migration_url)
    assert result.returncode != 0
    assert "owns" in result.stderr and "grove_migrator" in result.stderr


def test_api_refuses_a_bypassrls_role(database: embedded.EmbeddedDatabase) -> None:
    import psycopg

    with psycopg.connect(database.superuser_url, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS grove_bypass")
        conn.execute("CREATE ROLE grove_bypass LOGIN BYPASSRLS")
    result = run_api(embedded.role_url(database.runtime_url, "grove_bypass"))
    assert result.returncode != 0
    assert (
        result.stderr.strip()
        == "grove-api: refusing to run: database role 'grove_bypass' has BYPASSRLS"
    )


@pytest.mark.parametrize(
    "env, variable",
    [
        ({"GROVE_SECRET_KEY": "short"}, "GROVE_SECRET_KEY"),
        ({"GROVE_API_PORT": "99999"}, "GROVE_API_PORT"),
        ({"GROVE_HTTP_HEADER_TIMEOUT_SECONDS": "0"}, "GROVE_HTTP_HEADER_TIMEOUT_SECONDS"),
        ({"GROVE_HTTP_BODY_TIMEOUT_SECONDS": "601"}, "GROVE_HTTP_BODY_TIMEOUT_SECONDS"),
        ({"GROVE_HTTP_BODY_MIN_BYTES_PER_SECOND": "-1"}, "GROVE_HTTP_BODY_MIN_BYTES_PER_SECOND"),
    ],
)
def test_api_refuses_bad_settings_with_one_line(
    database: embedded.EmbeddedDatabase, env: dict[str, str], variable: str
) -> None:
    result = run_api(database.runtime_url, **env)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and variable in lines[0]
