"""``grove-ask``: load the embedding model once, then serve gRPC until SIGTERM."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from types import FrameType

from pydantic import ValidationError

from grove_ask import providers
from grove_ask.batcher import Batcher
from grove_ask.server import create_server
from grove_ask.settings import AskSettings
from grove_ask.telemetry import MODEL_LOADED, init_answer_metrics
from grove_contracts.errors import settings_problems
from grove_telemetry import metrics
from grove_telemetry.logs import configure_logging, log
from grove_telemetry.server import start_metrics_server
from grove_telemetry.traces import configure_tracing

GRACE_SECONDS = 5
logger = logging.getLogger("grove.ask")


def main() -> None:
    """Entry point of ``grove-ask``; a bad setting exits with one line."""
    try:
        settings = AskSettings()
    except ValidationError as ex:
        sys.exit(f"grove-ask: invalid configuration: {settings_problems(ex)}")
    configure_logging("ask")
    configure_tracing("grove-ask")
    metrics.init("ask")
    MODEL_LOADED.labels("ask").set(0)
    init_answer_metrics("ask")
    start_metrics_server(settings.metrics_host, settings.ask_metrics_port)
    provider = providers.load(settings)
    MODEL_LOADED.labels("ask").set(1 if provider else 0)
    batcher = (
        Batcher(provider, settings.embed_model_batch, settings.embed_coalesce_ms / 1000)
        if provider
        else None
    )
    server, port = create_server(settings, f"{settings.ask_host}:{settings.ask_port}", batcher)
    stopped = threading.Event()

    def stop(signum: int, frame: FrameType | None) -> None:
        stopped.set()

    # Before serving: a SIGTERM right after start-up must still be graceful.
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    server.start()
    log(
        logger,
        "listening",
        host=settings.ask_host,
        port=port,
        profile=settings.embedding_profile,
        precision=provider.precision if isinstance(provider, providers.MiniLM) else None,
        single_text_threads=(
            provider.single_text_threads if isinstance(provider, providers.MiniLM) else None
        ),
        generator=settings.answer_generator,
    )
    while not stopped.wait(1.0):  # a timed wait: the signal's handler runs within a second
        pass
    log(logger, "stopping", grace_seconds=GRACE_SECONDS)
    server.stop(GRACE_SECONDS).wait()  # in-flight calls finish; new ones are refused
    if batcher:
        batcher.close()
