"""Coalesce concurrent embedding requests into model batches on one model thread.

gRPC handler threads only enqueue and wait; the CPU-bound model runs on a thread of
its own, taking whatever is queued (up to the batch size; after waiting
``coalesce_seconds`` for more, by default not at all) and encoding it in one call.
Requests that arrive while the model works queue up and form the next batch, so
batches grow with the load without a lone query waiting for company.
"""

from __future__ import annotations

import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field

from grove_ask import telemetry
from grove_ask.providers import Provider
from grove_telemetry import metrics


@dataclass
class _Pending:
    texts: list[str]
    future: Future[list[list[float]]] = field(default_factory=Future)
    queued_at: float = field(default_factory=time.monotonic)


class Batcher:
    """A single model thread fed by many callers."""

    def __init__(self, provider: Provider, max_batch: int, coalesce_seconds: float) -> None:
        self.provider = provider
        self._max_batch = max_batch
        self._coalesce = coalesce_seconds
        self._queue: queue.Queue[_Pending | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="model", daemon=True)
        self._thread.start()

    def embed(self, texts: list[str], timeout: float | None) -> list[list[float]]:
        """Vectors for ``texts``; raises the provider's error or ``TimeoutError``."""
        pending = _Pending(texts)
        self._queue.put(pending)
        return pending.future.result(timeout=timeout)

    def close(self) -> None:
        """Stop the model thread after the work already queued."""
        self._queue.put(None)
        self._thread.join(timeout=30)

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            size = len(first.texts)
            deadline = time.monotonic() + self._coalesce
            stop = False
            while size < self._max_batch:
                try:
                    item = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if item is None:
                    stop = True
                    break
                batch.append(item)
                size += len(item.texts)
            self._encode(batch)
            if stop:
                return

    def _encode(self, batch: list[_Pending]) -> None:
        live = [p for p in batch if p.future.set_running_or_notify_cancel()]
        texts = [text for pending in live for text in pending.texts]
        service = metrics.service()
        started = time.monotonic()
        for pending in live:
            telemetry.QUEUE_WAIT.labels(service).observe(started - pending.queued_at)
        telemetry.BATCH_SIZE.labels(service).observe(len(texts))
        try:
            with telemetry.MODEL_LATENCY.labels(service).time():
                vectors = self.provider.embed(texts) if texts else []
        except Exception as ex:  # every waiting caller gets the provider's error
            for pending in live:
                pending.future.set_exception(ex)
            return
        start = 0
        for pending in live:
            pending.future.set_result(vectors[start : start + len(pending.texts)])
            start += len(pending.texts)
