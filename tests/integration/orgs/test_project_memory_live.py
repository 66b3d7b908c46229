"""The opt-in live acceptance of project memory in the owner website.

With ``MEMORY_LIVE_OUT`` (a folder), ``MEMORY_LIVE_RUNNER`` (who runs it: ``ci``, a
person) and ``MEMORY_LIVE_COMMIT`` (the commit under test) set, it seeds a throwaway
database (a new database on the embedded server, migrated, dropped after), starts the
test provider, grove-api and grove-console on it, and drives the project-memory browser
specification below in chromium, one numbered step at a time. Under ``MEMORY_LIVE_OUT``
it leaves the evidence: ``storage-state.json`` (the member's signed-in browser state),
``list-body.json`` (the API's own HTTP answer to the pool listing the page showed),
``running-sha.txt`` (the commit that ran), ``screenshots/NN-step.png`` and
``receipt.json`` (runner, commit, times and each step's outcome; written even when a step
fails, naming it). Without the three variables it is skipped, saying so; under CI
(``CI=true``) it fails instead, and ``.ci/run`` sets them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest
import requests
from playwright.sync_api import Page

from grove_console.sessions import COOKIE
from grove_db import embedded
from grove_db.migrate import migrate
from tests.support.clients import data_of
from tests.support.console import Site, Team, login, new_team, running_site, sign_in
from tests.support.databases import empty_database
from tests.support.tools import missing

VARIABLES = ("MEMORY_LIVE_OUT", "MEMORY_LIVE_RUNNER", "MEMORY_LIVE_COMMIT")
REPOSITORY = Path(__file__).resolve().parents[3]
#: The browser specification: what each step proves, in order.
STEPS = (
    "a throwaway database is migrated and seeded with an org project, its admin, a "
    "contributor and a record an agent's project key wrote",
    "the provider, grove-api and grove-console run on it",
    "the contributor signs in in chromium",
    "Projects lists the project with the contributor's role",
    "the project's page lists the seeded record with its authority and source",
    "the page lists exactly the records of the API's own HTTP list answer",
    "the record's page shows its provenance, authority and that an agent's key wrote it",
    "the contributor writes a record through the form",
    "its page shows what was written, by a member signed in",
    "the API holds the record as written, provenance included",
    "searching the pool ranks that record first",
    "a pinned claim without owner confirmation is refused on the page and nothing stored",
    "the record is deleted after the confirmation page",
    "the API no longer has it",
    "a person outside the project gets 404 for its pages",
    "the contributor's signed-in browser state is saved",
)


@dataclass
class Receipt:
    """The run's record, written to ``receipt.json`` after every step."""

    folder: Path
    runner: str
    commit: str
    started: str = field(default_factory=lambda: datetime.now(UTC).isoformat())
    steps: list[dict[str, Any]] = field(default_factory=list)

    def step(self, page: Page | None, check: Callable[[], None]) -> None:
        """Run the next step of ``STEPS``; record it, with a screenshot of ``page``."""
        number = len(self.steps) + 1
        entry: dict[str, Any] = {"step": number, "proves": STEPS[number - 1], "ok": False}
        self.steps.append(entry)
        began = time.monotonic()
        try:
            check()
            entry["ok"] = True
        finally:
            entry["seconds"] = round(time.monotonic() - began, 3)
            if page is not None:
                shot = self.folder / "screenshots" / f"{number:02d}-step.png"
                shot.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(shot), full_page=True)
                entry["screenshot"] = str(shot.relative_to(self.folder))
            self.write()

    def write(self) -> None:
        passed = len(self.steps) == len(STEPS) and all(s["ok"] for s in self.steps)
        receipt = {
            "runner": self.runner,
            "commit": self.commit,
            "startedAt": self.started,
            "writtenAt": datetime.now(UTC).isoformat(),
            "specification": list(STEPS),
            "steps": self.steps,
            "result": "passed" if passed else "failed",
        }
        (self.folder / "receipt.json").write_text(json.dumps(receipt, indent=2) + "\n")


