"""grove-client without a server: what it ships with, and its retry and error rules."""

from __future__ import annotations

import ast
import sys
import tomllib
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import httpx
import pytest

import grove_client
from grove_client import Grove, GroveError, Unavailable
from grove_client.retries import retry_after

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "python"
NOTE_ID = "8f0e8a4e-3c6e-4a55-9d8e-1f2a3b4c5d6e"
NOTE = {
    "id": NOTE_ID,
    "content": "a note",
    "kind": "fact",
    "version": 1,
    "createdAt": "2026-12-06T10:00:00Z",
    "updatedAt": "2026-12-06T10:00:00Z",
    "someFutureField": {"kept": True},
}


def test_the_client_ships_alone_on_httpx_and_pydantic() -> None:
    project = tomllib.loads((CLIENT / "pyproject.toml").read_text())["project"]
    assert project["dependencies"] == ["httpx>=0.28,<1", "pydantic>=2"]
    assert project["version"] == grove_client.__version__
    allowed = {"httpx", "pydantic", "grove_client", *sys.stdlib_module_names}
    imported = {
        name.split(".")[0]
        for path in (CLIENT / "grove_client").glob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        for name in imported_names(node)
    }
    assert imported <= allowed, imported - allowed


def imported_names(node: ast.AST) -> list[str]:
    """The modules an import statement names (none for a relative import)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [node.module]
    return []


def answering(*answers: httpx.Response) -> tuple[Grove, list[httpx.Request]]:
    """A client whose requests get ``answers`` in turn; and the requests it sent."""
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return answers[len(sent) - 1]

    transport = httpx.MockTransport(answer)
    return Grove("http://grove.test", "k", backoff=0.01, transport=transport), sent


def test_a_503_without_retry_after_is_resent_after_a_short_backoff() -> None:
    unavailable = {"success": False, "error": {"code": "unavailable", "message": "later"}}
    grove, sent = answering(
        httpx.Response(503, json=unavailable),
        httpx.Response(200, json={"success": True, "data": NOTE}),
    )
    note = grove.get(NOTE_ID)
    assert note.content == "a note" and note.model_extra == {"someFutureField": {"kept": True}}
    assert len(sent) == 2


def test_retries_are_bounded_then_the_error_is_raised() -> None:
    unavailable = {"success": False, "error": {"code": "unavailable", "message": "later"}}
    grove, sent = answering(*[httpx.Response(503, json=unavailable)] * 4)
    with pytest.raises(Unavailable) as raised:
        grove.get(NOTE_ID)
    assert (raised.value.status, raised.value.code, len(sent)) == (503, "unavailable", 4)


@pytest.mark.parametrize(
    ("answer", "code"),
    [
        (httpx.Response(502, text="<html>bad gateway</html>"), "http_502"),
        (httpx.Response(200, json={"id": 1}), "invalid_response"),
    ],
)
def test_an_answer_that_is_not_an_envelope_is_an_error(answer: httpx.Response, code: str) -> None:
    grove, _ = answering(answer)
    with pytest.raises(GroveError) as raised:
        grove.get(NOTE_ID)
    assert raised.value.code == code


def test_retry_after_is_read_as_seconds_or_a_date() -> None:
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert retry_after(httpx.Response(429, headers={"Retry-After": "2"})) == 2.0
    assert 28 <= (retry_after(httpx.Response(429, headers={"Retry-After": later})) or 0) <= 30
    assert retry_after(httpx.Response(429, headers={"Retry-After": "soon"})) is None
    assert retry_after(httpx.Response(429)) is None
