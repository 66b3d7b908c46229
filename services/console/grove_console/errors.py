"""The one error page: what went wrong in words, and the request id for support.

Every refusal the website shows (a form from another session, grove-api's answer, a
route that does not exist) goes through ``render_error``: a title and a sentence a
person can act on, never an API code or a stack trace, and the request id (also in the
``X-Request-Id`` header and the logs) so support can find the request. A signed-in
identity without an account gets its own page (``no_account.html``): no navigation,
since every page would refuse it, and no operator's commands.
"""

from __future__ import annotations

from typing import Any

import falcon

from grove_console.api import ApiError
from grove_console.page import Deps, Forbidden
from grove_db.errors import ClientTimeout

#: Title and sentence by HTTP status, when the error brings no better words.
BY_STATUS: dict[int, tuple[str, str]] = {
    400: ("That didn't work", "The request was not one this page can handle."),
    403: ("Not allowed", "Your account may not do that."),
    404: (
        "Not found",
        "We couldn't find that page. It may have been deleted, or it may belong to"
        " another account.",
    ),
    405: ("Not found", "This page cannot do that."),
    409: ("Something changed", "It changed since you opened it: reload the page and try again."),
    413: ("Too large", "That is more than this page accepts."),
    429: ("Too many requests", "Wait a moment, then try again."),
}
#: When Grove itself fails (5xx).
UNAVAILABLE = (
    "Grove isn't answering right now",
    "Nothing was changed. Try again in a minute.",
)
#: grove-api's messages worth showing as they are (they say what to fix in the input).
SHOWN_AS_SENT = frozenset({400, 409, 413, 422})


def words(status: int, detail: str | None = None) -> tuple[str, str]:
    """The page's title and sentence for ``status`` (``detail`` if it says more)."""
    if status >= 500:
        return UNAVAILABLE
    title, sentence = BY_STATUS.get(status, ("That didn't work", "Something went wrong."))
    if detail and status in SHOWN_AS_SENT:
        sentence = sentence_case(detail)
    return title, sentence


def sentence_case(text: str) -> str:
    """``text`` as a sentence: a capital first letter and a full stop."""
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def render_error(
    deps: Deps,
    req: falcon.Request,
    resp: falcon.Response,
    status: int,
    title: str,
    message: str,
    link: dict[str, str] | None = None,
) -> None:
    """The error page with ``status``."""
    session = req.context.get("session")
    if link is None:
        link = (
            {"href": "/start", "text": "Back to Grove"}
            if session
            else {"href": "/", "text": "Sign in"}
        )
    resp.status = falcon.code_to_http_status(status)
    resp.content_type = falcon.MEDIA_HTML
    resp.text = deps.templates.get_template("error.html").render(
        title=title,
        message=message,
        link=link,
        session=session,
        request_path=req.path,
        request_id=req.context.get("request_id", "-"),
    )


def install(app: falcon.App[falcon.Request, falcon.Response], deps: Deps) -> None:
    """Route every refusal of ``app`` to the error page."""

    def forbidden(req: falcon.Request, resp: falcon.Response, ex: Exception, params: Any) -> None:
        title = "This form has expired"
        message = "It was opened in an earlier session. Reload the page and try again."
        render_error(deps, req, resp, 403, title, message)

    def api_error(req: falcon.Request, resp: falcon.Response, ex: ApiError, params: Any) -> None:
        if ex.code == "identity_not_provisioned" and req.context.get("session") is not None:
            resp.status = falcon.HTTP_403
            resp.content_type = falcon.MEDIA_HTML
            resp.text = deps.templates.get_template("no_account.html").render(
                session=req.context.session,
                bare=True,
                request_id=req.context.get("request_id", "-"),
            )
            return
        title, message = words(ex.status, ex.message)
        render_error(deps, req, resp, ex.status, title, message)

    def http_error(req: falcon.Request, resp: falcon.Response, ex: falcon.HTTPError) -> None:
        # falcon's own titles ("404 Not Found") are no words for people.
        own = ex.title if ex.title and not ex.title[:1].isdigit() else None
        title, message = words(ex.status_code, own)
        message = ex.description or message  # this website's own words, when it gave some
        render_error(deps, req, resp, ex.status_code, title, message)

    def too_slow(req: falcon.Request, resp: falcon.Response, ex: Exception, params: Any) -> None:
        title = "That took too long"
        message = "The form stopped arriving before it was complete. Send it again."
        render_error(deps, req, resp, 408, title, message)

    app.add_error_handler(Forbidden, forbidden)
    app.add_error_handler(ApiError, api_error)
    app.add_error_handler(ClientTimeout, too_slow)
    app.set_error_serializer(http_error)
