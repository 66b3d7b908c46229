"""Public share links: owner management on grove-api, reading on grove-share, over real
HTTP, with owner sessions signed by a test identity provider (real keys)."""

from __future__ import annotations

import hashlib
import hmac
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import psycopg
import pytest
import requests

from grove_auth.keys import derive_secret
from grove_db import embedded
from grove_db.pool import set_tenant
from tests.support.clients import data_of, error_of
from tests.support.dev import run_readme_walkthrough
from tests.support.files import FILES, uploaded
from tests.support.keys import SECRET
from tests.support.processes import Running, start_share, start_worker
from tests.support.scraping import scrape
from tests.support.shares import Owner, Stack, new_owner, owner, read, stack
from tests.support.waiting import wait_until
from tests.support.windows import in_one_window

__all__ = ["owner", "stack"]  # the fixtures tests name

SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


@pytest.fixture(scope="module")
def worker(database: embedded.EmbeddedDatabase) -> Iterator[Running]:
    """A grove-worker, which extracts uploaded files into passages (without an embedding
    profile it never calls grove-ask, so none runs)."""
    running = start_worker(database, "127.0.0.1:1", GROVE_EMBEDDING_PROFILE="disabled")
    yield running
    running.stop()


def superuser(stack: Stack) -> psycopg.Connection[Any]:
    return psycopg.connect(stack.database.grove_superuser_url)


def read_json(url: str) -> dict[str, Any]:
    response = read(url, "application/json")
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"].startswith("application/json")
    return data_of(response)  # type: ignore[no-any-return]


def contents(url: str) -> list[str]:
    return [n["content"] for n in read_json(url)["notes"]]


