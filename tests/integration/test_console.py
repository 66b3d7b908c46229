"""The owner website (grove-console) in a real browser, against a real provider.

Chromium (Debian's, driven by Playwright) signs in at oidc-provider's own login and
consent pages; the agent is a real MCP SDK client whose token comes from the same
provider. Screenshots of each main view are saved under the test's output directory.
"""

from __future__ import annotations

import asyncio
import os
import queue
import re
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import mcp_types as types
import psycopg
import pytest
import requests
from mcp import Client as McpClient
from mcp.client.auth import OAuthClientProvider
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from playwright.sync_api import BrowserContext, Page
from pydantic import AnyUrl

from grove_auth.keys import derive_secret
from grove_console.sessions import SessionStore
from grove_db import embedded
from grove_db.pool import open_pool
from tests.support import loopback
from tests.support.axe import serious_violations
from tests.support.clients import Client, data_of
from tests.support.console import (
    AGENT_CALLBACK,
    CONSOLE,
    CONSOLE_SECRET,
    Site,
    agent_record,
    login,
    new_team,
    own_pool,
    running_site,
    shot,
    sign_in,
    sign_in_at_provider,
)
from tests.support.keys import CONSOLE_SECRET_KEY, SECRET
from tests.support.mcp import agent_session, text_json
from tests.support.mcp import error_of as tool_error
from tests.support.processes import (
    free_port,
    run_script,
)
from tests.support.tools import require_tool
from tests.support.waiting import wait_until


@pytest.fixture(scope="module")
def site(database: embedded.EmbeddedDatabase) -> Iterator[Site]:
    with running_site(database) as started:
        yield started


def call_tool(url: str, token: str, tool: str, arguments: dict[str, Any]) -> Any:
    """One agent call, on a thread of its own: Playwright's loop owns this one."""

    async def run() -> Any:
        async with agent_session(url, token, name="Browser Test Agent", version="2.0") as session:
            return await session.call_tool(tool, arguments)

    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, run()).result(timeout=60)


def search(url: str, token: str, query: str) -> Any:
    return call_tool(url, token, "search_memories", {"query": query})


def test_an_owner_approves_an_agent_in_the_browser_and_revokes_it(
    site: Site, context: BrowserContext, tmp_path: Path
) -> None:
    person = login()
    owner = site.owner_api(person)
    shared = owner.post("/v1/notebooks", {"name": "Shared with agents"}).json()["data"]["id"]
    owner.post("/v1/notebooks", {"name": "Private"})
    owner.save("orbital launch checklist", projectId=shared)
    owner.save("orbital personal diary")

    client_id = site.provider.register("Browser Test Agent", AGENT_CALLBACK)
    token = site.agent_token(person, client_id)
    required = tool_error(search(site.mcp.url, token, "orbital"))
    assert required["code"] == "connection_required"
    approval = required["approvalUrl"]
    assert approval.startswith(f"{site.console.url}/connections/approve?request=")

    page = context.new_page()
    page.goto(approval)  # not signed in: the sign-in page, then back here
    shot(page, tmp_path, "signin")
    page.click("text=Sign in with your identity provider")
    sign_in_at_provider(page, person)
    page.wait_for_url(f"{site.console.url}/connections/approve*")
    assert page.locator(".client-id").inner_text().startswith(client_id)
    assert "Browser Test Agent" in page.locator(".client-name").inner_text()
    assert page.locator(".status").inner_text() == "pending"
    shot(page, tmp_path, "approve")

    page.uncheck("input[name=personal]")
    page.check(f"input[name=projectIds][value='{shared}']")
    page.click("button[value=approve]")
    page.wait_for_url(f"{site.console.url}/connections*")
    assert "Approved Browser Test Agent" in page.locator("[role=status]").inner_text()
    shot(page, tmp_path, "connections")

    found = search(site.mcp.url, token, "orbital")
    assert not found.is_error, found
    assert [i["memory"]["content"] for i in text_json(found)["items"]] == [
        "orbital launch checklist"
    ]

    page.goto(approval)  # the request now says what became of it
    assert page.locator(".status").inner_text() == "approved"
    assert page.locator("button[value=approve]").count() == 0
    page.goto(f"{site.console.url}/connections")

    row = page.locator("tr", has_text="Browser Test Agent")
    row.locator("button", has_text="Revoke").click()
    # Nothing is revoked before the confirmation page is answered.
    assert page.locator("h1").inner_text() == "Revoke Browser Test Agent?"
    shot(page, tmp_path, "revoke-confirm")
    assert not search(site.mcp.url, token, "orbital").is_error
    page.click("button:text-is('Revoke')")
    page.wait_for_url(f"{site.console.url}/connections*")
    assert page.locator("tr", has_text="Browser Test Agent").count() == 0  # behind the filter
    page.click("text=Show 1 revoked")
    assert page.locator("tr", has_text="Browser Test Agent").locator(".status").inner_text() == (
        "revoked"
    )
    refused = tool_error(search(site.mcp.url, token, "orbital"))
    assert refused["code"] == "connection_required"
    assert "revoked" in refused["message"]
    assert refused["approvalUrl"] != approval  # a new request, to approve again


def test_keys_are_created_once_and_revoked(
    site: Site, context: BrowserContext, tmp_path: Path
) -> None:
    page = context.new_page()
    sign_in(page, site, login())
    page.fill("input[name=name]", "laptop")
    page.click("text=Create key")
    secret = page.locator("#secret").inner_text()
    assert secret.startswith("grv_")
    shot(page, tmp_path, "key-created")
    key = Client(site.api.url, secret)
    assert key.get("/v1/memories").status_code == 200
    assert key.post("/v1/memories", {"content": "c", "kind": "fact"}).status_code == 403
    page.goto(f"{site.console.url}/connections")
    assert secret not in page.content()
    page.locator("tr", has_text="laptop").locator("button", has_text="Revoke").click()
    page.click("button:text-is('Revoke')")
    page.wait_for_url(f"{site.console.url}/connections*")
    assert key.get("/v1/memories").status_code == 401


def test_grant_edits_are_guarded_against_a_concurrent_change(
    site: Site, context: BrowserContext, tmp_path: Path
) -> None:
    page = context.new_page()
    sign_in(page, site, login())
    page.fill("input[name=name]", "phone")
    page.click("text=Create key")
    key = Client(site.api.url, page.locator("#secret").inner_text())
    page.goto(f"{site.console.url}/connections")
    page.locator("tr", has_text="phone").locator("text=Edit grants").click()
    stale = context.new_page()  # the same page, opened in a second tab before the edit
    stale.goto(page.url)

    page.check("input[value='memory:write']")
    page.click("text=Save grants")
    page.wait_for_url(f"{site.console.url}/connections*")
    assert "Updated phone" in page.locator("[role=status]").inner_text()
    assert key.post("/v1/memories", {"content": "c", "kind": "fact"}).status_code == 201

    stale.uncheck("input[value='memory:read']")
    stale.check("input[value='memory:delete']")
    stale.click("text=Save grants")
    assert "changed since you opened this page" in stale.locator("[role=alert]").inner_text()
    shot(stale, tmp_path, "grants-conflict")
    assert key.post("/v1/memories", {"content": "c", "kind": "fact"}).status_code == 201
    stale.click("text=Reload it")
    assert stale.locator("input[value='memory:write']").is_checked()


def test_forms_need_the_sessions_csrf_token_and_origin(site: Site, context: BrowserContext) -> None:
    page = context.new_page()
    sign_in(page, site, login())
    forged = context.request.post(
        f"{site.console.url}/keys", form={"name": "forged", "csrf": "guessed"}
    )
    assert forged.status == 403
    csrf = page.locator("input[name=csrf]").first.get_attribute("value") or ""
    elsewhere = context.request.post(
        f"{site.console.url}/keys",
        form={"name": "cross-site", "csrf": csrf},
        headers={"Origin": "https://evil.test"},
    )
    assert elsewhere.status == 403
    page.goto(f"{site.console.url}/connections")
    assert "forged" not in page.content() and "cross-site" not in page.content()


def test_the_session_cookie_and_headers(site: Site, context: BrowserContext) -> None:
    page = context.new_page()
    sign_in(page, site, login())
    cookie = next(c for c in context.cookies() if c["name"] == "grove_session")
    assert cookie["httpOnly"] is True
    assert cookie["sameSite"] == "Lax"
    # The cookie is random: the token stays on the server.
    assert cookie["value"].count(".") == 0 and len(cookie["value"]) < 100
    response = requests.get(f"{site.console.url}/connections", timeout=10)
    policy = response.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert response.headers["X-Frame-Options"] == "DENY"


