"""The owner's Files & storage view, notebook briefs and suggestions in the owner website
(issue 23), in a real browser against a real provider, api and worker.

One stack per module (oidc-provider, grove-api with a small upload limit, a grove-worker
that polls often so that extraction, briefs and suggestions arrive within seconds, and
grove-console); the browser helpers are those of ``test_console``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import requests
from playwright.sync_api import BrowserContext, FilePayload, Page

from grove_console.files import human_bytes
from grove_db import embedded
from tests.support.clients import Client, data_of
from tests.support.console import (
    API_RESOURCE,
    CONSOLE,
    CONSOLE_SECRET,
    login,
    shot,
    sign_in_at_provider,
    website_identity,
    website_provider,
)
from tests.support.oidc_provider import OidcProvider
from tests.support.processes import (
    Running,
    free_port,
    start_api,
    start_console,
    start_worker,
)
from tests.support.topics import BILLING, DEPLOYS, UNFILED
from tests.support.waiting import wait_for, wait_until

#: ``GROVE_MAX_FILE_BYTES`` of this module's api.
LIMIT = 4096
RUNBOOK = b"Restart the gateway first.\n\nThen restart the worker and watch the queue.\n"


@dataclass
class FilesSite:
    provider: OidcProvider
    api: Running
    console: Running

    def owner_api(self, person: str) -> Client:
        """The owner's API client, signed in over HTTP (for setting up and checking)."""
        callback = f"{self.console.url}/auth/callback"
        tokens = self.provider.sign_in(person, CONSOLE, callback, API_RESOURCE, CONSOLE_SECRET)
        return Client(self.api.url, tokens.access_token)


@pytest.fixture(scope="module")
def site(database: embedded.EmbeddedDatabase) -> Iterator[FilesSite]:
    console_port = free_port()
    origin = f"http://127.0.0.1:{console_port}"
    provider = website_provider(origin)
    identity = website_identity(provider, origin)
    # Briefs wait two seconds after a change; the worker looks for jobs often, and at the
    # end gives back the extractions it is still running rather than finish them.
    worker = start_worker(
        database,
        "127.0.0.1:1",
        GROVE_EMBEDDING_PROFILE="disabled",
        GROVE_WORKER_POLL_SECONDS="0.3",
        GROVE_WORKER_SHUTDOWN_GRACE_SECONDS="1",
    )
    api = start_api(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_EMBEDDING_PROFILE": "disabled",
            "GROVE_OIDC_PROVISIONING": "personal",
            "GROVE_OIDC_AUTHORIZED_PARTY": CONSOLE,
            "GROVE_API_WORKERS": "1",
            "GROVE_MAX_FILE_BYTES": str(LIMIT),
            **identity,
        }
    )
    console = start_console(
        database,
        console_port,
        {
            **identity,
            "GROVE_CONSOLE_API_URL": api.url,
            "GROVE_CONSOLE_CLIENT_ID": CONSOLE,
            "GROVE_CONSOLE_CLIENT_SECRET": CONSOLE_SECRET,
        },
    )
    yield FilesSite(provider, api, console)
    for running in (console, api, worker):
        running.stop()
    provider.stop()


def sign_in(page: Page, site: FilesSite, person: str, path: str) -> None:
    """``test_console.sign_in`` on this module's site."""
    page.goto(f"{site.console.url}{path}")
    page.click("text=Sign in with your identity provider")
    sign_in_at_provider(page, person)
    page.wait_for_url(f"{site.console.url}{path.split('?')[0]}*")


def upload_api(owner: Client, data: bytes, name: str, media: str, **params: Any) -> Any:
    response = owner.session.post(
        f"{owner.base}/v1/files",
        params={"name": name, **params},
        data=data,
        headers=owner.headers({"Content-Type": media}),
        timeout=30,
    )
    assert response.status_code == 201, response.text
    return data_of(response)


