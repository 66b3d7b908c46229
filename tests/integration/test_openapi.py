"""Schemathesis against the real api: every documented operation keeps its document.

The schema is the one the running server publishes at ``/v1/openapi.json``; loading it
validates it as OpenAPI 3.1. Every operation is then called with generated valid and
invalid requests (examples, boundary coverage, random fuzzing, then sequences following
the document's links from created resources), once under a real API key and once under
the account owner's session. Every answer must be no server error, carry a documented
status and content type, and match its response schema. Owner-only routes answer an API
key 403 ``owner_session_required``, which their operations document; the owner's run
reaches what lies behind them.

The schemathesis command line runs it: its pytest plugin does not work with the pytest
this project uses (it sets ``Function._nodeid``, which pytest 9 no longer has).
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from grove_db import embedded
from tests.support.owners import Provider, owned_tenant, provider
from tests.support.processes import start_api, start_ask
from tests.support.tenants import Tenant, new_tenant

__all__ = ["provider"]  # the fixture tests name

#: Generated requests per operation and phase: bounded, so the run takes under a minute.
MAX_EXAMPLES = 25
#: A fixed seed: a failure found here is found again on the next run.
SEED = 20261203
CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
    "response_headers_conformance",
)


@pytest.fixture(scope="module")
def fuzzed_api(database: embedded.EmbeddedDatabase, provider: Provider) -> Iterator[str]:
    """An api with owner sessions, a real ask service (no model: extractive answers), an
    OpenAI Apps challenge, and no ask limits."""
    ask = start_ask({"GROVE_EMBEDDING_PROFILE": "disabled"})
    api = start_api(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_EMBEDDING_PROFILE": "disabled",
            "GROVE_ASK_ADDRESS": ask.url,
            "GROVE_API_WORKERS": "2",
            "GROVE_ASK_RATE_LIMIT_PER_MINUTE": "0",
            "GROVE_ASK_MAX_CONCURRENT_PER_ACCOUNT": "0",
            **provider.env(),
            "OPENAI_APPS_CHALLENGE": "challenge-token-123",
        }
    )
    yield api.url
    api.stop()
    ask.stop()


def seeded(tenant: Tenant) -> Tenant:
    """``tenant`` with a notebook and a few notes to find."""
    notebook = tenant.notebook("fuzzed")
    tenant.client.save("we deploy on tuesdays", "decision", projectId=notebook)
    tenant.client.save("the user prefers tea", "preference")
    return tenant


def fuzz(api_url: str, token: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run schemathesis against every operation of the server's document as ``token``."""
    command = [
        str(Path(sys.executable).with_name("schemathesis")),
        "run",
        f"{api_url}/v1/openapi.json",
        "--header",
        f"Authorization: Bearer {token}",
        "--checks",
        ",".join(CHECKS),
        "--phases",
        "examples,coverage,fuzzing,stateful",
        "--max-examples",
        str(MAX_EXAMPLES),
        "--seed",
        str(SEED),
        "--no-shrink",
        # One thread: with two, Hypothesis's lambda descriptions (ast.parse) ran in both at
        # once and CPython 3.11's parser failed with "AST constructor recursion depth
        # mismatch" (a SystemError inside schemathesis, not a finding) in a CI run.
        "--workers",
        "1",
        "--request-timeout",
        "30",
        "--output-truncate",
        "true",
    ]
    # Its own directory: schemathesis keeps caches and reports in the working directory.
    return subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=600, check=False
    )


def assert_conforms(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, result.stdout[-20000:] + result.stderr[-5000:]
    assert " passed" in result.stdout


def test_the_document_is_public_and_lists_what_this_server_serves(fuzzed_api: str) -> None:
    response = requests.get(f"{fuzzed_api}/v1/openapi.json", timeout=10)
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("application/json")
    document = response.json()
    assert document["openapi"] == "3.1.0"
    assert "get" in document["paths"]["/v1/openapi.json"]
    assert document["paths"]["/v1/memories"]["post"]["security"] == [{"bearer": []}]
    assert "/dev-issuer/jwks" not in document["paths"]  # GROVE_DEV_AUTH off


def test_every_operation_conforms_for_an_api_key(
    database: embedded.EmbeddedDatabase, fuzzed_api: str, tmp_path: Path
) -> None:
    tenant = seeded(new_tenant(database, fuzzed_api))
    assert tenant.client.key is not None
    assert_conforms(fuzz(fuzzed_api, tenant.client.key, tmp_path))


def test_every_operation_conforms_for_the_owner_session(
    database: embedded.EmbeddedDatabase, fuzzed_api: str, provider: Provider, tmp_path: Path
) -> None:
    tenant, subject = owned_tenant(database, fuzzed_api)
    seeded(tenant)
    token = provider.token(subject, exp=int(time.time()) + 3600)
    assert_conforms(fuzz(fuzzed_api, token, tmp_path))
