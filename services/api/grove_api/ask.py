"""``POST /v1/ask``: a question answered from the caller's notes, with verified citations."""

from __future__ import annotations

import falcon

from grove_api.body import read_json
from grove_contracts.ask import AskRequest, AskResponse
from grove_contracts.errors import success_envelope
from grove_memory import ask
from grove_memory.store import Store


class Ask:
    """Retrieve evidence, call the ask service's ``Answer``, verify, reply (never stored)."""

    def __init__(
        self, store: Store, answerer: ask.Answerer | None, timeout_seconds: float, max_body: int
    ) -> None:
        self.store = store
        self.answerer = answerer
        self.timeout = timeout_seconds
        self.max_body = max_body

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json(req, AskRequest, self.max_body)
        if self.answerer is None:
            raise ask.InferenceUnavailable("no answering service is configured")
        reply = ask.ask(self.store, self.answerer, req.context.principal, body, self.timeout)
        resp.media = success_envelope(AskResponse.model_validate(reply).model_dump(mode="json"))