def upload_in_page(page: Page, name: str, media: str, data: bytes, notebook: str = "") -> None:
    if notebook:
        page.select_option("form.upload select[name=notebook]", notebook)
    page.set_input_files(
        "input[name=file]", files=[FilePayload(name=name, mimeType=media, buffer=data)]
    )
    page.click("form.upload button[type=submit]")


def file_state(page: Page, site: FilesSite, file_id: str, wanted: str) -> bool:
    page.goto(f"{site.console.url}/files")
    state = page.locator(f"tr[data-file='{file_id}'] td.indexing").get_attribute("data-state")
    return state == wanted


def csrf_of(page: Page) -> str:
    return page.locator("input[name=csrf]").first.get_attribute("value") or ""


def test_files_and_storage_in_the_browser(
    site: FilesSite, context: BrowserContext, tmp_path: Path
) -> None:
    person = login()
    owner = site.owner_api(person)
    runbooks = data_of(owner.post("/v1/notebooks", {"name": "Runbooks"}))["id"]
    page = context.new_page()
    sign_in(page, site, person, "/notes")
    page.click("header nav >> text=Files")
    page.wait_for_url(f"{site.console.url}/files")
    assert page.locator("tr[data-file]").count() == 0

    # Uploaded through the page into a notebook; the name is the user's own text.
    name = "<b>gateway</b> & runbook.txt"
    upload_in_page(page, name, "text/plain", RUNBOOK, runbooks)
    page.wait_for_url("**/files?done=uploaded")
    (listed,) = data_of(owner.get("/v1/files"))["items"]
    assert listed["name"] == name and listed["projectId"] == runbooks
    row = page.locator(f"tr[data-file='{listed['id']}']")
    assert row.locator("td.name").inner_text() == name
    assert row.locator("td.name b").count() == 0  # escaped, never markup
    assert row.locator("td.type").inner_text() == "text/plain"
    assert row.locator("td.size").inner_text() == f"{len(RUNBOOK)} B"
    assert row.locator("td.scope").inner_text() == "Runbooks"
    assert row.locator("td.version").inner_text() == "1"

    # The worker reads it: ready, with its passages.
    wait_until(lambda: file_state(page, site, listed["id"], "ready"))
    row = page.locator(f"tr[data-file='{listed['id']}']")
    passages = data_of(owner.get(f"/v1/files/{listed['id']}"))["passages"]
    assert passages >= 1 and row.locator("td.passages").inner_text() == str(passages)

    # A passage's page offers nothing the API refuses: no edit, archive or public link.
    found = data_of(owner.post("/v1/memories/search", {"query": "gateway", "kind": "passage"}))
    passage = found["items"][0]["memory"]
    page.goto(f"{site.console.url}/notes/{passage['id']}")
    assert page.locator("p.passage-note").count() == 1
    assert page.locator("form[action='/shares']").count() == 0
    assert page.locator(f"form[action='/notes/{passage['id']}/edit']").count() == 0
    page.goto(f"{site.console.url}/files")

    # A PDF that is not one fails, and the page says why.
    broken = upload_api(owner, b"%PDF-1.4 this is not a pdf", "broken.pdf", "application/pdf")
    wait_until(lambda: file_state(page, site, broken["id"], "failed"))
    reason = data_of(owner.get(f"/v1/files/{broken['id']}"))["indexingError"]
    assert reason
    broken_row = page.locator(f"tr[data-file='{broken['id']}']")
    assert broken_row.locator("td.scope").inner_text() == "Personal"
    assert broken_row.locator(".reason").inner_text() == reason

    # The storage counters are the API's, in words.
    storage = data_of(owner.get("/v1/storage"))
    assert storage["files"]["items"] >= 2
    for label, key in (("Files (every version)", "files"), ("Notes", "notes")):
        counter = page.locator(f"table.storage tr[data-kind='{label}']")
        assert counter.locator(".items").inner_text() == str(storage[key]["items"])
        assert counter.locator(".bytes").inner_text() == human_bytes(storage[key]["bytes"])
    shot(page, tmp_path, "files")

    # The download is the original, as an attachment the browser saves.
    with page.expect_download() as download:
        page.locator(f"tr[data-file='{listed['id']}'] td.name a").click()
    assert Path(download.value.path()).read_bytes() == RUNBOOK
    original = context.request.get(f"{site.console.url}/files/{listed['id']}/original")
    assert original.status == 200 and original.body() == RUNBOOK
    assert original.headers["content-disposition"].startswith("attachment;")
    assert "filename*=UTF-8''%3Cb%3Egateway%3C%2Fb%3E" in original.headers["content-disposition"]
    assert original.headers["x-content-type-options"] == "nosniff"
    assert original.headers["content-type"].startswith("text/plain")
    assert "sandbox" in original.headers["content-security-policy"]

    # Delete, after a confirmation that names the file.
    page.goto(f"{site.console.url}/files")
    page.locator(f"tr[data-file='{broken['id']}']").locator("text=Delete…").click()
    assert page.locator("h1").inner_text() == "Delete broken.pdf?"
    assert owner.get(f"/v1/files/{broken['id']}").status_code == 200  # not yet
    page.click("text=Delete this file")
    page.wait_for_url("**/files?done=deleted")
    assert page.locator(f"tr[data-file='{broken['id']}']").count() == 0
    assert owner.get(f"/v1/files/{broken['id']}").status_code == 404
    assert page.locator(f"tr[data-file='{listed['id']}']").count() == 1


