"""The website's return path after sign-in (``?next=``) never leaves the website."""

from __future__ import annotations

from urllib.parse import urljoin, urlsplit

import pytest

from grove_console.page import DEFAULT_NEXT, safe_next

SITE = "https://memory.example"

#: Return paths that lead elsewhere in a browser, or break the ``Location`` header.
BYPASSES = [
    "/\t/evil.example",  # a browser drops the tab: //evil.example
    "/%09/evil.example",
    "/\n/evil.example",
    "/\r\n/evil.example",
    "/notes\r\nSet-Cookie: x=1",  # header injection (it was a 500)
    "/notes%0D%0ASet-Cookie:%20x=1",
    "//evil.example",
    "//evil.example@memory.example",
    "///evil.example",
    "/\\evil.example",  # a browser reads a backslash as a slash
    "\\\\evil.example",
    "/%5Cevil.example",
    "/%5C%5Cevil.example",
    "/%2F/evil.example",
    "/%2F%2Fevil.example",
    "%2F%2Fevil.example",
    "/%252F%252Fevil.example",  # decoded twice
    "https://evil.example",
    "https:/evil.example",
    "//evil@memory.example",
    "javascript:alert(1)",
    " /notes",
    "/ /evil.example",
    "evil.example",
    "/notes\x00",
    "/notes\x7f",
    "/caf\u00e9",
    "",
    None,
]


@pytest.mark.parametrize("value", BYPASSES)
def test_a_return_path_that_could_leave_the_website_falls_back_to_the_notes(
    value: str | None,
) -> None:
    assert safe_next(value) == DEFAULT_NEXT


@pytest.mark.parametrize(
    "value",
    [
        "/notes",
        "/connections/approve?request=0b7c2d4e-8a51-4a8e-9a38-0c1d5c0f7b12",
        "/notes?q=launch%20checklist&cursor=abc",
        "/@evil.example",  # userinfo-looking, but a path on this website
        "/notes/@evil.example:443",
    ],
)
def test_a_path_on_this_website_is_kept(value: str) -> None:
    assert safe_next(value) == value
    assert urlsplit(urljoin(SITE + "/", value)).netloc == "memory.example"