def test_sign_out_ends_the_session_everywhere(site: Site, context: BrowserContext) -> None:
    page = context.new_page()
    sign_in(page, site, login())
    cookie = next(c for c in context.cookies() if c["name"] == "grove_session")["value"]
    page.click("text=Sign out")
    assert page.locator("h1").inner_text() == "Signed out"
    # The old cookie, replayed, is gone from the server too.
    replay = requests.get(
        f"{site.console.url}/connections",
        cookies={"grove_session": cookie},
        allow_redirects=False,
        timeout=10,
    )
    assert replay.status_code == 303
    assert replay.headers["Location"].startswith("/?next=")


def test_a_return_path_never_leads_off_the_website(site: Site, context: BrowserContext) -> None:
    # A tab between the slashes: chromium drops it and reads //evil.example.
    page = context.new_page()
    page.goto(f"{site.console.url}/?next=/%09/evil.example")
    page.click("text=Sign in with your identity provider")
    sign_in_at_provider(page, login())
    page.wait_for_url(f"{site.console.url}/start")  # home: a new owner has no connection
    here = urlsplit(site.console.url).netloc
    for away in ("/%09/evil.example", "/%5Cevil.example", "//evil.example", "/%252F%252Fevil"):
        page.goto(f"{site.console.url}/?next={away}")  # signed in: straight on
        assert (urlsplit(page.url).netloc, urlsplit(page.url).path) == (here, "/start"), away
    page.goto(f"{site.console.url}/?next=/connections")
    assert page.url == f"{site.console.url}/connections"
    for broken in ("/notes%0D%0ASet-Cookie:%20x=1", "/%0A"):  # was a 500
        answer = context.request.get(f"{site.console.url}/?next={broken}", max_redirects=0)
        assert (answer.status, answer.headers["location"]) == (303, "/start"), broken


def test_a_request_of_another_account_is_not_found(site: Site, context: BrowserContext) -> None:
    person, stranger = login(), login()
    client_id = site.provider.register("Someone's Agent", AGENT_CALLBACK)
    approval = tool_error(search(site.mcp.url, site.agent_token(person, client_id), "x"))
    page = context.new_page()
    sign_in(page, site, stranger)
    response = page.goto(approval["approvalUrl"])
    assert response is not None and response.status == 404


# --- the owner's memory in the browser: notes, notebooks, shares, Ask, account ---------


def notebook_id(page: Page) -> str:
    """The notebook the notes page shows (its ?notebook=)."""
    return parse_qs(urlsplit(page.url).query)["notebook"][0]


def test_notes_and_notebooks_in_the_browser(
    site: Site, context: BrowserContext, tmp_path: Path
) -> None:
    person = login()
    page = context.new_page()
    sign_in(page, site, person, "/notes")
    owner = site.owner_api(person)

    page.fill("input[name=name]", "Runbooks")
    page.click("text=Create notebook")
    page.wait_for_url("**done=notebook*")
    runbooks = notebook_id(page)
    page.fill("input[name=name]", "Deploys")
    page.select_option("select[name=parent]", runbooks)
    page.click("text=Create notebook")
    page.wait_for_url("**done=notebook*")
    deploys = notebook_id(page)
    assert page.locator(f"aside li.depth-1 a[data-notebook='{deploys}']").count() == 1

    page.fill("textarea[name=content]", "Staging deploys need the VPN")
    page.select_option("select[name=kind]", "solution")
    page.click("text=Save note")
    page.wait_for_url("**/notes/*?done=created")
    note = urlsplit(page.url).path.rsplit("/", 1)[1]
    assert page.locator("h1").inner_text() == "Staging deploys need the VPN"
    assert page.locator(".version").inner_text() == "1"
    assert owner.get(f"/v1/memories/{note}").json()["data"]["projectId"] == deploys

    page.goto(f"{site.console.url}/notes?q=vpn")
    assert page.locator(f"tr[data-note='{note}']").count() == 1
    page.goto(f"{site.console.url}/notes?notebook={runbooks}")  # direct members only
    assert page.locator(f"tr[data-note='{note}']").count() == 0
    page.goto(f"{site.console.url}/notes?notebook={deploys}")
    page.click("text=Staging deploys need the VPN")
    shot(page, tmp_path, "notes-note")

    page.fill("textarea[name=content]", "Staging deploys need the VPN and a ticket")
    page.click("text=Save a new revision")
    page.wait_for_url("**done=edited")
    assert page.locator(".version").inner_text() == "2"
    assert page.locator("ol.revisions li").count() == 2

    stale = context.new_page()  # the note as it is now, in a second tab
    stale.goto(f"{site.console.url}/notes/{note}")
    changed = owner.patch(f"/v1/memories/{note}", {"content": "Deploys moved to Fridays"})
    assert changed.status_code == 200, changed.text
    stale.fill("textarea[name=content]", "my stale edit")
    stale.click("text=Save a new revision")
    assert "changed since you opened it" in stale.locator("[role=alert]").inner_text()
    assert stale.locator("textarea[name=content]").input_value() == "my stale edit"
    assert stale.locator(".version").inner_text() == "3"
    shot(stale, tmp_path, "notes-conflict")
    assert owner.get(f"/v1/memories/{note}").json()["data"]["content"] == "Deploys moved to Fridays"

    page.goto(f"{site.console.url}/notes/{note}")
    page.locator("li[data-version='1']").locator("text=Restore this version").click()
    page.wait_for_url("**done=reverted")
    assert page.locator(".version").inner_text() == "4"
    assert page.locator("h1").inner_text() == "Staging deploys need the VPN"

    page.click("button:text-is('Archive')")
    page.wait_for_url("**done=archived")
    assert page.locator(".state").inner_text().startswith("archived")
    page.goto(f"{site.console.url}/notes")
    assert page.locator(f"tr[data-note='{note}']").count() == 0
    page.goto(f"{site.console.url}/notes?archived=1")
    assert page.locator(f"tr[data-note='{note}']").count() == 1
    page.goto(f"{site.console.url}/notes/{note}")
    page.click("text=Restore from the archive")
    page.wait_for_url("**done=unarchived")
    assert page.locator(".state").inner_text().startswith("live")

    # A whole notebook: the exact counts, bound to what was shown.
    page.goto(f"{site.console.url}/notebooks/{runbooks}")
    assert page.locator(".count-notebooks").inner_text() == "2"
    assert page.locator(".count-notes").inner_text() == "1"
    owner.save("Rollbacks take ten minutes", projectId=deploys)  # after the page was shown
    page.click("button:has-text('Archive 2 notebooks and 1 notes')")
    assert "changed since you looked" in page.locator("[role=alert]").inner_text()
    assert page.locator(".count-notes").inner_text() == "2"
    shot(page, tmp_path, "notebook-changed")
    page.click("button:has-text('Archive 2 notebooks and 2 notes')")
    page.wait_for_url("**done=archive")
    assert page.locator(f"aside a[data-notebook='{runbooks}']").count() == 0
    page.goto(f"{site.console.url}/notebooks/archived")
    page.click("text=Runbooks")
    page.click("button:has-text('Restore 2 notebooks and 2 notes')")
    page.wait_for_url("**done=restore")
    assert page.locator(f"aside a[data-notebook='{runbooks}']").count() == 1
    assert owner.get(f"/v1/memories/{note}").json()["data"]["archived"] is False

    forgettable = owner.save("a note to forget")["id"]
    page.goto(f"{site.console.url}/notes/{forgettable}")
    page.click("text=Forget for good")
    page.wait_for_url("**done=forgotten")
    assert owner.get(f"/v1/memories/{forgettable}").status_code == 404

    page.goto(f"{site.console.url}/notebooks/{runbooks}")
    page.click("button:has-text('Delete 2 notebooks and 2 notes')")
    page.wait_for_url("**done=delete")
    assert owner.get(f"/v1/memories/{note}").status_code == 404
    shot(page, tmp_path, "notes")


def test_the_website_says_archived_only_of_a_note_it_archived(
    site: Site, context: BrowserContext
) -> None:
    person = login()
    owner = site.owner_api(person)
    page = context.new_page()
    sign_in(page, site, person, "/notes")
    live = owner.save("a live note")["id"]
    page.goto(f"{site.console.url}/notes/{live}?done=archived")  # a link, not an archive
    assert page.locator(".state").inner_text().startswith("live")
    assert page.locator("[role=status]").count() == 0
    # Forgotten by an agent after the page was shown: the archive archives nothing.
    gone = owner.save("a note forgotten meanwhile")["id"]
    page.goto(f"{site.console.url}/notes/{gone}")
    assert owner.post("/v1/memories/forget", {"ids": [gone]}).status_code == 200
    page.click("button:text-is('Archive')")
    status = page.locator("[role=status]").inner_text()
    assert "nothing was archived" in status and "Archived" not in status, status


