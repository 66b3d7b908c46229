"""axe-core (npm) in the browser tests: accessibility rules run on a real page.

``tests/a11y`` pins axe-core; it is installed once (``npm ci``, under a lock, as the test
OpenID provider is) and its script put into the page under test. The website's
Content-Security-Policy allows no inline script, so the pages are opened in a browser
context made with ``bypass_csp=True``. Without npm the tests are skipped.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from tests.support.tools import npm_installed

HERE = Path(__file__).resolve().parents[1] / "a11y"
#: The impacts a page must never have (axe's two highest of four).
SERIOUS = ("serious", "critical")
#: What a violation is reported as: the rule, its impact and its first elements.
REPORT = """async () => (await axe.run()).violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ")),
}))"""


@functools.cache
def script() -> str:
    """axe-core's browser script, installed on first use."""
    npm_installed(HERE, "axe-core", "installs axe-core for the accessibility checks")
    return (HERE / "node_modules" / "axe-core" / "axe.min.js").read_text()


def serious_violations(page: Any) -> list[dict[str, Any]]:
    """The serious and critical axe violations of the page as it is now."""
    page.add_script_tag(content=script())
    found: list[dict[str, Any]] = page.evaluate(REPORT)
    return [v for v in found if v["impact"] in SERIOUS]
