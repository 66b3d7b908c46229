"""Request contracts: trimming, limits, and rules that span fields."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from grove_contracts.ask import AskRequest
from grove_contracts.errors import validation_details
from grove_contracts.notes import ForgetRequest, RememberRequest, UpdateRequest
from grove_contracts.project_memory import (
    MAX_BODY_BYTES,
    MAX_EMBEDDING_DIMENSIONS,
    MAX_KEY_CHARS,
    MAX_TITLE_CHARS,
    POOL_MAX_REQUEST_BYTES,
    WriteRecordArguments,
)


def test_content_is_trimmed_before_its_length_is_checked() -> None:
    assert RememberRequest(content="  hi  ", kind="fact").content == "hi"
    assert len(RememberRequest(content=" " + "a" * 6000 + " ", kind="fact").content) == 6000
    with pytest.raises(ValidationError):
        RememberRequest(content="a" * 6001, kind="fact")


def test_handoff_requires_a_task_id() -> None:
    with pytest.raises(ValidationError, match="taskId"):
        RememberRequest(content="c", kind="handoff")
    assert RememberRequest(content="c", kind="handoff", taskId="t-1").taskId == "t-1"


def test_update_distinguishes_omitted_from_null_retention() -> None:
    assert "retentionDays" not in UpdateRequest().model_fields_set
    assert "retentionDays" in UpdateRequest(retentionDays=None).model_fields_set
    with pytest.raises(ValidationError, match="content"):
        UpdateRequest(content=None)


def test_forget_takes_one_to_one_hundred_ids_in_exactly_one_form() -> None:
    ids = [uuid.uuid4() for _ in range(101)]
    assert len(ForgetRequest(ids=ids[:100]).targets()) == 100
    refused: list[dict[str, Any]] = [
        {"ids": ids},
        {"ids": []},
        {},
        {"ids": ids[:1], "items": [{"id": ids[0]}]},
    ]
    for bad in refused:
        with pytest.raises(ValidationError):
            ForgetRequest.model_validate(bad)


def test_search_exclusions_are_split_from_the_wanted_words() -> None:
    from grove_memory.search.recall import split_exclusions

    assert split_exclusions("replication lag -karaoke") == ("replication lag", "karaoke")
    assert split_exclusions('a -"two words" b -c') == ("a b", '"two words" OR c')
    assert split_exclusions("well-known terms") == ("well-known terms", "")


@pytest.mark.parametrize(
    "bad, message",
    [("a\x00b", "nul character"), ("a\udc00b", "unicode")],
    ids=["nul", "lone-surrogate"],
)
def test_text_postgresql_cannot_store_is_a_validation_error_of_its_field(
    bad: str, message: str
) -> None:
    cases: list[tuple[type[BaseModel], dict[str, Any], str]] = [
        (RememberRequest, {"content": bad, "kind": "fact"}, "content"),
        (
            RememberRequest,
            {"content": "c", "kind": "fact", "provenance": {"sourceRef": bad}},
            "provenance.sourceRef",
        ),
        (AskRequest, {"query": "q", "previousQuestions": ["ok", bad]}, "previousQuestions"),
    ]
    for model, data, field in cases:
        with pytest.raises(ValidationError) as caught:
            model.model_validate(data)
        [detail] = validation_details(caught.value)
        assert detail.field == field
        assert message in detail.message.lower()
    assert RememberRequest(content="emoji \U0001f600 and ümlauts", kind="fact")


def test_the_pool_body_limit_fits_the_largest_record_as_an_mcp_call() -> None:
    # POOL_MAX_REQUEST_BYTES is the body limit of the pool's REST routes and of a project
    # key's MCP requests. The largest record a write accepts, each character escaped as
    # widely as JSON allows (a 4-byte character is two \uXXXX escapes: 12 bytes) and a
    # 3,072-number vector of the longest numbers, fits in one tools/call with room left.
    wide = "\U0001f600"
    arguments = {
        "orgId": str(uuid.uuid4()),
        "projectId": str(uuid.uuid4()),
        "key": wide * MAX_KEY_CHARS,
        "title": wide * MAX_TITLE_CHARS,
        "body": wide * (MAX_BODY_BYTES // 4),
        "kind": "state",
        "authority": "observed",
        "provenance": {
            "source": wide * 200,
            "ref": wide * 2000,
            "verification": "source_verified",
            "observedAt": "2026-01-01T00:00:00.123456+00:00",
        },
        "expiresAt": "2999-12-31T23:59:59.999999+00:00",
        "embedding": {
            "space": wide * 200,
            "values": [-1.1754943508222875e-38] * MAX_EMBEDDING_DIMENSIONS,
        },
    }
    WriteRecordArguments.model_validate(arguments)  # a record the pool accepts
    call = {
        "jsonrpc": "2.0",
        "id": "f" * 36,
        "method": "tools/call",
        "params": {"name": "project_memory_write", "arguments": arguments},
    }
    size = len(json.dumps(call, ensure_ascii=True).encode())
    assert 64 * 1024 < size < POOL_MAX_REQUEST_BYTES * 0.75, size
