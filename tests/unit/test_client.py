"""grove-client without a server: what it ships with, and its retry and error rules."""

from __future__ import annotations

import ast
import asyncio
import io
import json
import sys
import tomllib
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import httpx
import pydantic
import pytest

import grove_client
from grove_client import AsyncGrove, Conflict, Grove, GroveError, NotFound, Unavailable
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


def test_the_async_client_resends_a_503_then_maps_the_error_as_the_sync_one() -> None:
    unavailable = {"success": False, "error": {"code": "unavailable", "message": "later"}}
    answers = [httpx.Response(503, json=unavailable)] * 4
    answers += [httpx.Response(404, json={"success": False, "error": {"code": "not_found"}})]
    sent: list[httpx.Request] = []

    async def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return answers[len(sent) - 1]

    async def calls() -> tuple[GroveError, GroveError]:
        transport = httpx.MockTransport(answer)
        async with AsyncGrove("http://grove.test", "k", backoff=0.01, transport=transport) as grove:
            with pytest.raises(Unavailable) as down:
                await grove.get(NOTE_ID)
            with pytest.raises(NotFound) as missing:
                await grove.get(NOTE_ID)
        return down.value, missing.value

    down, missing = asyncio.run(calls())
    assert (down.status, down.code, missing.code, len(sent)) == (503, "unavailable", "not_found", 5)
    assert {r.headers["user-agent"] for r in sent} == {grove_client.USER_AGENT}


def test_bodies_send_null_only_where_it_was_given() -> None:
    grove, sent = answering(*[httpx.Response(200, json={"success": True, "data": NOTE})] * 2)
    grove.update(NOTE_ID, project_id=None, content="moved")
    assert json.loads(sent[0].content) == {"projectId": None, "content": "moved"}
    assert sent[0].headers["idempotency-key"]
    with pytest.raises(pydantic.ValidationError):  # the answer is not an ask result
        grove.ask("where?", project_id=None, previous_questions=("first?",))
    assert json.loads(sent[1].content) == {
        "query": "where?",
        "projectId": None,
        "previousQuestions": ["first?"],
    }


def test_an_export_is_read_line_by_line_and_its_error_raised() -> None:
    lines = b'{"type": "export", "version": 1}\n\n{"type": "memory"}\n'
    refused = {"success": False, "error": {"code": "rate_limited", "message": "one at a time"}}
    grove, sent = answering(httpx.Response(200, content=lines), httpx.Response(409, json=refused))
    assert [line["type"] for line in grove.export()] == ["export", "memory"]
    with pytest.raises(Conflict) as busy:
        list(grove.export())
    assert (busy.value.code, len(sent)) == ("rate_limited", 2)


IMPORT_STATUS: dict[str, object] = {
    "id": NOTE_ID,
    "state": "done",
    "counts": {"notebooks": 0, "notes": 1, "revisions": 1},
    "warnings": [],
    "error": None,
    "line": None,
    "createdAt": "2026-12-06T10:00:00Z",
    "updatedAt": "2026-12-06T10:00:00Z",
}


def failing_once() -> tuple[Grove, list[tuple[str, bytes]]]:
    """A client whose first request loses its connection; the requests it sent."""
    sent: list[tuple[str, bytes]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append((str(request.url), request.read()))
        if len(sent) == 1:
            raise httpx.ConnectError("reset", request=request)
        return httpx.Response(200, json={"success": True, "data": IMPORT_STATUS})

    transport = httpx.MockTransport(answer)
    return Grove("http://grove.test", "k", backoff=0.01, transport=transport), sent


def test_an_import_is_resent_under_its_id_only_when_its_body_can_be_sent_again() -> None:
    lines = [b'{"type": "export", "version": 1}\n', b'{"type": "memory"}\n']
    for replayable in (lines, b"".join(lines), io.BytesIO(b"".join(lines))):
        grove, sent = failing_once()
        assert grove.import_export(replayable).counts.notes == 1
        assert len(sent) == 2 and sent[0] == sent[1]
        assert sent[0][0].startswith("http://grove.test/v1/import?id=")
        assert sent[0][1] == b"".join(lines)
    grove, sent = failing_once()
    with pytest.raises(Unavailable) as lost:
        grove.import_export(line for line in lines)  # a generator is streamed once
    assert (lost.value.code, len(sent)) == ("connection", 1)


def test_search_all_sends_each_pages_cursor() -> None:
    def page(cursor: str | None) -> httpx.Response:
        items = [{"memory": NOTE, "score": 1.0}]
        return httpx.Response(
            200, json={"success": True, "data": {"items": items, "nextCursor": cursor}}
        )

    grove, sent = answering(page("c1"), page(None))
    assert len(list(grove.search_all("note", limit=1, kind="fact"))) == 2
    bodies = [json.loads(r.content) for r in sent]
    assert bodies == [
        {"query": "note", "limit": 1, "kind": "fact"},
        {"query": "note", "limit": 1, "kind": "fact", "cursor": "c1"},
    ]