class Elements(HTMLParser):
    """Every element and attribute of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def elements(page: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = Elements()
    parser.feed(page)
    return parser.tags


def test_a_reader_sees_a_shared_note_as_html_by_default(owner: Owner) -> None:
    note = owner.key.save("# Launch plan\n\nShip **Friday**, then `tag v1`.\n\n- one\n- two")
    created = owner.share("note", note["id"])
    token = created["token"]
    assert re.fullmatch(r"[A-Za-z0-9_-]{43,}", token)  # 32 random bytes, URL-safe
    assert created["url"] == f"{owner.stack.share.url}/public/shares/{token}"
    assert (created["status"], created["targetAvailable"]) == ("active", True)
    assert created["target"] == {"type": "note", "id": note["id"]}
    page = read(created["url"])  # no Accept header: a person
    assert page.status_code == 200
    assert page.headers["Content-Type"].startswith("text/html")
    assert "<h1>Launch plan</h1>" in page.text
    assert "<strong>Friday</strong>" in page.text and "<code>tag v1</code>" in page.text
    assert "<title>Launch plan</title>" in page.text  # the note's first line
    assert "<script" not in page.text
    browser = read(created["url"], "text/html,application/xhtml+xml,*/*;q=0.8")
    assert browser.headers["Content-Type"].startswith("text/html")
    # Only the keyed hash is stored.
    expected = hmac.new(derive_secret(SECRET, "share-token"), token.encode(), hashlib.sha256)
    with superuser(owner.stack) as conn:
        row = conn.execute(
            "SELECT token_hash, s::text AS everything FROM shares s WHERE id = %s",
            (created["id"],),
        ).fetchone()
    assert row is not None and bytes(row[0]) == expected.digest()
    assert token not in row[1]


def test_json_for_programs_and_the_default_title_of_a_notebook(owner: Owner) -> None:
    notebook = owner.tenant.notebook("Reading list")
    owner.key.save("Dune, by Frank Herbert", projectId=notebook)
    created = owner.share("notebook", notebook)
    shared = read_json(created["url"])
    assert shared["type"] == "notebook" and shared["title"] == "Reading list"
    assert shared["updatedAt"] is not None and shared["nextCursor"] is None
    [item] = shared["notes"]
    assert item["content"] == "Dune, by Frank Herbert"
    assert item["html"] == "<p>Dune, by Frank Herbert</p>\n"
    assert set(item) == {"kind", "content", "html", "createdAt", "updatedAt"}
    titled = owner.share("notebook", notebook, title="  Books I liked  ")
    assert titled["title"] == "Books I liked"
    assert read_json(titled["url"])["title"] == "Books I liked"


def test_keys_cannot_manage_shares(owner: Owner) -> None:
    note = owner.key.save("a note")
    mine = owner.share("note", note["id"])
    body = {"target": {"type": "note", "id": note["id"]}}
    for method, path, sent in (
        ("POST", "/v1/shares", body),
        ("GET", "/v1/shares", None),
        ("DELETE", f"/v1/shares/{mine['id']}", None),
    ):
        response = owner.key.session.request(
            method, owner.key.base + path, json=sent, headers=owner.key.headers(), timeout=10
        )
        assert response.status_code == 403, (method, path)
        assert error_of(response)["code"] == "owner_session_required"
    assert read(mine["url"]).status_code == 200  # the refused DELETE revoked nothing


def test_nothing_private_is_ever_rendered(owner: Owner, stack: Stack) -> None:
    private = new_owner(stack, name="Acme Secret Account")
    notebook = private.tenant.notebook("Private Parent Notebook")
    shared_book = private.tenant.notebook("Shared Book", parent=notebook)
    private.tenant.notebook("Sibling Secret Notebook")
    agent_key = private.tenant.key("Secret Connection Name", personal=True, all_notebooks=True)
    note = agent_key.save(
        "Original revision text zebra",
        projectId=shared_book,
        provenance={
            "sourceAgent": "secret-agent-007",
            "sourceRef": "https://internal.example/secret-ref",
        },
    )
    changed = agent_key.patch(
        f"/v1/memories/{note['id']}",
        {"content": "Current text of the shared note", "expectedVersion": 1},
    )
    assert changed.status_code == 200, changed.text
    note_share = private.share("note", note["id"])
    book_share = private.share("notebook", shared_book)
    forbidden = [
        "Acme Secret Account",
        str(private.tenant.account_id),
        "Private Parent Notebook",
        "Sibling Secret Notebook",
        "Secret Connection Name",
        "secret-agent-007",
        "internal.example",
        "secret-ref",
        "zebra",  # the first revision
        note["id"],
        notebook,
        shared_book,
        note_share["id"],
        book_share["id"],
        "explicit",  # capture mode
        "projectId",
        "sourceAgent",
        "version",
    ]
    for url in (note_share["url"], book_share["url"]):
        for accept in ("text/html", "application/json"):
            page = read(url, accept)
            assert page.status_code == 200
            assert "Current text of the shared note" in page.text
            leaked = [field for field in forbidden if field in page.text]
            assert leaked == [], (url, accept)


def test_revocation_takes_effect_on_the_next_request(owner: Owner) -> None:
    note = owner.key.save("revocable")
    created = owner.share("note", note["id"])
    assert read(created["url"]).status_code == 200
    revoked = owner.session.session.delete(
        f"{owner.stack.api.url}/v1/shares/{created['id']}",
        headers=owner.session.headers(),
        timeout=10,
    )
    assert revoked.status_code == 200, revoked.text
    assert data_of(revoked)["status"] == "revoked" and data_of(revoked)["revokedAt"]
    gone = read(created["url"])
    assert gone.status_code == 404
    assert "no shared page here" in gone.text
    again = owner.session.session.delete(
        f"{owner.stack.api.url}/v1/shares/{created['id']}",
        headers=owner.session.headers(),
        timeout=10,
    )
    assert data_of(again)["revokedAt"] == data_of(revoked)["revokedAt"]
    owner.tool("archive_memories", ids=[note["id"]])
    owner.tool("restore_memory", id=note["id"])
    assert read(created["url"]).status_code == 404  # restoring the note does not unrevoke
    unknown = owner.session.session.delete(
        f"{owner.stack.api.url}/v1/shares/{uuid.uuid4()}",
        headers=owner.session.headers(),
        timeout=10,
    )
    assert unknown.status_code == 404


def test_an_archived_deleted_or_expired_note_hides_its_link_until_restored(
    owner: Owner,
) -> None:
    note = owner.key.save("comes and goes")
    url = owner.share("note", note["id"])["url"]
    owner.tool("archive_memories", ids=[note["id"]])
    assert read(url).status_code == 404
    listed = data_of(owner.session.get("/v1/shares"))["items"][0]
    assert (listed["status"], listed["targetAvailable"]) == ("active", False)
    owner.tool("restore_memory", id=note["id"])
    assert read(url).status_code == 200
    with superuser(owner.stack) as conn:
        conn.execute(
            "UPDATE memories SET expires_at = now() - interval '1 second' WHERE id = %s",
            (note["id"],),
        )
    assert read(url).status_code == 404
    restored = owner.session.post(f"/v1/memories/{note['id']}/restore", {})
    assert restored.status_code == 200, restored.text
    assert read(url).status_code == 200
    forgotten = owner.key.post("/v1/memories/forget", {"ids": [note["id"]]})
    assert forgotten.status_code == 200, forgotten.text
    assert read(url).status_code == 404


def test_an_archived_notebook_hides_its_link_until_restored(owner: Owner) -> None:
    notebook = owner.tenant.notebook("Seasonal")
    owner.key.save("winter tyres", projectId=notebook)
    url = owner.share("notebook", notebook)["url"]
    owner.notebook_action(notebook, "archive")
    assert read(url).status_code == 404
    owner.notebook_action(notebook, "restore")
    assert contents(url) == ["winter tyres"]
    owner.notebook_action(notebook, "delete")
    assert read(url).status_code == 404


def test_a_notebook_share_shows_live_direct_membership(owner: Owner) -> None:
    notebook = owner.tenant.notebook("Live")
    child = owner.tenant.notebook("Child", parent=notebook)
    first = owner.key.save("first", projectId=notebook)
    second = owner.key.save("second", projectId=notebook)
    owner.key.save("in the child notebook", projectId=child)
    owner.key.save("personal, elsewhere")
    url = owner.share("notebook", notebook)["url"]
    assert contents(url) == ["second", "first"]  # newest first, direct members only
    third = owner.key.save("third", projectId=notebook)
    assert contents(url) == ["third", "second", "first"]
    owner.tool("move_memories", ids=[second["id"]], projectId=None)
    assert contents(url) == ["third", "first"]
    owner.tool("archive_memories", ids=[first["id"]])
    assert contents(url) == ["third"]
    owner.tool("move_memories", ids=[second["id"]], projectId=notebook)
    assert contents(url) == ["third", "second"]
    with superuser(owner.stack) as conn:
        conn.execute(
            "UPDATE memories SET expires_at = now() - interval '1 second' WHERE id = %s",
            (second["id"],),
        )
    assert contents(url) == ["third"]
    forgotten = owner.key.post("/v1/memories/forget", {"ids": [third["id"]]})
    assert forgotten.status_code == 200
    assert contents(url) == []
    assert "No notes here yet." in read(url).text


def test_pages_of_a_notebook_with_signed_cursors(owner: Owner, stack: Stack) -> None:
    notebook = owner.tenant.notebook("Many")
    for index in range(25):
        owner.key.save(f"note number {index:02d}", projectId=notebook)
    url = owner.share("notebook", notebook)["url"]
    first = read_json(url)
    assert [n["content"] for n in first["notes"]] == [
        f"note number {i:02d}" for i in range(24, 4, -1)
    ]
    cursor = first["nextCursor"]
    rest = read_json(f"{url}/notes?cursor={cursor}")
    assert [n["content"] for n in rest["notes"]] == [
        f"note number {i:02d}" for i in range(4, -1, -1)
    ]
    assert rest["nextCursor"] is None
    html = read(url).text
    older = re.search(r'href="(/public/shares/[^"]+/notes\?cursor=[^"]+)"', html)
    assert older is not None and "Older notes" in html
    follow = read(stack.share.url + older.group(1).replace("&amp;", "&"))
    assert "note number 04" in follow.text and "Newest notes" in follow.text
    assert len(read_json(f"{url}/notes?limit=50")["notes"]) == 25
    for bad in ("limit=51", "limit=0", "limit=abc", "unknown=1"):
        refused = read(f"{url}/notes?{bad}", "application/json")
        assert refused.status_code == 400, bad
        assert error_of(refused)["code"] == "validation_error"
    # Tampered, foreign and garbage cursors.
    body, _, signature = cursor.partition(".")
    tampered = body[:-2] + ("A" if body[-2] != "A" else "B") + body[-1] + "." + signature
    other = owner.tenant.notebook("Other")
    for index in range(21):
        owner.key.save(f"other {index}", projectId=other)
    foreign = read_json(owner.share("notebook", other)["url"])["nextCursor"]
    for bad_cursor in (tampered, foreign, "garbage", cursor + "x"):
        refused = read(f"{url}/notes?cursor={bad_cursor}", "application/json")
        assert refused.status_code == 400, bad_cursor
        assert error_of(refused)["code"] == "invalid_cursor"


def test_stored_script_injection_renders_inert(owner: Owner) -> None:
    payloads = [
        "<script>alert('x')</script>",
        "[click me](javascript:alert(1))",
        '<a href="javascript:alert(1)">raw link</a>',
        "<img src=x onerror=alert(1)>",
        '![pic" onerror="alert(1)](https://images.example.com/a.png)',
        '<svg onload="alert(1)"><circle r="5"/></svg>',
        "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
        "<iframe src='https://evil.example'></iframe>",
        "[ok](https://example.com/page)",
    ]
    note = owner.key.save("\n\n".join(payloads))
    url = owner.share("note", note["id"])["url"]
    for page in (read(url).text, read_json(url)["notes"][0]["html"]):
        tags = elements(page)
        assert not [t for t, _ in tags if t in ("script", "svg", "iframe", "object", "embed")]
        for tag, attrs in tags:
            assert not [a for a in attrs if a.startswith("on")], (tag, attrs)
            for name in ("href", "src"):
                value = (attrs.get(name) or "").strip().lower()
                assert not value.startswith(("javascript:", "data:", "vbscript:")), (tag, attrs)
        links = [attrs for tag, attrs in tags if tag == "a" and attrs.get("href")]
        assert {"href": "https://example.com/page", "rel": "nofollow noopener noreferrer"} in links
        assert all(a.get("rel") == "nofollow noopener noreferrer" for a in links)
        assert not [t for t, _ in tags if t == "img"]  # no image origin allowed by default


def test_images_load_only_from_allowed_origins(stack: Stack, owner: Owner) -> None:
    share = start_share(stack.database, GROVE_SHARE_IMAGE_ORIGINS="https://img.example.com")
    try:
        note = owner.key.save(
            "![ok](https://img.example.com/cat.png) ![no](https://tracker.example.net/p.gif)"
        )
        token = owner.share("note", note["id"])["token"]
        page = read(f"{share.url}/public/shares/{token}")
        assert page.status_code == 200
        images = [attrs for tag, attrs in elements(page.text) if tag == "img"]
        assert images == [{"src": "https://img.example.com/cat.png", "alt": "ok"}]
        assert "img-src https://img.example.com;" in page.headers["Content-Security-Policy"]
        assert '<a href="https://tracker.example.net/p.gif"' in page.text  # a link, not loaded
    finally:
        share.stop()


def test_security_headers_on_every_response(owner: Owner, stack: Stack) -> None:
    note = owner.key.save("headers")
    private = owner.share("note", note["id"])
    public = owner.share("note", note["id"], allowIndexing=True)
    answers = [
        read(private["url"]),
        read(private["url"], "application/json"),
        read(public["url"]),
        read(f"{stack.share.url}/public/shares/unknown-token"),
        read(f"{stack.share.url}/public/shares/{private['token']}/notes?limit=99"),
        read(f"{stack.share.url}/nowhere"),
        read(f"{stack.share.url}/healthz"),
        requests.post(private["url"], timeout=10),
    ]
    for response in answers:
        for name, value in SECURITY_HEADERS.items():
            assert response.headers.get(name) == value, (response.url, name)
        policy = response.headers["Content-Security-Policy"]
        assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
        assert "script-src" not in policy and "unsafe-inline" not in policy
        assert "Set-Cookie" not in response.headers
    indexed = [r.headers.get("X-Robots-Tag") for r in answers]
    assert indexed == ["noindex", "noindex", None, *["noindex"] * 5]
    assert '<meta name="robots"' not in answers[2].text
    assert [r.status_code for r in answers[3:]] == [404, 400, 404, 200, 405]


def test_credentials_are_ignored_and_never_echoed(owner: Owner) -> None:
    note = owner.key.save("credential-free")
    url = owner.share("note", note["id"])["url"]
    session = owner.stack.provider.token(owner.subject)
    plain = read(url, "application/json")
    with_credentials = read(
        url,
        "application/json",
        Authorization=f"Bearer {session}",
        Cookie="grove_session=cookie-secret-value",
    )
    with_key = read(url, "application/json", Authorization=f"Bearer {owner.key.key}")
    assert plain.json() == with_credentials.json() == with_key.json()
    for response in (with_credentials, with_key):
        echoed = response.text + str(response.headers)
        assert session not in echoed and "cookie-secret-value" not in echoed
        assert str(owner.key.key) not in echoed
        assert "Set-Cookie" not in response.headers


def test_unknown_and_dead_links_answer_the_same_404(owner: Owner, stack: Stack) -> None:
    note = owner.key.save("soon gone")
    revoked = owner.share("note", note["id"])
    owner.session.session.delete(
        f"{stack.api.url}/v1/shares/{revoked['id']}", headers=owner.session.headers(), timeout=10
    )
    expired = owner.share("note", note["id"])
    with superuser(stack) as conn:
        conn.execute(
            "UPDATE shares SET expires_at = now() - interval '1 second' WHERE id = %s",
            (expired["id"],),
        )
    unknown = f"{stack.share.url}/public/shares/{'A' * 43}"
    pages = [read(u).text for u in (unknown, revoked["url"], expired["url"])]
    assert pages[0] == pages[1] == pages[2]
    bodies = []
    for url in (unknown, revoked["url"], expired["url"]):
        response = read(url, "application/json")
        assert response.status_code == 404
        error = error_of(response)
        bodies.append((error["code"], error["message"]))
    assert bodies[0] == bodies[1] == bodies[2] == (bodies[0][0], bodies[0][1])
    assert bodies[0][0] == "not_found"


def test_expiry_title_and_list_limits(owner: Owner) -> None:
    note = owner.key.save("limits")
    target = {"type": "note", "id": note["id"]}
    cases: list[tuple[dict[str, Any], int]] = [
        ({"expiresAt": "2000-01-01T00:00:00Z"}, 400),
        ({"expiresAt": "2999-01-01T00:00:00"}, 400),  # no time zone
        ({"title": "x" * 200}, 201),
        ({"title": "x" * 201}, 400),
        ({"title": "   "}, 400),
        ({"expiresAt": "2999-01-01T00:00:00Z", "title": "later"}, 201),
        ({"target": {"type": "page", "id": note["id"]}}, 400),
        ({"unknown": True}, 400),
    ]
    for fields, status in cases:
        response = owner.session.post("/v1/shares", {"target": target, **fields})
        assert response.status_code == status, (fields, response.text)
    listed = data_of(owner.session.get("/v1/shares?limit=1"))
    assert len(listed["items"]) == 1 and listed["items"][0]["title"] == "later"
    assert listed["items"][0]["expiresAt"].startswith("2999-01-01")
    rest = data_of(owner.session.get(f"/v1/shares?limit=100&cursor={listed['nextCursor']}"))
    assert [s["title"] for s in rest["items"]] == ["x" * 200]
    assert rest["nextCursor"] is None
    too_many = owner.session.get("/v1/shares?limit=101")
    assert too_many.status_code == 400
    garbage = owner.session.get("/v1/shares?cursor=garbage")
    assert error_of(garbage)["code"] == "invalid_cursor"


def test_an_owner_cannot_share_or_see_another_accounts_things(owner: Owner, stack: Stack) -> None:
    other = new_owner(stack)
    their_note = other.key.save("theirs")
    their_book = other.tenant.notebook("Theirs")
    their_share = other.share("note", their_note["id"])
    for kind, target in (("note", their_note["id"]), ("notebook", their_book)):
        stolen = owner.session.post("/v1/shares", {"target": {"type": kind, "id": target}})
        assert stolen.status_code == 404, stolen.text
        assert error_of(stolen)["code"] == "not_found"
    assert data_of(owner.session.get("/v1/shares"))["items"] == []
    revoke = owner.session.session.delete(
        f"{stack.api.url}/v1/shares/{their_share['id']}",
        headers=owner.session.headers(),
        timeout=10,
    )
    assert revoke.status_code == 404
    assert read(their_share["url"]).status_code == 200
    deleted = owner.key.save("deleted before sharing")
    owner.key.post("/v1/memories/forget", {"ids": [deleted["id"]]})
    gone = owner.session.post("/v1/shares", {"target": {"type": "note", "id": deleted["id"]}})
    assert gone.status_code == 404
    archived = owner.key.save("archived before sharing")
    owner.tool("archive_memories", ids=[archived["id"]])
    refused = owner.session.post("/v1/shares", {"target": {"type": "note", "id": archived["id"]}})
    assert error_of(refused)["code"] == "target_archived"


def test_share_holds_only_the_key_its_links_are_hashed_with(stack: Stack) -> None:
    # In production it refuses the server secret itself, and a key that does not match
    # the server secret it is given alongside.
    with pytest.raises(RuntimeError, match="must not hold GROVE_SECRET_KEY in production"):
        start_share(stack.database, GROVE_ENV="production", GROVE_SECRET_KEY=SECRET)
    with pytest.raises(RuntimeError, match="does not match GROVE_SECRET_KEY"):
        start_share(stack.database, GROVE_SECRET_KEY=SECRET, GROVE_SHARE_TOKEN_SECRET="0" * 64)
    with pytest.raises(RuntimeError, match="64 hex digits"):
        start_share(stack.database, GROVE_SHARE_TOKEN_SECRET="not-hex")


def test_per_address_and_per_link_limits(stack: Stack, owner: Owner) -> None:
    note = owner.key.save("limited")
    token = owner.share("note", note["id"])["token"]

    def scenario() -> None:
        # Each run: this test's addresses with empty windows, a share with fresh counters.
        with superuser(stack) as conn:
            conn.execute(
                "DELETE FROM rate_limits WHERE bucket LIKE 'share:%:203.0.113._'"
                " OR bucket LIKE 'share:%:198.51.100.7'"
            )
        share = start_share(
            stack.database,
            GROVE_SHARE_RATE_LIMIT_PER_IP_PER_MINUTE="4",
            GROVE_SHARE_RATE_LIMIT_PER_LINK_PER_MINUTE="3",
            GROVE_SHARE_FORWARDED_HOPS="1",
        )
        try:
            read_over_the_limits(stack, share, token)
        finally:
            share.stop()

    in_one_window(scenario)


def read_over_the_limits(stack: Stack, share: Running, token: str) -> None:
    """Read the link ``token`` and unknown links past ``share``'s per-link and per-address
    limits (4 and 3 a minute)."""
    url = f"{share.url}/public/shares/{token}"
    # Per link and address: one reader passes three times, the fourth is refused,
    # and the link still answers everyone else.
    reader = {"X-Forwarded-For": "203.0.113.1"}
    link = [read(url, **reader) for _ in range(4)]
    assert [r.status_code for r in link] == [200, 200, 200, 429]
    assert 1 <= int(link[3].headers["Retry-After"]) <= 61
    assert "this link from this address" in link[3].text
    assert read(url, **{"X-Forwarded-For": "203.0.113.2"}).status_code == 200
    # Per address: one address reading four unknown links passes four times, not five;
    # guesses are counted against the address alone (no bucket per guessed link).
    address = [
        read(
            f"{share.url}/public/shares/unknown-{i}",
            "application/json",
            **{"X-Forwarded-For": "198.51.100.7"},
        )
        for i in range(5)
    ]
    assert [r.status_code for r in address] == [404, 404, 404, 404, 429]
    assert error_of(address[4])["code"] == "rate_limited"
    assert "this address" in error_of(address[4])["message"]
    with superuser(stack) as conn:
        guessed = conn.execute(
            "SELECT count(*) FROM rate_limits WHERE bucket LIKE 'share:link:%:198.51.100.7'"
        ).fetchone()
    assert guessed == (0,)
    samples = scrape(share)
    limited = {s[0]["limit"]: s[1] for s in samples["grove_share_rate_limited_total"]}
    assert limited == {"ip": 1.0, "link": 1.0}


def test_metrics_and_probes(owner: Owner, stack: Stack) -> None:
    before = scrape(stack.share)
    note = owner.key.save("counted")
    url = owner.share("note", note["id"])["url"]
    read(url)
    read(url, "application/json")
    read(f"{stack.share.url}/public/shares/nope")
    after = scrape(stack.share)

    def value(samples: dict[str, Any], name: str, **labels: str) -> float:
        return float(sum(v for got, v in samples.get(name, []) if labels.items() <= got.items()))

    for fmt in ("html", "json"):
        grew = value(after, "grove_share_views_total", type="note", format=fmt) - value(
            before, "grove_share_views_total", type="note", format=fmt
        )
        assert grew == 1
    not_found = value(after, "grove_share_not_found_total") - value(
        before, "grove_share_not_found_total"
    )
    assert not_found == 1
    assert value(after, "grove_build_info", service="share") == 1
    assert read(f"{stack.share.url}/healthz").json()["data"]["status"] == "ok"
    assert read(f"{stack.share.url}/readyz").json()["data"]["database"] == "ok"


def test_the_share_role_can_only_call_the_share_functions(stack: Stack) -> None:
    with psycopg.connect(stack.database.share_url) as conn:
        for statement in (
            "SELECT count(*) FROM memories",
            "SELECT count(*) FROM shares",
            "SELECT count(*) FROM accounts",
            "SELECT * FROM grove_share_live('\\x00'::bytea)",
            "INSERT INTO rate_limits VALUES ('x', now(), 1)",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
            conn.rollback()
        conn.execute("SELECT set_config('grove.account_id', gen_random_uuid()::text, false)")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT count(*) FROM memories")


def grove_share_refuses(url: str) -> str:
    done = subprocess.run(
        [str(Path(sys.executable).with_name("grove-share"))],
        env={
            "PATH": "/usr/bin:/bin",
            "GROVE_SHARE_DATABASE_URL": url,
            "GROVE_SECRET_KEY": SECRET,
            "GROVE_SHARE_PORT": "0",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    # Refused as an unsafe role, in one line (not as a database it cannot reach).
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert re.match(r"grove-share: (refusing to run: )?database role '", line), line
    return line


def test_start_up_refuses_a_role_with_wider_rights(stack: Stack) -> None:
    runtime = grove_share_refuses(stack.database.runtime_url)
    assert "wider rights than grove-share needs" in runtime and "tables" in runtime
    admin_url = stack.database.grove_superuser_url
    assert "is a superuser" in grove_share_refuses(admin_url)
    role = f"share_probe_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
    probe_url = embedded.role_url(stack.database.share_url, role)
    assert "may not call grove_public_rate_hit" in grove_share_refuses(probe_url)
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"GRANT {embedded.SHARE_ROLE} TO {role}")
        conn.execute(f"GRANT SELECT (id) ON accounts TO {role}")
    assert "tables" in grove_share_refuses(probe_url)


#: The functions a share page calls, in the order it calls them.
SHARE_FUNCTIONS = ("grove_public_share", "grove_public_share_notes")


def share_function_calls(database: embedded.EmbeddedDatabase) -> tuple[int, ...]:
    """How often each of ``SHARE_FUNCTIONS`` has been called, as PostgreSQL counts it."""
    with psycopg.connect(database.grove_superuser_url, autocommit=True) as conn:
        rows: dict[str, int] = dict(
            conn.execute(
                "SELECT funcname, calls FROM pg_stat_user_functions"
                " WHERE schemaname = 'public' AND funcname = ANY(%s)",
                (list(SHARE_FUNCTIONS),),
            ).fetchall()
        )
    return tuple(int(rows.get(name, 0)) for name in SHARE_FUNCTIONS)


def test_time_to_answer_does_not_depend_on_the_token_being_known(
    owner: Owner, stack: Stack
) -> None:
    """Both answers take the same path through the database (the same two function
    calls): counted by PostgreSQL itself, not timed, for unknown and revoked links alike.
    A path that skipped the database for unknown tokens would make fewer calls."""
    note = owner.key.save("timing")
    revoked = owner.share("note", note["id"])
    owner.session.session.delete(
        f"{stack.api.url}/v1/shares/{revoked['id']}", headers=owner.session.headers(), timeout=10
    )
    database = stack.database
    # grove-share sessions count their function calls while this test runs.
    with psycopg.connect(database.superuser_url, autocommit=True) as conn:
        conn.execute(f"ALTER ROLE {embedded.SHARE_ROLE} SET track_functions = 'pl'")
    session = requests.Session()
    requests_each = 5

    def calls_to_answer(path: str) -> tuple[int, ...]:
        """The function calls of ``requests_each`` requests for ``path``, all 404, on a
        grove-share of its own: stopped, its sessions end, and a session's counts reach
        PostgreSQL's statistics as it ends (not only once idle for ten seconds)."""
        before = share_function_calls(database)
        share = start_share(database)
        try:
            for _ in range(requests_each):
                assert session.get(f"{share.url}{path}", timeout=10).status_code == 404
        finally:
            share.stop()
        wait_until(lambda: share_function_calls(database)[0] - before[0] >= requests_each)
        after = share_function_calls(database)
        return tuple(a - b for a, b in zip(after, before, strict=True))

    try:
        unknown = calls_to_answer(f"/public/shares/{'B' * 43}")
        dead = calls_to_answer(revoked["url"].removeprefix(stack.share.url))
        assert unknown == dead == (requests_each, requests_each)
    finally:
        with psycopg.connect(database.superuser_url, autocommit=True) as conn:
            conn.execute(f"ALTER ROLE {embedded.SHARE_ROLE} RESET track_functions")


