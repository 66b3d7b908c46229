"""The HTML of a public share: one small, readable page, no JavaScript.

Every value is escaped here except note bodies, which arrive sanitized from
``render.Renderer``. The one stylesheet is inline and allowed by its hash in the
Content-Security-Policy (``STYLE_HASH``), so the policy needs no 'unsafe-inline'.
"""

from __future__ import annotations

import base64
import hashlib
from datetime import datetime
from html import escape
from typing import Any

CSS = """
:root { color-scheme: light dark; --fg: #1c1c1e; --bg: #fdfdfc; --muted: #6b6b70;
  --line: #e3e3e0; --link: #0b57d0; --code: #f2f2ef; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e8e8ea; --bg: #161618; --muted: #9a9aa1; --line: #2e2e33;
    --link: #8ab4f8; --code: #242428; }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 17px/1.6 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
    sans-serif; }
main { max-width: 72ch; margin: 0 auto; padding: 2.5rem 1.25rem 3rem; }
h1 { font-size: 1.7rem; line-height: 1.25; margin: 0 0 .25rem; overflow-wrap: anywhere; }
.meta, .kind, footer { color: var(--muted); font-size: .875rem; }
article { border-top: 1px solid var(--line); padding: 1.25rem 0; overflow-wrap: anywhere; }
article > :first-child { margin-top: 0; }
.kind { text-transform: uppercase; letter-spacing: .06em; font-size: .75rem; }
a { color: var(--link); }
img { max-width: 100%; height: auto; }
pre, code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: .9em; background: var(--code); border-radius: 4px; }
code { padding: .1em .3em; }
pre { padding: .75rem 1rem; overflow-x: auto; }
pre code { padding: 0; background: none; }
blockquote { margin: 1rem 0; padding-left: 1rem; border-left: 3px solid var(--line);
  color: var(--muted); }
table { border-collapse: collapse; display: block; overflow-x: auto; }
th, td { border: 1px solid var(--line); padding: .3rem .6rem; }
nav { display: flex; justify-content: space-between; gap: 1rem; padding-top: 1rem;
  border-top: 1px solid var(--line); }
footer { margin-top: 2rem; }
"""
STYLE_HASH = "sha256-" + base64.b64encode(hashlib.sha256(CSS.encode()).digest()).decode()


def _time(moment: datetime | None) -> str:
    if moment is None:
        return ""
    return (
        f'<time datetime="{escape(moment.isoformat())}">'
        f"{escape(moment.strftime('%d %b %Y, %H:%M UTC'))}</time>"
    )


def _document(title: str, body: str, indexable: bool = False) -> str:
    robots = "" if indexable else '<meta name="robots" content="noindex">'
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="referrer" content="no-referrer">{robots}'
        f"<title>{escape(title)}</title><style>{CSS}</style></head>\n"
        f"<body><main>{body}"
        "<footer>A read-only page shared from Grove.</footer></main></body></html>\n"
    )


def share_page(share: dict[str, Any], notes: list[dict[str, Any]], links: dict[str, str]) -> str:
    """A share's page: title, last update, its notes, and ``links`` (``newer``/``older``)."""
    count = "" if share["type"] == "note" else " · notebook"
    header = (
        f"<header><h1>{escape(share['title'])}</h1>"
        f'<p class="meta">Updated {_time(share["updatedAt"])}{count}</p></header>'
    )
    articles = "".join(
        f'<article><div class="kind">{escape(note["kind"])}</div>{note["html"]}'
        f'<p class="meta">{_time(note["updatedAt"])}</p></article>'
        for note in notes
    )
    if not notes:
        articles = '<article><p class="meta">No notes here yet.</p></article>'
    nav = ""
    if links:
        newer = links.get("newer")
        older = links.get("older")
        nav = (
            "<nav>"
            + (f'<a href="{escape(newer)}">← Newest notes</a>' if newer else "<span></span>")
            + (f'<a href="{escape(older)}" rel="next">Older notes →</a>' if older else "")
            + "</nav>"
        )
    return _document(share["title"], header + articles + nav, share["indexable"])


def error_page(status: int, title: str, message: str) -> str:
    """An error's page: what happened in one sentence, nothing else."""
    body = f"<header><h1>{escape(title)}</h1></header><p>{escape(message)}</p>"
    return _document(f"{status} {title}", body)
