"""A scripted stand-in for an outside OpenAI-compatible chat-completions provider
(a local HTTP server), and the replies and prompts of Grove's answer format."""

from __future__ import annotations

import json
import re
import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.support import loopback

#: How long a held request waits for the client to give up (seconds).
HOLD_SECONDS = 15.0


@dataclass
class Hold:
    """Keep the request open, answering nothing, until the client closes the connection."""


@dataclass
class Drop:
    """Close the connection without answering (a provider that fell over)."""


@dataclass
class Gated:
    """Answer ``content`` once the test releases the fake's gate."""

    content: str


Step = str | int | Hold | Drop | Gated | Callable[[dict[str, Any]], str]


@dataclass
class Seen:
    """One request the fake received."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def prompt(self) -> str:
        return str(self.body["messages"][1]["content"])


@dataclass
class FakeChat:
    """A stand-in for an outside OpenAI-compatible ``/chat/completions`` endpoint.

    Each request takes the next step of the script (the last one repeats): a string is
    the model's reply text (HTTP 200), an int an HTTP status, ``Hold`` keeps the request
    open and records in ``closed`` when the client closes the connection, ``Drop``
    closes it at once, ``Gated`` waits for ``gate``, a callable computes the reply text
    from the request body.
    """

    script: list[Step] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)
    closed: list[float] = field(default_factory=list)
    gate: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self, *steps: Step) -> None:
        with self.lock:
            self.script, self.seen, self.closed = list(steps), [], []
            self.gate = threading.Event()

    def next_step(self, seen: Seen) -> Step:
        with self.lock:
            self.seen.append(seen)
            return self.script.pop(0) if len(self.script) > 1 else self.script[0]

    def hold(self, connection: socket.socket) -> bool:
        """Wait until the client closes the connection (True) or ``HOLD_SECONDS`` pass."""
        deadline = time.monotonic() + HOLD_SECONDS
        while time.monotonic() < deadline:
            readable, _, _ = select.select([connection], [], [], 0.02)
            if readable:
                try:
                    ended = connection.recv(1, socket.MSG_PEEK) == b""
                except OSError:
                    ended = True
                if ended:
                    self.closed.append(time.monotonic())
                    return True
        return False


def serve(fake: FakeChat) -> loopback.Server:
    class Handler(loopback.Handler):
        def do_POST(self) -> None:  # http.server's method name
            body = json.loads(self.body())
            step = fake.next_step(Seen(self.path, dict(self.headers), body))
            if callable(step):
                step = step(body)
            if isinstance(step, Hold) and fake.hold(self.connection):
                return
            if isinstance(step, Drop):
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if isinstance(step, Gated):
                fake.gate.wait(timeout=30)
                step = step.content
            if isinstance(step, int):
                self.send_response(step)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.reply(step if isinstance(step, str) else "held too long")

        def reply(self, content: str) -> None:
            message = {"role": "assistant", "content": content}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            self.answer({"object": "chat.completion", "choices": [choice]})

    return loopback.Server(Handler)


def reply(answer: str, *citations: tuple[int, str]) -> str:
    """A model reply in the format the prompt asks for."""
    cited = [{"evidence": number, "quote": quote} for number, quote in citations]
    return json.dumps({"answer": answer, "citations": cited})


def number_of(body: dict[str, Any], content: str) -> int:
    """The number the prompt gave the evidence item with ``content``."""
    found = re.search(r"\[(\d+)\] " + re.escape(content), body["messages"][1]["content"])
    assert found, "the evidence is not in the prompt"
    return int(found.group(1))
