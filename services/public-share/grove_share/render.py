"""Notes' Markdown to safe HTML: markdown-it-py (CommonMark plus GFM tables,
strikethrough and bare links) with raw HTML disabled, then the nh3 (ammonia) sanitizer.

Links keep only http, https and mailto and get ``rel="nofollow noopener noreferrer"``.
Images load only from the configured origins; any other image becomes a plain link to
it, so a page never fetches from a third party the operator has not allowed.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any
from urllib.parse import urlsplit

import nh3
from markdown_it import MarkdownIt
from markdown_it.token import Token

TAGS = {
    "a", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr",
    "img", "li", "ol", "p", "pre", "s", "strong", "table", "tbody", "td", "th", "thead", "tr",
    "ul",
}  # fmt: skip
ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title"},
    "ol": {"start"},
}
LINK_REL = "nofollow noopener noreferrer"


class Renderer:
    """Renders note content; ``image_origins`` are the origins images may load from."""

    def __init__(self, image_origins: Sequence[str] = ()) -> None:
        self.image_origins = frozenset(origin.rstrip("/") for origin in image_origins)
        self._md = MarkdownIt("gfm-like", {"html": False, "linkify": True})
        self._md.add_render_rule("image", self._image_rule())

    def html(self, markdown: str) -> str:
        """Sanitized HTML of ``markdown``."""
        return nh3.clean(
            self._md.render(markdown),
            tags=TAGS,
            attributes=ATTRIBUTES,
            attribute_filter=self._attribute,
            url_schemes={"http", "https", "mailto"},
            link_rel=LINK_REL,
        )

    def allowed_image(self, src: str) -> bool:
        """Whether a page may load an image from ``src``."""
        parts = urlsplit(src)
        return f"{parts.scheme}://{parts.netloc}".lower() in self.image_origins

    def _image_rule(self) -> Any:
        """markdown-it's image rule (it binds the renderer as the first argument)."""

        def image(renderer: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
            token = tokens[idx]
            src = str(token.attrGet("src") or "")
            alt = renderer.renderInlineAsText(token.children or [], options, env)
            if self.allowed_image(src):
                return f'<img src="{escape(src)}" alt="{escape(alt)}">'
            return f'<a href="{escape(src)}">{escape(alt or "image")}</a>'

        return image

    def _attribute(self, tag: str, name: str, value: str) -> str | None:
        if tag == "img" and name == "src" and not self.allowed_image(value):
            return None
        return value