def agent_tool(url: str, token: str, name: str, arguments: dict[str, Any]) -> Any:
    """One tool call of the "Saving Agent", on a thread of its own (as ``search``)."""

    async def run() -> Any:
        async with agent_session(url, token, name="Saving Agent", version="1.0") as session:
            return await session.call_tool(name, arguments)

    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, run()).result(timeout=60)


def test_notes_say_which_agent_saved_them_and_connections_link_to_what_each_saved(
    site: Site, context: BrowserContext, tmp_path: Path
) -> None:
    person = login()
    owner = site.owner_api(person)
    token = site.agent_token(person, site.provider.register("Saving Agent", AGENT_CALLBACK))
    note = {"content": "Herons nest by the north pond", "kind": "fact"}
    approval = tool_error(agent_tool(site.mcp.url, token, "remember", note))["approvalUrl"]
    approved = owner.post(
        f"/v1/connections/requests/{approval.split('request=')[1]}/approve",
        {"grants": {"personal": True, "capabilities": ["memory:read", "memory:write"]}},
    )
    assert approved.status_code == 200, approved.text
    agent = approved.json()["data"]
    saved = text_json(agent_tool(site.mcp.url, token, "remember", note))
    assert saved["savedBy"]["connectionId"] == agent["id"]
    mine = owner.save("Herons were counted in May")

    page = context.new_page()
    sign_in(page, site, person, f"/notes/{saved['id']}")
    assert page.locator(".saved-by .saver").inner_text() == agent["name"]
    assert "Saving Agent" in agent["name"]
    shot(page, tmp_path, "saved-by-agent")
    page.goto(f"{site.console.url}/notes/{mine['id']}")
    assert page.locator(".saved-by .saver").inner_text() == "you"

    # The Connections page links the agent to the notes it saved.
    page.goto(f"{site.console.url}/connections")
    page.locator(f"tr[data-connection='{agent['id']}']").locator("text=Notes it saved").click()
    page.wait_for_url(f"**/notes?connection={agent['id']}")
    assert page.locator("tr[data-note]").evaluate_all("rows => rows.map(r => r.dataset.note)") == [
        saved["id"]
    ]
    assert "saved by " + agent["name"] in page.locator("h1").inner_text()
    shot(page, tmp_path, "notes-of-an-agent")
    page.fill("input[name=q]", "herons")
    page.click("button:text-is('Search')")
    page.wait_for_url("**q=herons*")
    assert page.locator("tr[data-note]").count() == 1  # the search keeps the filter

    # The owner corrects the agent's note: each revision names its saver.
    page.click("text=Herons nest by the north pond")
    page.fill("textarea[name=content]", "Herons nest by the north and east ponds")
    page.click("text=Save a new revision")
    page.wait_for_url("**done=edited")
    assert page.locator(".saved-by .saver").inner_text() == "you"
    revisions = page.locator("ol.revisions")
    assert revisions.locator("li[data-version='1'] .revision-saver").inner_text() == (
        f"saved by {agent['name']}"
    )
    assert revisions.locator("li[data-version='2'] .revision-saver").inner_text() == "saved by you"
    link = f"li[data-version='1'] a.saver[href='/notes?connection={agent['id']}']"
    assert revisions.locator(link).count() == 1

    # Recent activity: newest first, each revision with its saver and a link to the note.
    page.goto(f"{site.console.url}/activity")
    rows = page.locator("table.activity tr[data-note]")
    seen = rows.evaluate_all("rows => rows.map(r => [r.dataset.note, r.dataset.version])")
    assert seen == [[saved["id"], "2"], [mine["id"], "1"], [saved["id"], "1"]]
    assert rows.nth(2).locator(".saver").inner_text() == agent["name"]
    shot(page, tmp_path, "activity")
    page.goto(f"{site.console.url}/connections")
    page.locator(f"tr[data-connection='{agent['id']}']").locator("text=Its activity").click()
    page.wait_for_url(f"**/activity?connection={agent['id']}")
    seen = rows.evaluate_all("rows => rows.map(r => [r.dataset.note, r.dataset.version])")
    assert seen == [[saved["id"], "1"]]
    rows.first.locator("a", has_text="Herons nest").click()
    page.wait_for_url(f"**/notes/{saved['id']}#v1")


def test_shares_in_the_browser(site: Site, context: BrowserContext, tmp_path: Path) -> None:
    person = login()
    owner = site.owner_api(person)
    note = owner.save("The office wifi password rotates monthly")["id"]
    page = context.new_page()
    sign_in(page, site, person, f"/notes/{note}")
    page.fill("form.share input[name=title]", "Wifi")
    page.click("text=Create a public link")
    link = page.locator("#link").inner_text()
    shot(page, tmp_path, "share-created")
    assert link.startswith(site.share.url)
    opened = requests.get(link, timeout=10)
    assert opened.status_code == 200 and "office wifi password" in opened.text

    page.goto(f"{site.console.url}/shares")
    row = page.locator("tr", has_text="Wifi")
    assert row.locator(".status").inner_text() == "active"
    assert link not in page.content()  # the link is shown once
    shot(page, tmp_path, "shares")
    row.locator("text=Revoke").click()
    assert page.locator("h1").inner_text() == "Revoke Wifi?"
    page.click("button:text-is('Revoke')")
    page.wait_for_url("**done=revoked")
    assert page.locator("tr", has_text="Wifi").locator(".status").inner_text() == "revoked"
    assert requests.get(link, timeout=10).status_code == 404


def test_ask_in_the_browser(site: Site, context: BrowserContext, tmp_path: Path) -> None:
    person = login()
    owner = site.owner_api(person)
    owner.save("The staging database is restored every Sunday at 02:00")
    cited_note = owner.save("Backups of staging are kept for thirty days")["id"]
    page = context.new_page()
    sign_in(page, site, person, "/ask")
    page.fill("input[name=title]", "Staging questions")
    page.click("text=New conversation")
    page.wait_for_url(re.compile(r".*/ask/[0-9a-f-]{36}$"))
    conversation = page.url
    stale = context.new_page()  # the conversation, open in a second tab
    stale.goto(conversation)

    page.fill("textarea[name=query]", "How long are staging backups kept?")
    page.click("button:text-is('Ask')")
    page.wait_for_url("**#turn-1")
    turn = page.locator("#turn-1")
    assert turn.get_attribute("data-status") == "completed"
    citation = turn.locator("ol.citations a").first
    assert "thirty days" in citation.inner_text()
    assert citation.get_attribute("href") == f"/notes/{cited_note}?version=1#v1"
    shot(page, tmp_path, "ask")

    stale.fill("textarea[name=query]", "And when is it restored?")
    stale.click("button:text-is('Ask')")
    assert "moved on since you opened it" in stale.locator("[role=alert]").inner_text()
    assert stale.locator("textarea[name=query]").input_value() == "And when is it restored?"

    # A follow-up answered from the cited note only.
    page.goto(conversation)
    page.click("text=Context (optional)")
    page.check(f"input[name=contextNotes][value='{cited_note}']")
    page.check("input[name=only]")
    page.fill("textarea[name=query]", "When is staging restored?")
    page.click("button:text-is('Ask')")
    page.wait_for_url("**#turn-2")
    second = page.locator("#turn-2")
    cited = [a.get_attribute("href") for a in second.locator("ol.citations a").all()]
    assert all(href and href.startswith(f"/notes/{cited_note}?") for href in cited)

    page.locator("#turn-1 ol.citations a").first.click()  # to the exact revision quoted
    page.wait_for_url(f"**/notes/{cited_note}?version=1#v1")
    assert page.locator("li.marked").get_attribute("data-version") == "1"

    page.goto(f"{site.console.url}/ask?q=backups")
    assert page.locator("ul.conversations li", has_text="Staging questions").count() == 1
    page.goto(conversation)
    page.click("text=Delete this conversation")
    page.click("button:text-is('Delete')")
    page.wait_for_url("**done=deleted")
    assert page.locator("ul.conversations li", has_text="Staging questions").count() == 0