def test_uploads_the_api_refuses_say_why(site: FilesSite, context: BrowserContext) -> None:
    person = login()
    owner = site.owner_api(person)
    page = context.new_page()
    sign_in(page, site, person, "/files")

    with page.expect_response(f"{site.console.url}/files") as answer:
        upload_in_page(page, "big.txt", "text/plain", b"x" * (LIMIT + 1))
    assert answer.value.status == 413
    alert = page.locator("[role=alert]").inner_text()
    assert "the file is too large" in alert and f"exceeds {LIMIT} bytes" in alert

    with page.expect_response(f"{site.console.url}/files") as answer:
        upload_in_page(page, "archive.zip", "application/zip", b"PK\x03\x04 not for grove")
    assert answer.value.status == 415
    alert = page.locator("[role=alert]").inner_text()
    assert "does not take files of this type (application/zip)" in alert
    assert "text/plain" in alert  # the API's list of accepted types

    # Exactly the limit passes.
    upload_in_page(page, "edge.txt", "text/plain", b"y" * LIMIT)
    page.wait_for_url("**/files?done=uploaded")
    assert [f["name"] for f in data_of(owner.get("/v1/files"))["items"]] == ["edge.txt"]

    # An upload without this session's CSRF token stores nothing.
    forged = context.request.post(
        f"{site.console.url}/files",
        multipart={
            "csrf": "guessed",
            "file": {"name": "forged.txt", "mimeType": "text/plain", "buffer": b"forged"},
        },
    )
    assert forged.status == 403
    assert len(data_of(owner.get("/v1/files"))["items"]) == 1