def test_private_notes_in_a_share_tenant_context_stay_private(stack: Stack) -> None:
    """The share functions set the tenant only inside their own call."""
    note_owner = new_owner(stack)
    note = note_owner.key.save("context check")
    token = note_owner.share("note", note["id"])["token"]
    secret = derive_secret(SECRET, "share-token")
    token_hash = hmac.new(secret, token.encode(), hashlib.sha256).digest()
    with psycopg.connect(stack.database.share_url) as conn:
        rows = conn.execute("SELECT * FROM grove_public_share(%s)", (token_hash,)).fetchall()
        assert len(rows) == 1
        setting = conn.execute("SELECT current_setting('grove.account_id', true)").fetchone()
        assert setting is not None and setting[0] in ("", None)
    with psycopg.connect(stack.database.runtime_url) as conn:
        set_tenant(conn, note_owner.tenant.account_id)
        count = conn.execute("SELECT count(*) FROM shares").fetchone()
        assert count is not None and count[0] == 1
        conn.rollback()
        set_tenant(conn, uuid.uuid4())  # another account sees none of them (RLS)
        other = conn.execute("SELECT count(*) FROM shares").fetchone()
        assert other is not None and other[0] == 0


# --- files: their passages are never published ---------------------------------------

PAYROLL = "Payroll for March: Dana Okafor is paid 9,140 a month, Lee Varga 8,725."
BONUSES = "Bonus pool for the year: 41,000, split by the board in December."


