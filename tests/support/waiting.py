"""Waiting for state, never for a duration."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def wait_until(predicate: Callable[[], Any], timeout: float = 30.0, interval: float = 0.1) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout} s")


def wait_for(
    read: Callable[[], T],
    until: Callable[[T], object],
    timeout: float = 30.0,
    interval: float = 0.2,
    context: Callable[[], object] | None = None,
) -> T:
    """Read until ``until`` holds of what was read, and return that value.

    Fails after ``timeout`` with the last value read, so a state that never comes shows
    what it was instead of letting the test go on to pass on whatever it had; with
    ``context``, what it answers then too (say, a service's last log lines).
    """
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if until(value):
            return value
        if time.monotonic() > deadline:
            seen = f"not reached within {timeout} s; last seen: {value!r}"
            raise AssertionError(f"{seen}; {context()!r}" if context else seen)
        time.sleep(interval)
