"""The embedding queue: leases, retries, fences, against an OpenAI-compatible provider."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.integration.conftest import OpenAIStack, data_of, wait_until


def current(stack: OpenAIStack, note: dict[str, Any]) -> dict[str, Any]:
    return data_of(stack.tenant.client.get(f"/v1/memories/{note['id']}"))  # type: ignore[no-any-return]


def test_saved_note_becomes_ready_through_the_openai_profile(
    openai_stack: Callable[..., OpenAIStack],
) -> None:
    stack = openai_stack()
    note = stack.tenant.client.save("hello provider")
    assert note["indexing"] == "pending"
    wait_until(lambda: current(stack, note)["indexing"] == "ready")
    assert stack.fake.calls == ["hello provider"]