def test_a_notebooks_brief_quotes_its_notes(
    site: FilesSite, context: BrowserContext, tmp_path: Path
) -> None:
    person = login()
    owner = site.owner_api(person)
    billing = data_of(owner.post("/v1/notebooks", {"name": "Billing"}))["id"]
    notes = {owner.save(text, projectId=billing)["id"]: text for text in BILLING}
    empty = data_of(owner.post("/v1/notebooks", {"name": "Nothing yet"}))["id"]
    brief = wait_for(
        lambda: data_of(owner.get(f"/v1/notebooks/{billing}/brief")),
        lambda b: b["status"] == "ready",
    )
    assert brief["status"] == "ready" and brief["citations"]

    page = context.new_page()
    sign_in(page, site, person, f"/notebooks/{billing}")
    section = page.locator("section.brief")
    assert section.get_attribute("data-status") == "ready"
    assert section.locator(".brief-status").count() == 0
    links = section.locator("ol.citations a")
    assert links.count() == len(brief["citations"])
    for i, cited in enumerate(brief["citations"]):
        assert links.nth(i).inner_text() == f"“{cited['quote']}”"
        assert cited["quote"] in notes[cited["id"]]
        assert links.nth(i).get_attribute("href") == (
            f"/notes/{cited['id']}?version={cited['version']}#v{cited['version']}"
        )
    made = section.locator("time")  # in words, the exact instant in the markup
    made_at = datetime.fromisoformat(made.get_attribute("datetime") or "")
    assert made_at == datetime.fromisoformat(brief["generatedAt"])
    assert made.get_attribute("title")
    shot(page, tmp_path, "brief")
    first = brief["citations"][0]
    links.first.click()
    page.wait_for_url(f"**/notes/{first['id']}?version={first['version']}*")
    assert page.locator("ol.revisions li.marked").get_attribute("data-version") == str(
        first["version"]
    )

    # A quoted note changes: its old words are never shown again. Until the brief is made
    # again (about two seconds later; sooner or later on a busy machine) it is withheld.
    changed = owner.patch(f"/v1/memories/{first['id']}", {"content": "Acme moved to Stripe."})
    assert changed.status_code == 200, changed.text
    page.goto(f"{site.console.url}/notebooks/{billing}")
    section = page.locator("section.brief")
    assert first["quote"] not in section.inner_text()
    if section.get_attribute("data-status") == "pending":
        assert "being updated" in page.locator("section.brief .brief-status").inner_text()
        assert page.locator("section.brief ol.citations a").count() == 0
    else:  # already made again, from the note as it is now
        assert section.get_attribute("data-status") == "ready"

    # A notebook without notes has no brief to show.
    page.goto(f"{site.console.url}/notebooks/{empty}")
    assert page.locator("h1").inner_text() == "Nothing yet"
    assert page.locator("section.brief").count() == 0


def test_a_suggestion_is_applied_only_at_its_version(
    site: FilesSite, context: BrowserContext, tmp_path: Path
) -> None:
    person = login()
    owner = site.owner_api(person)
    billing = data_of(owner.post("/v1/notebooks", {"name": "Billing"}))["id"]
    deploys = data_of(owner.post("/v1/notebooks", {"name": "Deploys"}))["id"]
    for text in BILLING:
        owner.save(text, projectId=billing)
    for text in DEPLOYS:
        owner.save(text, projectId=deploys)
    note = owner.save(UNFILED)["id"]

    def suggestion_at(version: int) -> Any:
        items = data_of(owner.get("/v1/suggestions"))["items"]
        return next((s for s in items if s["memoryId"] == note and s["version"] == version), None)

    first = wait_until(lambda: suggestion_at(1))
    assert first["projectId"] == billing
    page = context.new_page()
    sign_in(page, site, person, "/notes")
    page.click("text=Suggestions")
    page.wait_for_url(f"{site.console.url}/suggestions")
    row = page.locator(f"tr[data-suggestion='{note}']")
    assert row.get_attribute("data-version") == "1"
    assert row.locator("td a").first.inner_text() == UNFILED
    kind = data_of(owner.get(f"/v1/memories/{note}"))["kind"]
    assert row.locator("td small").first.inner_text() == f"version 1 · {kind}"
    assert row.locator(".notebook").inner_text() == "Billing"
    assert row.locator(".confidence").inner_text() == f"{round(first['confidence'] * 100)}%"
    shot(page, tmp_path, "suggestions")

    # The note is edited after the page was shown: applying changes nothing.
    edited = UNFILED + " Ask for the PO number."
    changed = owner.patch(f"/v1/memories/{note}", {"content": edited, "expectedVersion": 1})
    assert changed.status_code == 200, changed.text
    with page.expect_response(f"{site.console.url}/suggestions/{note}/apply") as answer:
        row.locator("button:text-is('Apply')").click()
    assert answer.value.status == 409
    assert "the note changed since" in page.locator("[role=alert]").inner_text()
    assert page.locator("[role=alert] a:text-is('Reload')").count() == 1
    after = data_of(owner.get(f"/v1/memories/{note}"))
    assert after["projectId"] is None and after["version"] == 2

    # Suggested again for the edited note; applied, it files the note.
    wait_until(lambda: suggestion_at(2))
    page.goto(f"{site.console.url}/suggestions")
    row = page.locator(f"tr[data-suggestion='{note}']")
    assert row.get_attribute("data-version") == "2"
    row.locator("button:text-is('Apply')").click()
    page.wait_for_url("**/suggestions?done=applied")
    assert "Applied" in page.locator("[role=status]").inner_text()
    filed = data_of(owner.get(f"/v1/memories/{note}"))
    assert filed["projectId"] == billing and filed["version"] == 3
    assert filed["content"] == edited
    assert page.locator(f"tr[data-suggestion='{note}']").count() == 0