def test_proposed_changes_are_applied_and_undone_in_the_browser(
    site: Site, context: BrowserContext, tmp_path: Path
) -> None:
    person = login()
    owner = site.owner_api(person)
    older = owner.save("We deploy the billing service with Argo CD every Tuesday.")["id"]
    newer = owner.save("Every Tuesday we deploy the billing service with Argo CD.")["id"]
    page = context.new_page()
    sign_in(page, site, person, "/ask")
    page.click("text=New conversation")
    page.wait_for_url(re.compile(r".*/ask/[0-9a-f-]{36}$"))
    conversation = page.url
    page.fill("textarea[name=query]", "When do we deploy the billing service?")
    page.click("button:text-is('Ask')")
    page.wait_for_url("**#turn-1")
    merge = page.locator("#turn-1 .proposal[data-action=merge]")
    assert merge.get_attribute("data-state") == "proposed"
    assert merge.locator(".preview li").count() == 2
    shot(page, tmp_path, "proposal")
    stale = context.new_page()  # the same proposal, open in a second tab
    stale.goto(conversation)

    merge.locator("button:text-is('Apply')").click()
    page.wait_for_url("**done=apply*")
    merge = page.locator("#turn-1 .proposal[data-action=merge]")
    assert merge.get_attribute("data-state") == "applied"
    assert "was applied" in page.locator("[role=status]").inner_text()
    assert owner.get(f"/v1/memories/{older}").json()["data"]["archived"] is True
    merge.locator("button:text-is('Undo')").click()
    page.wait_for_url("**done=undo*")
    assert page.locator("#turn-1 .proposal[data-action=merge]").get_attribute("data-state") == (
        "undone"
    )
    assert owner.get(f"/v1/memories/{older}").json()["data"]["archived"] is False

    # The second tab still offers Apply; the proposal was undone meanwhile.
    stale.locator("#turn-1 .proposal[data-action=merge] button:text-is('Apply')").click()
    assert "was undone" in stale.locator("[role=alert]").inner_text()
    assert owner.get(f"/v1/memories/{newer}").json()["data"]["version"] == 3


def test_account_export_and_deletion(site: Site, context: BrowserContext, tmp_path: Path) -> None:
    person = login()
    owner = site.owner_api(person)
    owner.save("exported note about tides")
    page = context.new_page()
    sign_in(page, site, person, "/account")
    shot(page, tmp_path, "account")
    with page.expect_download() as download:
        page.click("text=Download the export")
    lines = Path(download.value.path()).read_text().splitlines()
    assert '"type":"export"' in lines[0] and any(
        "exported note about tides" in line for line in lines
    )
    assert download.value.suggested_filename.endswith(".ndjson")

    page.fill("input[name=confirmation]", "delete my account")
    page.click("text=Delete my account")
    assert "Nothing was deleted" in page.locator("[role=alert]").inner_text()
    assert owner.get("/v1/memories").status_code == 200

    page.fill("input[name=confirmation]", "delete my Grove account")
    page.click("text=Delete my account")
    assert page.locator("h1").inner_text() == "Account deleted"
    assert owner.get("/v1/memories").status_code in (401, 403)
    page.goto(f"{site.console.url}/notes")
    page.wait_for_url(f"{site.console.url}/?next=*")


def test_a_session_ends_when_it_expires(
    site: Site, context: BrowserContext, database: embedded.EmbeddedDatabase
) -> None:
    page = context.new_page()
    sign_in(page, site, login(), "/notes")
    cookie = next(c for c in context.cookies() if c["name"] == "grove_session")["value"]
    with psycopg.connect(database.migration_url) as conn:
        conn.execute(
            "UPDATE console_sessions SET expires_at = now() - interval '1 second'"
            " WHERE id_hash = sha256(%s::bytea)",
            (cookie.encode(),),
        )
    page.goto(f"{site.console.url}/notes")
    page.wait_for_url(f"{site.console.url}/?next=%2Fnotes")
    assert page.locator("text=Sign in with your identity provider").count() == 1


def test_an_ending_access_token_is_renewed_with_the_refresh_token(
    site: Site, context: BrowserContext, database: embedded.EmbeddedDatabase
) -> None:
    page = context.new_page()
    sign_in(page, site, login(), "/notes")
    cookie = next(c for c in context.cookies() if c["name"] == "grove_session")["value"]
    pool = open_pool(database.console_url, max_size=1)
    store = SessionStore(pool, derive_secret(CONSOLE_SECRET_KEY, "console-session"))
    try:
        signed_in = store.load(cookie)
        assert signed_in is not None and signed_in.refresh_token
        assert signed_in.token_expires_at is not None
        assert signed_in.expires_at > signed_in.token_expires_at  # outlives its token

        # A token about to end is renewed before it is used; one the API refuses is
        # renewed and the call retried.
        for ends in (datetime.now(UTC), datetime.now(UTC) + timedelta(hours=1)):
            store.save(
                cookie, replace(signed_in, access_token="not-a-token", token_expires_at=ends)
            )
            page.goto(f"{site.console.url}/notes")
            assert page.locator("h1").inner_text() == "All notes"
            renewed = store.load(cookie)
            assert renewed is not None and renewed.access_token != "not-a-token"
            assert renewed.token_expires_at and renewed.token_expires_at > datetime.now(UTC)

        # A refresh token the provider no longer honours ends the session.
        assert renewed is not None and renewed.refresh_token
        site.provider.revoke(renewed.refresh_token, CONSOLE, CONSOLE_SECRET)
        store.save(cookie, replace(renewed, access_token="not-a-token"))
        page.goto(f"{site.console.url}/notes")
        page.wait_for_url(f"{site.console.url}/?next=%2Fnotes")
        assert store.load(cookie) is None
    finally:
        pool.close()


def test_pages_of_another_account_are_not_found(site: Site, context: BrowserContext) -> None:
    person, stranger = login(), login()
    owner = site.owner_api(person)
    notebook = owner.post("/v1/notebooks", {"name": "Theirs"}).json()["data"]["id"]
    note = owner.save("their secret plan", projectId=notebook)["id"]
    conversation = str(uuid.uuid4())
    assert owner.post("/v1/conversations", {"id": conversation}).status_code == 201
    share = owner.post("/v1/shares", {"target": {"type": "note", "id": note}}).json()["data"]

    twins = [owner.save(STANDUP)["id"], owner.save(STANDUP_AGAIN)["id"]]
    merged = owner.post(
        f"/v1/conversations/{conversation}/turns",
        {
            "id": str(uuid.uuid4()),
            "query": "Merge these",
            "expectedVersion": 1,
            "context": {"notes": twins, "only": True},
        },
    ).json()["data"]["turn"]["proposals"][0]["id"]

    page = context.new_page()
    sign_in(page, site, stranger, "/notes")
    page.goto(f"{site.console.url}/duplicates")
    assert page.locator(".duplicate-group").count() == 0
    assert "standup" not in page.content()
    gone = page.goto(f"{site.console.url}/duplicates?merged={conversation}/{merged}")
    assert gone is not None and gone.status == 404
    for path in (f"/notes/{note}", f"/notebooks/{notebook}", f"/ask/{conversation}"):
        response = page.goto(f"{site.console.url}{path}")
        assert response is not None and response.status == 404, path
        assert "their secret plan" not in page.content()
    page.goto(f"{site.console.url}/notes?q=secret")
    assert page.locator("tr[data-note]").count() == 0
    csrf = page.locator("input[name=csrf]").first.get_attribute("value") or ""
    for path in (f"/notes/{note}/forget", f"/shares/{share['id']}/revoke", f"/notes/{note}/edit"):
        posted = context.request.post(
            f"{site.console.url}{path}",
            form={
                "csrf": csrf,
                "confirmed": "1",  # past the confirmation page
                **{"content": "overwritten", "kind": "fact", "notebook": ""},
            },
        )
        assert posted.status == 404, path
    # Their group, merged or undone from this account: nothing is changed.
    ids = {"conversation": conversation, "turn": str(uuid.uuid4())}
    merge = context.request.post(
        f"{site.console.url}/duplicates/merge",
        form={"csrf": csrf, **ids, "note": twins[0]},
        max_redirects=0,
    )
    assert merge.status == 409
    undo = context.request.post(
        f"{site.console.url}/duplicates/undo",
        form={"csrf": csrf, "conversation": conversation, "proposal": merged},
    )
    assert undo.status == 404
    assert [owner.get(f"/v1/memories/{n}").json()["data"]["version"] for n in twins] == [1, 1]
    assert owner.get(f"/v1/memories/{note}").json()["data"]["content"] == "their secret plan"
    assert requests.get(share["url"], timeout=10).status_code == 200


