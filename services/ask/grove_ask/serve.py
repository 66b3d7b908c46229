"""``grove-ask``: load the embedding model once, then serve gRPC until SIGTERM."""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType

from pydantic import ValidationError

from grove_ask import providers
from grove_ask.batcher import Batcher
from grove_ask.server import create_server
from grove_ask.settings import AskSettings
from grove_contracts.errors import settings_problems

GRACE_SECONDS = 5


def main() -> None:
    """Entry point of ``grove-ask``; a bad setting exits with one line."""
    try:
        settings = AskSettings()
    except ValidationError as ex:
        sys.exit(f"grove-ask: invalid configuration: {settings_problems(ex)}")
    provider = providers.load(settings)
    batcher = (
        Batcher(provider, settings.embed_model_batch, settings.embed_coalesce_ms / 1000)
        if provider
        else None
    )
    server, port = create_server(settings, f"{settings.ask_host}:{settings.ask_port}", batcher)
    server.start()
    print(
        f"grove-ask listening on {settings.ask_host}:{port} (profile {settings.embedding_profile})",
        file=sys.stderr,
        flush=True,
    )
    stopped = threading.Event()

    def stop(signum: int, frame: FrameType | None) -> None:
        stopped.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    stopped.wait()
    server.stop(GRACE_SECONDS).wait()
    if batcher:
        batcher.close()