def test_files_briefs_and_suggestions_of_another_account_are_not_found(
    site: FilesSite, context: BrowserContext
) -> None:
    person, stranger = login(), login()
    owner = site.owner_api(person)
    billing = data_of(owner.post("/v1/notebooks", {"name": "Billing"}))["id"]
    for text in BILLING:
        owner.save(text, projectId=billing)
    note = owner.save(UNFILED)["id"]
    file = upload_api(owner, RUNBOOK, "theirs.txt", "text/plain", projectId=billing)
    wait_until(lambda: data_of(owner.get("/v1/suggestions"))["items"])
    wait_until(lambda: data_of(owner.get(f"/v1/notebooks/{billing}/brief"))["status"] == "ready")

    page = context.new_page()
    sign_in(page, site, stranger, "/files")
    assert page.locator("tr[data-file]").count() == 0
    csrf = csrf_of(page)
    for path in (
        f"/files/{file['id']}/original",
        f"/files/{file['id']}/delete",
        f"/notebooks/{billing}",
    ):
        response = context.request.get(f"{site.console.url}{path}")
        assert response.status == 404, path
        assert b"Restart the gateway" not in response.body()
        assert b"Acme" not in response.body()
    forms: list[tuple[str, dict[str, str | float | bool]]] = [
        (f"/files/{file['id']}/delete", {"csrf": csrf}),
        (f"/suggestions/{note}/apply", {"csrf": csrf, "version": "1", "projectId": billing}),
    ]
    for path, form in forms:
        posted = context.request.post(f"{site.console.url}{path}", form=form)
        assert posted.status == 404, path
    # Uploading into their notebook stores nothing.
    refused = context.request.post(
        f"{site.console.url}/files",
        multipart={
            "csrf": csrf,
            "notebook": billing,
            "file": {"name": "planted.txt", "mimeType": "text/plain", "buffer": b"planted"},
        },
    )
    assert refused.status == 404
    page.goto(f"{site.console.url}/suggestions")
    assert page.locator("tr[data-suggestion]").count() == 0

    assert owner.get(f"/v1/files/{file['id']}").status_code == 200
    assert [f["name"] for f in data_of(owner.get("/v1/files"))["items"]] == ["theirs.txt"]
    kept = data_of(owner.get(f"/v1/memories/{note}"))
    assert kept["projectId"] is None and kept["version"] == 1
    anonymous = requests.get(
        f"{site.console.url}/files/{file['id']}/original", allow_redirects=False, timeout=10
    )
    assert anonymous.status_code == 303  # not signed in: to sign in, never the file


def test_the_files_page_pages_to_older_files(site: FilesSite, context: BrowserContext) -> None:
    person = login()
    owner = site.owner_api(person)
    for n in range(51):  # the page shows 50
        upload_api(owner, f"file {n}".encode(), f"f{n:02}.txt", "text/plain")
    page = context.new_page()
    sign_in(page, site, person, "/files")
    assert page.locator("tr[data-file]").count() == 50
    assert page.locator("tr[data-file] td.name").first.inner_text() == "f50.txt"
    page.click("text=Older files")
    assert [page.locator("tr[data-file] td.name").inner_text()] == ["f00.txt"]
    assert page.locator("text=Older files").count() == 0