# --- project memory: an org project's shared pool, for its members -------------------


def test_project_memory_in_the_browser_for_a_projects_member(
    site: Site, context: BrowserContext, tmp_path: Path
) -> None:
    team = new_team(site)
    page = context.new_page()
    sign_in(page, site, team.member, "/projects")
    assert page.locator("header nav a[aria-current]").inner_text() == "Projects"
    page.click("text=Rocket")
    page.wait_for_url(f"{site.console.url}{team.page}")
    assert page.locator(".role").inner_text() == "contributor"
    row = page.locator("tr[data-record='deploy.day']")
    assert "observed" in row.inner_text() and "slack #ops" in row.inner_text()
    shot(page, tmp_path, "project")
    # Read: provenance and authority beside the text, and who wrote it.
    row.locator("a").click()
    assert page.locator(".authority").inner_text() == "observed"
    assert page.locator(".ref").inner_text() == "https://chat.example/c/123"
    assert page.locator(".ref a").get_attribute("href") == "https://chat.example/c/123"
    assert page.locator(".written-by").inner_text().startswith("an agent's project key")
    assert page.locator(".record-body").inner_text() == "We deploy on Tuesdays after the standup."
    shot(page, tmp_path, "project-record")
    # Write, with a key that needs encoding; the member's own write says so.
    page.goto(f"{site.console.url}{team.page}")
    page.fill("input[name=key]", "team/on call & 100%")
    page.fill("input[name=title]", "Who is on call")
    page.fill("textarea[name=body]", "Priya is on call this week.\nThen Sam.")
    page.fill("input[name=source]", "the rota")
    page.fill("input[name=ref]", "https://wiki.example/rota")
    page.select_option("select[name=kind]", "state")
    page.fill("input[name=expiresAt]", "2099-01-01T09:00")
    page.click("text=Save record")
    assert page.locator("[role=status]").inner_text() == "The record was saved."
    assert page.locator(".key").inner_text() == "team/on call & 100%"
    assert page.locator(".written-by").inner_text().startswith("a member, signed in")
    stored = site.owner_api(team.admin).get(
        team.pool + "/entry", params={"key": "team/on call & 100%"}
    )
    record = data_of(stored)["record"]
    assert record["body"] == "Priya is on call this week.\nThen Sam."
    assert record["provenance"]["source"] == "the rota" and record["kind"] == "state"
    assert record["expiresAt"].startswith("2099-01-01T09:00:00")
    # A claim the member may not make is refused on the page, the form kept, nothing stored.
    page.goto(f"{site.console.url}{team.page}")
    page.fill("input[name=key]", "rule.pinned")
    page.fill("input[name=title]", "Never deploy on Fridays")
    page.fill("textarea[name=body]", "No deploys on Fridays.")
    page.fill("input[name=source]", "me")
    page.fill("input[name=ref]", "https://wiki.example/rules")
    page.select_option("select[name=authority]", "pinned")
    page.click("text=Save record")
    assert "owner_confirmed" in page.locator("[role=alert]").inner_text()
    assert page.locator("input[name=key]").input_value() == "rule.pinned"
    missing = site.owner_api(team.admin).get(team.pool + "/entry", params={"key": "rule.pinned"})
    assert missing.status_code == 404
    # Retrieve: the search ranks the record that answers.
    page.fill("input[name=q]", "who is on call")
    page.press("input[name=q]", "Enter")
    page.wait_for_url("**q=who*")
    found = page.locator("tr[data-record]")
    assert found.first.get_attribute("data-record") == "team/on call & 100%"
    shot(page, tmp_path, "project-search")
    # Delete, after the confirmation page.
    found.first.locator("a").click()
    page.click("button:text-is('Delete…')")
    page.click("button:text-is('Delete')")
    page.wait_for_url(f"{site.console.url}{team.page}?done=deleted")
    assert page.locator("tr[data-record='team/on call & 100%']").count() == 0
    gone = site.owner_api(team.admin).get(
        team.pool + "/entry", params={"key": "team/on call & 100%"}
    )
    assert gone.status_code == 404


def test_a_projects_viewer_reads_its_memory_but_gets_no_write_form(
    site: Site, context: BrowserContext
) -> None:
    team = new_team(site, role="viewer")
    page = context.new_page()
    sign_in(page, site, team.member, team.page)
    assert page.locator(".role").inner_text() == "viewer"
    assert page.locator("tr[data-record='deploy.day']").count() == 1
    assert page.locator("form[method=post] input[name=key]").count() == 0
    page.goto(f"{site.console.url}{team.page}/record?key=deploy.day")
    assert page.locator("button:text-is('Delete…')").count() == 0
    # A reference is a link only on the web: a script URL stays text.
    scripted = {**agent_record("scripted"), "provenance": {**agent_record()["provenance"]}}
    scripted["provenance"]["ref"] = "javascript:alert(1)"
    admin = site.owner_api(team.admin)
    assert admin.put(team.pool + "/entry", scripted).status_code == 200
    page.goto(f"{site.console.url}{team.page}/record?key=scripted")
    assert page.locator(".ref").inner_text() == "javascript:alert(1)"
    assert page.locator(".ref a").count() == 0
    page.goto(f"{site.console.url}{team.page}/record?key=deploy.day")
    csrf = page.locator("input[name=csrf]").first.get_attribute("value") or ""
    refused = context.request.post(
        f"{site.console.url}{team.page}/delete",
        form={"csrf": csrf, "confirmed": "1", "key": "deploy.day"},
    )
    assert refused.status == 403
    kept = site.owner_api(team.admin).get(team.pool + "/entry", params={"key": "deploy.day"})
    assert kept.status_code == 200


def test_project_memory_pages_of_a_project_you_are_not_in_are_not_found(
    site: Site, browser: Any, context: BrowserContext
) -> None:
    team = new_team(site)
    paths = (team.page, f"{team.page}/record?key=deploy.day", f"{team.page}?q=deploy")
    member = browser.new_context()  # the control: the project's member reads them
    try:
        page = member.new_page()
        sign_in(page, site, team.member, "/projects")
        for path in paths:
            response = page.goto(f"{site.console.url}{path}")
            assert response is not None and response.status == 200, path
            assert "Tuesdays" in page.content() or "Deploy day" in page.content()
    finally:
        member.close()
    stranger = login()
    site.owner_api(stranger).post("/v1/orgs", {"name": "Elsewhere"})  # an org of their own
    page = context.new_page()
    sign_in(page, site, stranger, "/projects")
    assert "Rocket" not in page.locator("main").inner_text()
    assert page.locator(f"[data-org='{team.org}']").count() == 0
    for path in paths:
        response = page.goto(f"{site.console.url}{path}")
        assert response is not None and response.status == 404, path
        assert "Tuesdays" not in page.content()
    csrf = page.locator("input[name=csrf]").first.get_attribute("value") or ""
    for path, form in (
        (f"{team.page}/delete", {"key": "deploy.day", "confirmed": "1"}),
        (
            team.page,
            {
                **{k: "x" for k in ("title", "body", "source")},
                "key": "deploy.day",
                "ref": "https://x.example",
                "kind": "fact",
            },
        ),
    ):
        posted = context.request.post(f"{site.console.url}{path}", form={"csrf": csrf, **form})
        assert posted.status == 404, path
    kept = data_of(
        site.owner_api(team.admin).get(team.pool + "/entry", params={"key": "deploy.day"})
    )
    assert kept["record"]["title"] == "Deploy day" and kept["record"]["version"] == 1


def test_the_session_table_is_sealed_off(database: embedded.EmbeddedDatabase) -> None:
    # Only grove-console's functions reach it; its role reaches nothing else.
    for url in (database.runtime_url, database.share_url, database.console_url):
        with psycopg.connect(url) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT * FROM console_sessions")
    with psycopg.connect(database.console_url) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT * FROM memories")
    for url in (database.runtime_url, database.share_url):
        with psycopg.connect(url) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT grove_console_session_get(%s)", (b"\0" * 32,))


def test_the_console_refuses_a_role_with_wider_rights(database: embedded.EmbeddedDatabase) -> None:
    done = run_script(
        "grove-console",
        env={
            "GROVE_CONSOLE_DATABASE_URL": database.runtime_url,
            "GROVE_CONSOLE_SECRET_KEY": CONSOLE_SECRET_KEY,
            "GROVE_WEBSITE_ORIGIN": "http://127.0.0.1:1",
            "GROVE_DEV_AUTH": "1",
        },
    )
    # Refused as an unsafe role (not as a database it cannot reach).
    assert done.returncode == 1, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("grove-console: refusing to run: database role "), done.stderr
    assert "wider rights than grove-console" in line, done.stderr