@pytest.fixture(scope="module")
def live() -> tuple[Path, str, str]:
    """The output folder, runner and commit; skipped (failed under CI) without them,
    before anything is started."""
    absent = [name for name in VARIABLES if not os.environ.get(name)]
    if absent:
        missing(
            "the live project-memory acceptance runs only with MEMORY_LIVE_OUT, "
            f"MEMORY_LIVE_RUNNER and MEMORY_LIVE_COMMIT set ({', '.join(absent)} unset)"
        )
    folder = Path(os.environ["MEMORY_LIVE_OUT"])
    folder.mkdir(parents=True, exist_ok=True)
    return folder, os.environ["MEMORY_LIVE_RUNNER"], os.environ["MEMORY_LIVE_COMMIT"]


def checked_out_commit() -> str | None:
    """The repository's HEAD, when git can say."""
    git = shutil.which("git")
    if git is None:
        return None
    done = subprocess.run(
        [git, "rev-parse", "HEAD"], cwd=REPOSITORY, capture_output=True, text=True, check=False
    )
    return done.stdout.strip() if done.returncode == 0 else None


@pytest.fixture
def throwaway(database: embedded.EmbeddedDatabase) -> Iterator[embedded.EmbeddedDatabase]:
    """A new database on the embedded server, migrated for every role, dropped after."""
    with empty_database(database) as migration_url:
        migrate(migration_url, embedded.RUNTIME_ROLE, embedded.SHARE_ROLE, embedded.CONSOLE_ROLE)
        name = urlsplit(migration_url).path.lstrip("/")

        def on(url: str) -> str:
            moved = url.replace(f"/{embedded.DATABASE}?", f"/{name}?", 1)
            assert moved != url, url
            return moved

        yield replace(
            database,
            grove_superuser_url=on(database.grove_superuser_url),
            migration_url=migration_url,
            runtime_url=on(database.runtime_url),
            share_url=on(database.share_url),
            console_url=on(database.console_url),
        )


def test_project_memory_live_acceptance_in_the_browser(
    live: tuple[Path, str, str], browser: Any, throwaway: embedded.EmbeddedDatabase
) -> None:
    folder, runner, commit = live
    head = checked_out_commit()
    assert head is None or head == commit, f"MEMORY_LIVE_COMMIT {commit} is not HEAD {head}"
    (folder / "running-sha.txt").write_text(commit + "\n")
    receipt = Receipt(folder, runner, commit)
    receipt.write()
    with running_site(throwaway) as site:
        context = browser.new_context()
        try:
            drive(site, throwaway, browser, context, receipt)
        finally:
            context.close()
    assert [s["ok"] for s in receipt.steps] == [True] * len(STEPS)


