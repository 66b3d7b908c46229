"""The owner website with everything behind it: a real OIDC provider, grove-ask, -share,
-api, -mcp and -console on one database; signing in through the provider's pages in a
browser; an org project with a member; and screenshots for review."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playwright.sync_api import Page

from grove_db import embedded
from tests.support.clients import Client, data_of
from tests.support.oidc_provider import OidcProvider
from tests.support.processes import (
    Running,
    free_port,
    start_api,
    start_ask,
    start_console,
    start_mcp,
    start_share,
)

API_RESOURCE = "https://grove.test/api"
CONSOLE = "grove-console"
CONSOLE_SECRET = "console-secret-for-browser-tests"
AGENT_CALLBACK = "http://127.0.0.1:9/agent/callback"


@dataclass
class Site:
    provider: OidcProvider
    api: Running
    mcp: Running
    console: Running
    share: Running

    def owner_api(self, login: str) -> Client:
        """The owner's API client, signed in over HTTP (for setting up notes)."""
        callback = f"{self.console.url}/auth/callback"
        tokens = self.provider.sign_in(login, CONSOLE, callback, API_RESOURCE, CONSOLE_SECRET)
        return Client(self.api.url, tokens.access_token)

    def agent_token(self, login: str, client_id: str) -> str:
        return self.provider.sign_in(login, client_id, AGENT_CALLBACK, self.mcp.url).access_token


def website_provider(origin: str, *resources: str) -> OidcProvider:
    """The test provider with the website (``CONSOLE`` at ``origin``) registered as a
    confidential client, issuing tokens for the api and for ``resources``."""
    return OidcProvider.start(
        {API_RESOURCE: {}, **{resource: {} for resource in resources}},
        [
            {
                "client_id": CONSOLE,
                "client_secret": CONSOLE_SECRET,
                "redirect_uris": [f"{origin}/auth/callback"],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "client_secret_basic",
            }
        ],
    )


def website_identity(provider: OidcProvider, origin: str) -> dict[str, str]:
    """The settings that point grove-api and grove-console at ``provider``."""
    return {
        "GROVE_OIDC_ISSUER": provider.issuer,
        "GROVE_OIDC_AUDIENCE": API_RESOURCE,
        "GROVE_WEBSITE_ORIGIN": origin,
    }


@contextmanager
def running_site(database: embedded.EmbeddedDatabase) -> Iterator[Site]:
    """The test provider, grove-ask, -share, -api, -mcp and -console on ``database``."""
    console_port, mcp_port = free_port(), free_port()
    origin = f"http://127.0.0.1:{console_port}"
    mcp_url = f"http://127.0.0.1:{mcp_port}/mcp"
    provider = website_provider(origin, mcp_url)
    identity = website_identity(provider, origin)
    services = {
        "GROVE_DATABASE_URL": database.runtime_url,
        "GROVE_EMBEDDING_PROFILE": "disabled",
        "GROVE_OIDC_PROVISIONING": "personal",
        "GROVE_OIDC_AUTHORIZED_PARTY": CONSOLE,
        "GROVE_MCP_PUBLIC_URL": mcp_url,
        **identity,
    }
    ask = start_ask({"GROVE_EMBEDDING_PROFILE": "disabled"})
    share = start_share(database)
    api = start_api(
        {
            **services,
            "GROVE_API_WORKERS": "1",
            "GROVE_ASK_ADDRESS": ask.url,
            "GROVE_SHARE_PUBLIC_URL": share.url,
        }
    )
    mcp = start_mcp(services, workers=1, port=mcp_port)
    console = start_console(
        database,
        console_port,
        {
            **identity,
            "GROVE_CONSOLE_API_URL": api.url,
            "GROVE_CONSOLE_CLIENT_ID": CONSOLE,
            "GROVE_CONSOLE_CLIENT_SECRET": CONSOLE_SECRET,
            "GROVE_CONSOLE_SCOPES": "openid offline_access",
            "GROVE_MCP_PUBLIC_URL": mcp_url,
            "GROVE_API_PUBLIC_URL": api.url,
        },
    )
    try:
        yield Site(provider, api, mcp, console, share)
    finally:
        for running in (console, mcp, api, share, ask):
            running.stop()
        provider.stop()