def test_the_console_never_holds_the_server_secret_in_production(
    database: embedded.EmbeddedDatabase,
) -> None:
    env = {
        "GROVE_ENV": "production",
        "GROVE_CONSOLE_DATABASE_URL": database.console_url,
        "GROVE_WEBSITE_ORIGIN": "https://memory.example",
    }
    refused = {
        "GROVE_SECRET_KEY": (
            "grove-console: invalid configuration: grove-console must not hold"
            " GROVE_SECRET_KEY in production: give it GROVE_CONSOLE_SECRET_KEY, a random"
            " secret of its own"
        ),
        "": (
            "grove-console: invalid configuration: GROVE_CONSOLE_SECRET_KEY is required"
            " (a random secret of at least 32 characters)"
        ),
    }
    for given, line in refused.items():
        done = run_script("grove-console", env={**env, **({given: SECRET} if given else {})})
        assert done.returncode == 1 and done.stderr.strip() == line, done.stderr


# --- a real MCP client's own OAuth, with the person signing in in the browser ----------


def approve_at_the_website(page: Page, site: Site, person: str, approval: str, name: str) -> None:
    """The person who just signed the agent in opens its approval link and approves it
    (personal notes, read); the provider remembers them, so it may ask for consent only."""
    page.goto(approval)
    page.click("text=Sign in with your identity provider")
    if page.locator("input[name=login]").count():
        sign_in_at_provider(page, person)
    else:
        page.click("button[type=submit]")
    page.wait_for_url(f"{site.console.url}/connections/approve*")
    assert name in page.locator(".client-name").inner_text()
    page.click("button[value=approve]")
    page.wait_for_url(f"{site.console.url}/connections*")


class MemoryTokens:
    """The SDK client's token storage, in memory: one client's registration and tokens."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Callback:
    """The client's loopback redirect URI: catches the provider's redirect in the browser."""

    def __init__(self) -> None:
        self.codes: queue.Queue[dict[str, str]] = queue.Queue()
        codes = self.codes

        class Handler(loopback.Handler):
            def do_GET(self) -> None:  # http.server's method name
                query = parse_qs(urlsplit(self.path).query)
                codes.put({k: v[0] for k, v in query.items()})
                self.answer(b"signed in; you can close this window", content_type="text/plain")

        self.server = loopback.Server(Handler)
        self.url = f"{self.server.url}/callback"

    def close(self) -> None:
        self.server.close()


class SdkAgent:
    """The MCP SDK's OAuthClientProvider: it finds the provider through Grove's resource
    metadata, registers itself, and hands the authorization URL to the browser."""

    def __init__(self, mcp_url: str, callback: Callback) -> None:
        self.mcp_url = mcp_url
        self.callback = callback
        self.storage = MemoryTokens()
        self.authorize: queue.Queue[str] = queue.Queue()

    def search(self, query: str) -> Future[Any]:
        """Start one search on a thread of its own; it may first need a browser sign-in."""

        async def redirect(url: str) -> None:
            self.authorize.put(url)

        async def code() -> AuthorizationCodeResult:
            answer = await asyncio.to_thread(self.callback.codes.get, True, 60)
            return AuthorizationCodeResult(
                code=answer["code"], state=answer.get("state"), iss=answer.get("iss")
            )

        async def run() -> Any:
            oauth = OAuthClientProvider(
                self.mcp_url,
                OAuthClientMetadata(
                    client_name="SDK Agent",
                    redirect_uris=[AnyUrl(self.callback.url)],
                    grant_types=["authorization_code", "refresh_token"],
                    response_types=["code"],
                    token_endpoint_auth_method="none",
                ),
                self.storage,
                redirect_handler=redirect,
                callback_handler=code,
            )
            async with (
                httpx2.AsyncClient(auth=oauth) as http,
                McpClient(
                    streamable_http_client(self.mcp_url, http_client=http),
                    client_info=types.Implementation(name="SDK Agent", version="1.0"),
                ) as client,
            ):
                return await client.call_tool("search_memories", {"query": query})

        return ThreadPoolExecutor(1).submit(asyncio.run, run())


def test_the_mcp_sdk_client_signs_in_in_the_browser_and_waits_for_approval(
    site: Site, context: BrowserContext, tmp_path: Path
) -> None:
    person = login()
    owner = site.owner_api(person)
    owner.save("nebula field notes")
    callback = Callback()
    try:
        sdk = SdkAgent(site.mcp.url, callback)
        first = sdk.search("nebula")
        page = context.new_page()
        page.goto(sdk.authorize.get(timeout=60))  # the provider's login, for the agent
        sign_in_at_provider(page, person)
        page.wait_for_url(f"{callback.url}*")
        required = tool_error(first.result(timeout=60))
        assert required["code"] == "connection_required"
        assert sdk.storage.tokens is not None and sdk.storage.client is not None

        # The same person, now at the website (the provider remembers them: consent only).
        approve_at_the_website(page, site, person, required["approvalUrl"], "SDK Agent")
        shot(page, tmp_path, "approved-sdk-agent")

        found = sdk.search("nebula").result(timeout=60)  # no new sign-in: its token
        assert not found.is_error, found
        assert [i["memory"]["content"] for i in text_json(found)["items"]] == ["nebula field notes"]
        assert sdk.authorize.empty()
    finally:
        callback.close()


MCP_REMOTE = "mcp-remote@0.15.1"
AUTHORIZE_URL = re.compile(r"Please authorize this client by visiting:\s+(\S+)")


def test_mcp_remote_signs_in_in_the_browser_and_waits_for_approval(
    site: Site, context: BrowserContext, tmp_path: Path
) -> None:
    # What desktop clients run for a remote server: mcp-remote, stdio on our side.
    npx = require_tool("npx", "runs mcp-remote as desktop clients do")
    person = login()
    site.owner_api(person).save("quasar observation log")
    errors = (tmp_path / "mcp-remote.log").open("w+")
    approved = threading.Event()
    answers: queue.Queue[Any] = queue.Queue()
    server = StdioServerParameters(
        command=npx,
        args=["-y", MCP_REMOTE, site.mcp.url, str(free_port()), "--allow-http"],
        env={
            **os.environ,
            "HOME": str(tmp_path),  # its tokens live under ~/.mcp-auth
            "npm_config_cache": os.environ.get("npm_config_cache", str(Path.home() / ".npm")),
            "npm_config_update_notifier": "false",
            "BROWSER": "true",  # we are the browser
        },
    )

    async def agent_side() -> None:
        async with McpClient(
            stdio_client(server, errlog=errors),
            client_info=types.Implementation(name="Desktop Agent", version="3.1"),
        ) as client:
            answers.put(await client.call_tool("search_memories", {"query": "quasar"}))
            await asyncio.to_thread(approved.wait, 120)
            answers.put(await client.call_tool("search_memories", {"query": "quasar"}))

    with ThreadPoolExecutor(1) as thread:
        done = thread.submit(asyncio.run, agent_side())
        url = wait_until(lambda: _authorize_url(tmp_path / "mcp-remote.log"), timeout=120)
        page = context.new_page()
        page.goto(url)
        sign_in_at_provider(page, person)
        required = tool_error(answers.get(timeout=60))
        assert required["code"] == "connection_required"

        approve_at_the_website(page, site, person, required["approvalUrl"], "Desktop Agent")
        approved.set()
        found = answers.get(timeout=60)
        done.result(timeout=60)
    errors.close()
    assert not found.is_error, found
    assert [i["memory"]["content"] for i in text_json(found)["items"]] == ["quasar observation log"]


def _authorize_url(log: Path) -> str | None:
    match = AUTHORIZE_URL.search(log.read_text())
    return match.group(1) if match else None


# --- a new owner's first agent, and pages a person can read ------------------------------


def path_of(url: str) -> str:
    """A website URL's path and query."""
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}" if parts.query else parts.path


STANDUP = "The team standup is at 9:30 every weekday in the blue room."
STANDUP_AGAIN = "Every weekday the team standup is at 9:30 in the blue room."
#: The duplicates page after a merge.
MERGED = re.compile(r".*/duplicates\?merged=[0-9a-f-]{36}%2F[0-9a-f-]{36}$")