def extracted(owner: Owner, text: str, **params: Any) -> dict[str, Any]:
    """A text file uploaded with the owner's key, once the worker has made its passages."""
    file = uploaded(owner.key, text.encode(), "text/plain", **params)

    def ready() -> dict[str, Any] | None:
        now = data_of(owner.key.get(f"{FILES}/{file['id']}"))
        return now if now["indexing"] in ("ready", "failed") else None

    done: dict[str, Any] = wait_until(ready)
    assert (done["indexing"], done["passages"]) == ("ready", 1), done
    return done


def passage_of(stack: Stack, file: dict[str, Any]) -> str:
    """The id of the one passage extracted from ``file``."""
    with superuser(stack) as conn:
        (row,) = conn.execute(
            "SELECT id FROM memories WHERE file_id = %s AND kind = 'passage'", (file["id"],)
        ).fetchall()
    return str(row[0])


def test_a_notebook_share_never_shows_a_file_passage(owner: Owner, worker: Running) -> None:
    """A file's text stays private in a shared notebook, whether it was uploaded before
    the link was made or after (the link shows live membership)."""
    notebook = owner.tenant.notebook("Office hours")
    owner.key.save("Tuesdays at ten, in room 4.", projectId=notebook)
    extracted(owner, PAYROLL, name="payroll.txt", projectId=notebook)
    url = owner.share("notebook", notebook)["url"]
    shown = read_json(url)
    assert [n["content"] for n in shown["notes"]] == ["Tuesdays at ten, in room 4."]
    extracted(owner, BONUSES, name="bonuses.txt", projectId=notebook)
    for page in (url, f"{url}/notes", f"{url}/notes?limit=50"):
        html = read(page).text
        assert "Tuesdays at ten" in html
        assert "Payroll" not in html and "Bonus pool" not in html
        notes = read_json(page)["notes"]
        assert [(n["kind"], n["content"]) for n in notes] == [
            ("fact", "Tuesdays at ten, in room 4.")
        ]
    # Nor does an upload show as a change of the page.
    assert read_json(url)["updatedAt"] == shown["updatedAt"]