def drive(
    site: Site, db: embedded.EmbeddedDatabase, browser: Any, context: Any, receipt: Receipt
) -> None:
    """The browser specification, step by step."""
    teams: list[Team] = []
    receipt.step(None, lambda: teams.append(seeded(site, db)))
    team = teams[0]
    url = site.console.url

    def services_up() -> None:
        for running in (site.api, site.console):
            assert requests.get(f"{running.url}/readyz", timeout=10).status_code == 200

    receipt.step(None, services_up)
    page = context.new_page()
    receipt.step(page, lambda: sign_in(page, site, team.member, "/projects"))

    def projects_listed() -> None:
        row = page.locator(f"[data-org='{team.org}'] tr[data-project='{team.project}']")
        assert "contributor" in row.inner_text()
        row.locator("a").click()
        page.wait_for_url(f"{url}{team.page}")

    receipt.step(page, projects_listed)

    def seeded_record_listed() -> None:
        row = page.locator("tr[data-record='deploy.day']").inner_text()
        assert "observed" in row and "slack #ops" in row

    receipt.step(page, seeded_record_listed)
    member = site.owner_api(team.member)

    def list_matches_the_api() -> None:
        answer = member.get(team.pool, params={"limit": 50})
        assert answer.status_code == 200
        (receipt.folder / "list-body.json").write_bytes(answer.content)
        keys = [r["key"] for r in answer.json()["data"]["records"]]
        shown = [row.get_attribute("data-record") for row in page.locator("tr[data-record]").all()]
        assert shown == keys == ["deploy.day"]

    receipt.step(page, list_matches_the_api)

    def record_read() -> None:
        page.locator("tr[data-record='deploy.day'] a").click()
        assert page.locator(".authority").inner_text() == "observed"
        assert page.locator(".source").inner_text() == "slack #ops"
        assert page.locator(".written-by").inner_text().startswith("an agent's project key")

    receipt.step(page, record_read)
    key = "team/on call"

    def written() -> None:
        page.goto(f"{url}{team.page}")
        fill(page, key, "Who is on call", "Priya is on call this week.", "the rota")
        page.click("text=Save record")
        assert page.locator("[role=status]").inner_text() == "The record was saved."

    receipt.step(page, written)

    def written_shown() -> None:
        assert page.locator(".key").inner_text() == key
        assert page.locator(".record-body").inner_text() == "Priya is on call this week."
        assert page.locator(".written-by").inner_text().startswith("a member, signed in")

    receipt.step(page, written_shown)

    def stored() -> None:
        record = data_of(member.get(team.pool + "/entry", params={"key": key}))["record"]
        assert record["provenance"]["source"] == "the rota"
        assert record["writtenBy"]["credential"] == "owner_session"

    receipt.step(page, stored)

    def retrieved() -> None:
        page.goto(f"{url}{team.page}?q=who+is+on+call")
        assert page.locator("tr[data-record]").first.get_attribute("data-record") == key

    receipt.step(page, retrieved)

    def pinned_refused() -> None:
        page.goto(f"{url}{team.page}")
        fill(page, "rule.pinned", "No Friday deploys", "Never deploy on Fridays.", "me")
        page.select_option("select[name=authority]", "pinned")
        page.click("text=Save record")
        assert "owner_confirmed" in page.locator("[role=alert]").inner_text()
        refused = member.get(team.pool + "/entry", params={"key": "rule.pinned"})
        assert refused.status_code == 404

    receipt.step(page, pinned_refused)

    def deleted() -> None:
        page.goto(f"{url}{team.page}/record?key=team%2Fon%20call")
        page.click("button:text-is('Delete…')")
        page.click("button:text-is('Delete')")
        page.wait_for_url(f"{url}{team.page}?done=deleted")

    receipt.step(page, deleted)

    def gone() -> None:
        assert member.get(team.pool + "/entry", params={"key": key}).status_code == 404

    receipt.step(page, gone)
    stranger_context = browser.new_context()
    stranger = stranger_context.new_page()

    def outsider_refused() -> None:
        sign_in(stranger, site, login(), "/projects")
        response = stranger.goto(f"{url}{team.page}")
        assert response is not None and response.status == 404
        assert "Deploy day" not in stranger.content()

    try:
        receipt.step(stranger, outsider_refused)
    finally:
        stranger_context.close()

    def state_saved() -> None:
        context.storage_state(path=str(receipt.folder / "storage-state.json"))
        cookies = json.loads((receipt.folder / "storage-state.json").read_text())["cookies"]
        assert any(c["name"] == COOKIE for c in cookies), cookies

    receipt.step(page, state_saved)


def seeded(site: Site, db: embedded.EmbeddedDatabase) -> Team:
    """The seed: an org project with a contributor and an agent's record, checked to be
    in the throwaway database (not the suite's)."""
    team = new_team(site)
    with psycopg.connect(db.grove_superuser_url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM project_memories WHERE project_id = %s", (team.project,)
        ).fetchone()
    assert row is not None and row[0] == 1
    return team


def fill(page: Page, key: str, title: str, body: str, source: str) -> None:
    """The write form's fields (the reference is the team wiki's)."""
    page.fill("input[name=key]", key)
    page.fill("input[name=title]", title)
    page.fill("textarea[name=body]", body)
    page.fill("input[name=source]", source)
    page.fill("input[name=ref]", "https://wiki.example/rota")