def test_duplicates_are_merged_and_undone_in_the_browser(
    site: Site, context: BrowserContext, tmp_path: Path
) -> None:
    person = login()
    owner = site.owner_api(person)
    made = owner.post("/v1/keys", {"name": "laptop", "grants": {"personal": True}})
    laptop = Client(site.api.url, made.json()["data"]["key"])
    older = laptop.save(STANDUP + " Bring the sprint board.")["id"]
    newer = owner.save(STANDUP_AGAIN)["id"]
    owner.save("The VPN needs the new certificate")
    page = context.new_page()
    sign_in(page, site, person, "/notes")
    page.click("header nav >> text=Duplicates")
    page.wait_for_url(f"{site.console.url}/duplicates")
    assert page.locator("header nav a[aria-current]").inner_text() == "Duplicates"
    group = page.locator(".duplicate-group")
    assert group.count() == 1
    rows = group.locator("tr[data-note]")
    assert [rows.nth(i).get_attribute("data-note") for i in range(2)] == [newer, older]
    assert [s.strip() for s in group.locator(".saver").all_inner_texts()] == ["you", "laptop"]
    assert group.locator("td time[title]").count() == 2
    assert "Bring the sprint board." in (group.locator("blockquote").text_content() or "")
    shot(page, tmp_path, "duplicates")
    stale = context.new_page()  # the same group, open in a second tab
    stale.goto(f"{site.console.url}/duplicates")

    form = group.locator("form[action='/duplicates/merge']")
    fields = [
        (i.get_attribute("name") or "", i.get_attribute("value") or "")
        for i in form.locator("input").all()
    ]
    group.locator("button:text-is('Merge')").click()
    page.wait_for_url(MERGED)
    merged = page.locator(".merged")
    assert merged.get_attribute("data-state") == "applied"
    assert "Merged 2 notes" in merged.inner_text()
    assert owner.get(f"/v1/memories/{older}").json()["data"]["archived"] is True
    kept = owner.get(f"/v1/memories/{newer}").json()["data"]
    assert kept["content"] == STANDUP_AGAIN + "\nBring the sprint board."
    assert page.locator(".duplicate-group").count() == 0
    assert "No duplicates" in page.locator(".empty").inner_text()
    shot(page, tmp_path, "duplicates-merged")
    # The same form sent again (a double click): the same turn and proposal, applied once.
    again = context.request.post(
        f"{site.console.url}/duplicates/merge",
        data=urlencode(fields),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        max_redirects=0,
    )
    assert again.status == 303 and page.url.endswith(again.headers["location"])
    assert owner.get(f"/v1/memories/{newer}").json()["data"]["version"] == 2
    # The second tab's Merge: its notes changed since it was shown; nothing more is merged.
    stale.locator(".duplicate-group button:text-is('Merge')").click()
    assert "Nothing was merged" in stale.locator("[role=alert]").inner_text()
    assert owner.get(f"/v1/memories/{newer}").json()["data"]["version"] == 2

    page.click("button:text-is('Undo the merge')")
    page.wait_for_url("**done=undone")
    assert "undone" in page.locator("[role=status]").inner_text()
    assert owner.get(f"/v1/memories/{older}").json()["data"]["archived"] is False
    assert owner.get(f"/v1/memories/{newer}").json()["data"]["content"] == STANDUP_AGAIN
    assert page.locator(".duplicate-group").count() == 1

    # A note archived after the page was shown: nothing is merged, and the page says so.
    page.goto(f"{site.console.url}/duplicates")
    assert owner.post("/v1/tools/archive_memories", {"ids": [older]}).status_code == 200
    page.locator(".duplicate-group button:text-is('Merge')").click()
    assert "Nothing was merged" in page.locator("[role=alert]").inner_text()
    assert owner.get(f"/v1/memories/{newer}").json()["data"]["version"] == 3


def test_asking_to_find_duplicates_proposes_merges_over_every_note(
    site: Site, context: BrowserContext
) -> None:
    person = login()
    owner = site.owner_api(person)
    twins = {owner.save(STANDUP)["id"], owner.save(STANDUP_AGAIN)["id"]}
    owner.save("The VPN needs the new certificate")
    page = context.new_page()
    sign_in(page, site, person, "/ask")
    page.click("text=New conversation")
    page.wait_for_url(re.compile(r".*/ask/[0-9a-f-]{36}$"))
    page.fill("textarea[name=query]", "Find duplicates")
    page.click("button:text-is('Ask')")
    page.wait_for_url("**#turn-1")
    merge = page.locator("#turn-1 .proposal[data-action=merge]")
    links = merge.locator(".preview a").all()
    assert {(a.get_attribute("href") or "").split("?")[0][len("/notes/") :] for a in links} == twins
    merge.locator("button:text-is('Apply')").click()
    page.wait_for_url("**done=apply*")
    assert page.locator("#turn-1 .proposal[data-action=merge]").get_attribute("data-state") == (
        "applied"
    )


#: A timestamp as the API sends it: never shown as such on a page.
RAW_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d")


def test_a_new_owner_gets_started_approves_an_agent_and_sees_what_it_saved(
    site: Site, context: BrowserContext, tmp_path: Path
) -> None:
    person = login()
    page = context.new_page()
    page.goto(site.console.url)
    page.click("text=Sign in with your identity provider")
    sign_in_at_provider(page, person)
    page.wait_for_url(f"{site.console.url}/start")
    assert page.locator("#mcp-url").inner_text() == site.mcp.url
    assert page.locator("#setup-claude-code").inner_text() == (
        f"claude mcp add --transport http grove {site.mcp.url}"
    )
    assert site.mcp.url in page.locator("#setup-mcp-remote").inner_text()
    # The stdio bridge's entry runs the command its own distribution installs.
    bridge = page.locator("#setup-bridge").inner_text()
    assert '"grove-mcp-bridge"' in bridge and site.api.url in bridge
    assert f"{site.api.url}/v1/memories" in page.locator("#rest-curl").inner_text()
    assert page.locator("[data-wait]").inner_text().startswith("Waiting for your first agent")
    shot(page, tmp_path, "start")

    # An agent tries to save while the page is open: the page turns into its approval.
    client_id = site.provider.register("Browser Test Agent", AGENT_CALLBACK)
    token = site.agent_token(person, client_id)
    note = {"content": "The release train leaves every second Thursday", "kind": "fact"}
    refused = tool_error(call_tool(site.mcp.url, token, "remember", note))
    assert refused["code"] == "connection_required"
    page.wait_for_url(f"{site.console.url}/connections/approve?request=*", timeout=30_000)
    assert "Browser Test Agent" in page.locator(".client-name").inner_text()

    # Approved as proposed, the agent saves; its note says who saved it.
    page.click("button[value=approve]")
    page.wait_for_url(f"{site.console.url}/connections*")
    saved = call_tool(site.mcp.url, token, "remember", note)
    assert not saved.is_error, saved
    page.click("header nav >> text=Notes")
    page.click(f"text={note['content']}")
    page.wait_for_url(f"{site.console.url}/notes/{text_json(saved)['id']}")
    saver = page.locator(".saved-by .saver")
    assert "Browser Test Agent" in saver.inner_text()
    shot(page, tmp_path, "first-note")
    saver.click()  # to what that agent saved
    assert page.locator("tr[data-note]").count() == 1

    # A key from the page works with the REST example's address.
    page.goto(f"{site.console.url}/start")
    page.fill("#rest input[name=name]", "script")
    page.click("#rest button:text-is('Create a key')")
    key = Client(site.api.url, page.locator("#secret").inner_text())
    assert key.post("/v1/memories", {"content": "from a script", "kind": "fact"}).status_code == 201


def test_an_agents_refused_save_leads_to_an_approval_that_lets_it_save(
    site: Site, context: BrowserContext, tmp_path: Path
) -> None:
    person = login()
    client_id = site.provider.register("Browser Test Agent", AGENT_CALLBACK)
    token = site.agent_token(person, client_id)
    note = {"content": "The build cache lives on the NAS", "kind": "fact"}
    required = tool_error(call_tool(site.mcp.url, token, "remember", note))
    assert required["code"] == "connection_required"

    page = context.new_page()
    sign_in(page, site, person, path_of(required["approvalUrl"]))
    tried = page.locator("ul.tried").inner_text()
    assert "save or change notes in your personal notes" in tried, tried
    assert "remember" in tried
    assert "Grove cannot check it" in page.locator(".unverified").inner_text()
    text = page.locator("main").inner_text()
    for jargon in ("openid", "offline_access", "Redirect host", "Asks for"):
        assert jargon not in text, jargon
    asked = page.locator("dl.facts time")
    assert asked.get_attribute("datetime") and asked.get_attribute("title")
    assert not RAW_TIMESTAMP.search(text)
    # The defaults let the refused save succeed; the owner could untick them.
    assert page.locator("input[name=personal]").is_checked()
    assert page.locator("input[value='memory:write']").is_checked()
    assert not page.locator("input[value='memory:delete']").is_checked()
    shot(page, tmp_path, "approve-save")
    page.click("button[value=approve]")
    page.wait_for_url(f"{site.console.url}/connections*")
    assert "may read, write" in page.locator("[role=status]").inner_text()

    saved = call_tool(site.mcp.url, token, "remember", note)
    assert not saved.is_error, saved
    listed = site.owner_api(person).get("/v1/memories").json()["data"]["items"]
    assert [m["content"] for m in listed] == [note["content"]]
    connections = page.locator("table.connections")
    assert connections.locator("time").first.get_attribute("title")
    shot(page, tmp_path, "connections-approved")