def login() -> str:
    return f"owner-{uuid.uuid4().hex[:8]}"


def sign_in_at_provider(page: Page, person: str) -> None:
    """The provider's own pages: log in with any password, then consent."""
    page.fill("input[name=login]", person)
    page.fill("input[name=password]", "any password")
    page.click("button[type=submit]")
    page.click("button[type=submit]")  # the consent page's Continue


def sign_in(page: Page, site: Site, person: str, path: str = "/connections") -> None:
    page.goto(f"{site.console.url}{path}")
    page.click("text=Sign in with your identity provider")
    sign_in_at_provider(page, person)
    page.wait_for_url(f"{site.console.url}{path.split('?')[0]}*")


#: Screenshots go to the test's own directory, and also here when it is set (so a
#: reviewer can look at every page after a run).
SCREENSHOTS = os.environ.get("GROVE_SCREENSHOTS_DIR")
#: Desktop and phone widths.
WIDTHS = {"desktop": 1280, "phone": 390}


def shot(page: Page, tmp_path: Path, name: str) -> None:
    """Screenshots for review at desktop and phone width, kept with the test's output."""
    size = page.viewport_size or {"width": 1280, "height": 800}
    for label, width in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": 800})
        for folder in (tmp_path, *([Path(SCREENSHOTS)] if SCREENSHOTS else [])):
            folder.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(folder / f"{name}-{label}.png"), full_page=True)
    page.set_viewport_size(size)


@dataclass
class Team:
    """An org of ``admin``'s with one project, ``member`` in it with ``role``; a record
    written by an agent's project key of the admin's."""

    admin: str
    member: str
    org: str
    project: str

    @property
    def page(self) -> str:
        return f"/projects/{self.org}/{self.project}"

    @property
    def pool(self) -> str:
        return f"/v1/orgs/{self.org}/projects/{self.project}/memory"


def account_id(client: Client) -> str:
    """The signed-in owner's account ID, as a project of their own lists its members."""
    org = data_of(client.post("/v1/orgs", {"name": "Own"}))["id"]
    project = data_of(client.post(f"/v1/orgs/{org}/projects", {"name": "Own"}))["id"]
    members = data_of(client.get(f"/v1/orgs/{org}/projects/{project}/members"))["members"]
    return str(members[0]["accountId"])


def agent_record(key: str = "deploy.day") -> dict[str, Any]:
    return {
        "key": key,
        "title": "Deploy day",
        "body": "We deploy on Tuesdays after the standup.",
        "kind": "fact",
        "provenance": {
            "source": "slack #ops",
            "ref": "https://chat.example/c/123",
            "verification": "unverified",
            "observedAt": "2026-11-02T09:30:00+00:00",
        },
    }


def own_pool(site: Site, owner: Client) -> tuple[str, str]:
    """An org and project of ``owner``'s (its admin), with a record written by an
    agent's project key of theirs; their IDs."""
    org = data_of(owner.post("/v1/orgs", {"name": "Acme"}))["id"]
    project = data_of(owner.post(f"/v1/orgs/{org}/projects", {"name": "Rocket"}))["id"]
    scopes = ["project_memory:read", "project_memory:write"]
    created = owner.post(
        f"/v1/orgs/{org}/projects/{project}/keys", {"name": "ci agent", "scopes": scopes}
    )
    agent = Client(site.api.url, data_of(created)["key"])
    written = agent.put(f"/v1/orgs/{org}/projects/{project}/memory/entry", agent_record())
    assert written.status_code == 200, written.text
    return org, project


def new_team(site: Site, role: str = "contributor") -> Team:
    admin, member = login(), login()
    org, project = own_pool(site, site.owner_api(admin))
    added = site.owner_api(admin).post(
        f"/v1/orgs/{org}/projects/{project}/members",
        {"accountId": account_id(site.owner_api(member)), "role": role},
    )
    assert added.status_code == 201, added.text
    return Team(admin, member, org, project)