def test_a_passage_cannot_be_the_target_of_a_note_share(owner: Owner, worker: Running) -> None:
    file = extracted(owner, PAYROLL, name="payroll.txt")
    passage = passage_of(owner.stack, file)
    refused = owner.session.post("/v1/shares", {"target": {"type": "note", "id": passage}})
    assert refused.status_code == 400, refused.text
    error = error_of(refused)
    assert error["code"] == "validation_error"
    assert error["details"] == [
        {
            "field": "target.id",
            "message": "is a passage of an uploaded file: files are never published by a link",
        }
    ]
    assert data_of(owner.session.get("/v1/shares"))["items"] == []


def test_a_link_made_earlier_to_a_passage_shows_nothing(
    owner: Owner, stack: Stack, worker: Running
) -> None:
    """A link to a passage stored before creating one was refused (written here straight
    into the table) answers exactly as an unknown link does: the database refuses it."""
    file = extracted(owner, PAYROLL, name="payroll.txt")
    passage = passage_of(stack, file)
    token = f"{uuid.uuid4().hex}{uuid.uuid4().hex}"[:43]
    token_hash = hmac.new(
        derive_secret(SECRET, "share-token"), token.encode(), hashlib.sha256
    ).digest()
    with psycopg.connect(stack.database.migration_url) as conn:
        set_tenant(conn, owner.tenant.account_id)
        conn.execute(
            "INSERT INTO shares (account_id, id, token_hash, target_type, memory_id)"
            " VALUES (%s, gen_random_uuid(), %s, 'note', %s)",
            (owner.tenant.account_id, token_hash, passage),
        )
    url = f"{stack.share.url}/public/shares/{token}"
    unknown = f"{stack.share.url}/public/shares/{'A' * 43}"
    for page in (url, f"{url}/notes"):
        html = read(page)
        assert html.status_code == 404 and "Payroll" not in html.text
        assert html.text == read(unknown).text
        answer = read(page, "application/json")
        assert answer.status_code == 404 and error_of(answer)["code"] == "not_found"
    with psycopg.connect(stack.database.share_url) as conn:
        for function in ("grove_public_share(%s)", "grove_public_share_notes(%s, null, null, 50)"):
            assert conn.execute(f"SELECT * FROM {function}", (token_hash,)).fetchall() == []
    [listed] = data_of(owner.session.get("/v1/shares"))["items"]
    assert (listed["status"], listed["targetAvailable"]) == ("active", False)


def test_the_readme_share_example_runs(
    stack: Stack, database: embedded.EmbeddedDatabase, tmp_path: Path
) -> None:
    """The README's share walkthrough, as printed."""
    out = run_readme_walkthrough(
        "Public share links", database, tmp_path, GROVE_SHARE_PUBLIC_URL=stack.share.url
    )
    assert "<h1>Release checklist</h1>" in out
    assert "<strong>announce</strong>" in out
    assert '"type":"note"' in out.replace(" ", "")
    assert '"status":"active"' in out.replace(" ", "")