def test_denying_an_agent_asks_first(site: Site, context: BrowserContext, tmp_path: Path) -> None:
    person = login()
    client_id = site.provider.register("Browser Test Agent", AGENT_CALLBACK)
    token = site.agent_token(person, client_id)
    approval = tool_error(search(site.mcp.url, token, "x"))["approvalUrl"]
    page = context.new_page()
    sign_in(page, site, person, path_of(approval))
    page.click("button[value=deny]")
    assert page.locator("h1").inner_text() == "Deny Browser Test Agent?"
    shot(page, tmp_path, "deny-confirm")
    page.click("text=Cancel")  # nothing was denied: the request still waits
    assert page.locator(".status").inner_text() == "pending"
    page.click("button[value=deny]")
    page.click("button:text-is('Deny')")
    page.wait_for_url(f"{site.console.url}/connections*")
    assert "Denied" in page.locator("[role=status]").inner_text()


def test_the_error_page_gives_the_request_id_and_no_internal_code(
    site: Site, context: BrowserContext, tmp_path: Path
) -> None:
    page = context.new_page()
    sign_in(page, site, login(), "/notes")
    for path in (f"/notes/{uuid.uuid4()}", "/no-such-page"):
        response = page.goto(f"{site.console.url}{path}")
        assert response is not None and response.status == 404, path
        assert page.locator("h1").inner_text() == "Not found"
        reference = page.locator(".request-id").inner_text()
        assert reference and reference == response.headers["x-request-id"]
        text = page.locator("main").inner_text()
        assert "not_found" not in text and "(" not in text.split("\n")[1], text
        assert "404" not in text and "This page cannot do that" not in text
    shot(page, tmp_path, "error")


def test_an_identity_without_an_account_gets_a_page_for_people(
    site: Site, context: BrowserContext, tmp_path: Path
) -> None:
    person = login()
    owner = site.owner_api(person)
    gone = owner.delete("/v1/account", json={"confirmation": "delete my Grove account"})
    assert gone.status_code == 200, gone.text
    page = context.new_page()
    page.goto(site.console.url)
    page.click("text=Sign in with your identity provider")
    sign_in_at_provider(page, person)
    assert page.locator("h1").inner_text() == "Your account isn't set up yet"
    text = page.locator("main").inner_text()
    for operator in ("grove accounts", "GROVE_", "operator", "`"):
        assert operator not in text, operator
    assert page.locator("header nav").count() == 0  # every link would refuse the same way
    assert page.locator(".request-id").inner_text()
    shot(page, tmp_path, "no-account")
    page.click("button:text-is('Sign out')")
    assert page.locator("h1").inner_text() == "Signed out"


def test_every_page_reads_well_at_desktop_and_phone_width(
    site: Site, context: BrowserContext, tmp_path: Path
) -> None:
    """Screenshots of each page for review; no raw timestamp on any of them."""
    person = login()
    owner = site.owner_api(person)
    notebook = owner.post("/v1/notebooks", {"name": "Runbooks"}).json()["data"]["id"]
    note = owner.save("Deploys go out on Tuesdays\nwith a ticket", projectId=notebook)["id"]
    owner.save("The VPN needs the new certificate")
    owner.post("/v1/shares", {"target": {"type": "note", "id": note}})
    owner.post("/v1/shares", {"target": {"type": "notebook", "id": notebook}, "title": "Ops"})
    owner.post("/v1/keys", {"name": "laptop", "grants": {"capabilities": ["memory:read"]}})
    conversation = str(uuid.uuid4())
    assert (
        owner.post("/v1/conversations", {"id": conversation, "title": "Deploys"}).status_code == 201
    )
    org, project = own_pool(site, owner)
    page = context.new_page()
    sign_in(page, site, person, "/notes")
    pages = {
        "notes": "/notes",
        "note": f"/notes/{note}",
        "notebook": f"/notebooks/{notebook}",
        "files": "/files",
        "duplicates": "/duplicates",
        "shares": "/shares",
        "ask": "/ask",
        "conversation": f"/ask/{conversation}",
        "connections": "/connections",
        "start-later": "/start",
        "account": "/account",
        "projects": "/projects",
        "project": f"/projects/{org}/{project}",
        "project-record": f"/projects/{org}/{project}/record?key=deploy.day",
    }
    for name, path in pages.items():
        response = page.goto(f"{site.console.url}{path}")
        assert response is not None and response.status == 200, path
        text = page.locator("main").inner_text()
        assert not RAW_TIMESTAMP.search(text), (path, RAW_TIMESTAMP.search(text))
        shot(page, tmp_path, f"page-{name}")
    page.emulate_media(color_scheme="dark")  # the system's dark mode
    for name in ("notes", "connections", "start-later", "project"):
        page.goto(f"{site.console.url}{pages[name]}")
        shot(page, tmp_path, f"page-{name}-dark")
    page.emulate_media(color_scheme="light")
    page.goto(f"{site.console.url}/shares")
    names = page.locator(".share-name").all_inner_texts()
    assert names == ["Ops", "Deploys go out on Tuesdays"], names
    assert page.locator("td time[title]").count() >= 2
    # Keyboard: the first Tab reaches the skip link, which is then visible.
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip"


def test_no_page_has_a_serious_accessibility_violation(site: Site, browser: Any) -> None:
    """axe-core on every page (and the approval, confirmation and error pages), light and
    dark: no serious or critical violation (contrast, names, labels, structure)."""
    person = login()
    owner = site.owner_api(person)
    notebook = owner.post("/v1/notebooks", {"name": "Runbooks"}).json()["data"]["id"]
    note = owner.save("Deploys go out on Tuesdays", projectId=notebook)["id"]
    owner.post("/v1/shares", {"target": {"type": "note", "id": note}})
    owner.save(STANDUP)
    owner.save(STANDUP_AGAIN)  # a group on the duplicates page
    conversation = str(uuid.uuid4())
    assert owner.post("/v1/conversations", {"id": conversation}).status_code == 201
    client_id = site.provider.register("Browser Test Agent", AGENT_CALLBACK)
    token = site.agent_token(person, client_id)
    saving = {"content": "a note", "kind": "fact"}
    approval = tool_error(call_tool(site.mcp.url, token, "remember", saving))["approvalUrl"]
    org, project = own_pool(site, owner)
    checked = browser.new_context(bypass_csp=True)  # axe's script is put into the page
    try:
        page = checked.new_page()
        sign_in(page, site, person, "/start")
        paths = [
            "/start",
            "/notes",
            f"/notes/{note}",
            f"/notebooks/{notebook}",
            "/notebooks/archived",
            "/suggestions",
            "/duplicates",
            "/files",
            "/shares",
            "/ask",
            f"/ask/{conversation}",
            "/connections",
            "/account",
            "/projects",
            f"/projects/{org}/{project}",
            f"/projects/{org}/{project}?q=deploy",
            f"/projects/{org}/{project}/record?key=deploy.day",
            path_of(approval),
            f"/notes/{uuid.uuid4()}",  # the error page
        ]
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            for path in paths:
                page.goto(f"{site.console.url}{path}")
                assert serious_violations(page) == [], (path, scheme)
            page.goto(f"{site.console.url}/duplicates")  # after a merge: its Undo
            page.click(".duplicate-group button:text-is('Merge')")
            page.wait_for_url(MERGED)
            assert serious_violations(page) == [], ("merged", scheme)
            page.click("button:text-is('Undo the merge')")
            page.wait_for_url("**done=undone")
            page.goto(f"{site.console.url}{path_of(approval)}")
            page.click("button[value=deny]")  # the confirmation page
            assert serious_violations(page) == [], ("deny", scheme)
    finally:
        checked.close()
