"""Signed cursors refuse tampering and reuse in another listing."""

from __future__ import annotations

import pytest

from grove_memory import cursors
from grove_memory.errors import InvalidCursor

SECRET = b"s" * 32
BINDING = {"a": "account", "c": "connection", "f": {"sort": "updated_desc"}}


def test_round_trip_returns_the_payload() -> None:
    token = cursors.encode(SECRET, {"bind": BINDING, "key": [1, 2]})
    assert cursors.decode(SECRET, token, BINDING)["key"] == [1, 2]


@pytest.mark.parametrize(
    "mutate",
    [
        lambda t: t[:-1] + ("A" if t[-1] != "A" else "B"),
        lambda t: "x" + t,
        lambda t: t.replace(".", ""),
        lambda t: "!!!." + t.split(".")[1],
    ],
)
def test_tampered_cursor_is_rejected(mutate) -> None:  # type: ignore[no-untyped-def]
    token = cursors.encode(SECRET, {"bind": BINDING})
    with pytest.raises(InvalidCursor):
        cursors.decode(SECRET, mutate(token), BINDING)


def test_cursor_for_another_binding_or_secret_is_rejected() -> None:
    token = cursors.encode(SECRET, {"bind": BINDING})
    with pytest.raises(InvalidCursor):
        cursors.decode(SECRET, token, {**BINDING, "c": "other connection"})
    with pytest.raises(InvalidCursor):
        cursors.decode(b"t" * 32, token, BINDING)
