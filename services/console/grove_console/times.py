"""Times on pages: human words, the exact time on hover, local to the reader.

Every time a page shows goes through ``when``: a ``<time>`` element whose text is short
("7 Dec 2026, 12:39 UTC") and whose ``title`` is the exact instant; ``console.js``
rewrites both into the reader's own time zone, so without scripts the page still reads
well in UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime

from markupsafe import Markup, escape


def parse(value: str | datetime | None) -> datetime | None:
    """An API timestamp (ISO 8601) as an aware datetime; None for none or a bad value."""
    if value is None or isinstance(value, datetime):
        return value
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def when(value: str | datetime | None, empty: str = "never", date_only: bool = False) -> Markup:
    """``value`` as a ``<time>`` element (``empty`` in words when there is none)."""
    moment = parse(value)
    if moment is None:
        return Markup("{}").format(empty)
    moment = moment.astimezone(UTC)
    exact = moment.strftime("%A %-d %B %Y, %H:%M:%S UTC")
    short = moment.strftime("%-d %b %Y" if date_only else "%-d %b %Y, %H:%M UTC")
    style = "date" if date_only else "datetime"
    return Markup('<time datetime="{}" title="{}" data-style="{}">{}</time>').format(
        escape(moment.isoformat().replace("+00:00", "Z")), exact, style, short
    )
