"""An outside OpenAI-compatible embeddings provider the test controls, and a stack of
grove-api, grove-ask and workers on top of it."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass

from tests.support import loopback
from tests.support.processes import Running, start_ask, start_worker
from tests.support.tenants import Tenant


class FakeEmbeddings:
    """A stand-in for an outside OpenAI-compatible provider (vLLM, TEI, OpenAI).

    The test controls it: ``dimensions`` of the vectors it returns, ``status`` to
    answer with, ``delay`` seconds before answering, and ``gate`` (when set, requests
    wait until it is released). Vectors are derived from the text, so equal texts get
    equal vectors. ``calls`` counts the texts it was asked to embed.
    """

    def __init__(self, dimensions: int) -> None:
        self.dimensions = dimensions
        self.status = 200
        self.delay = 0.0
        self.gate: threading.Event | None = None
        self.calls: list[str] = []
        fake = self

        class Handler(loopback.Handler):
            def do_POST(self) -> None:  # http.server's method name
                body = json.loads(self.body())
                fake.calls.extend(body["input"])
                if fake.gate is not None:
                    fake.gate.wait(timeout=60)
                time.sleep(fake.delay)
                if fake.status != 200:
                    self.send_response(fake.status)
                    self.end_headers()
                    return
                data = [
                    {"index": i, "embedding": fake.vector(text)}
                    for i, text in enumerate(body["input"])
                ]
                self.answer({"data": data})

        self.server = loopback.Server(Handler)
        self.url = f"{self.server.url}/v1"

    def vector(self, text: str) -> list[float]:
        digest = hashlib.sha256(text.encode()).digest()
        return [digest[i % len(digest)] / 255 + 0.01 for i in range(self.dimensions)]

    def close(self) -> None:
        if self.gate is not None:
            self.gate.set()
        self.server.close()


def start_fake_ask(fake: FakeEmbeddings, dimensions: int | None = None, **env: str) -> Running:
    """grove-ask on the ``openai`` profile, backed by ``fake`` (expecting ``dimensions``)."""
    return start_ask(
        {
            "GROVE_EMBEDDING_PROFILE": "openai",
            "GROVE_OPENAI_BASE_URL": fake.url,
            "GROVE_OPENAI_MODEL": "fake",
            "GROVE_OPENAI_DIMENSIONS": str(dimensions or fake.dimensions),
            **env,
        }
    )


@dataclass
class OpenAIStack:
    """An api + ask (openai profile, backed by ``fake``) + workers, for queue tests."""

    fake: FakeEmbeddings
    ask: Running
    api: Running
    workers: list[Running]
    tenant: Tenant

    def add_worker(self, **env: str) -> Running:
        worker = start_worker(
            self.tenant.database, self.ask.url, GROVE_EMBEDDING_PROFILE="openai", **env
        )
        self.workers.append(worker)
        return worker
