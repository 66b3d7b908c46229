"""Reading a service's metrics port."""

from __future__ import annotations

import re

import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.support.processes import Running
from tests.support.waiting import wait_until


def metrics_url(running: Running) -> str:
    """The ``/metrics`` URL of a service started with its metrics port 0 (read from its log)."""
    found = wait_until(
        lambda: next(
            (
                match
                for line in list(running.lines)
                if (match := re.search(r'"event": "metrics_listening".*"port": (\d+)', line))
            ),
            None,
        )
    )
    return f"http://127.0.0.1:{found.group(1)}/metrics"


def scrape(running: Running) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Every sample on the service's metrics port: sample name -> [(labels, value)]."""
    response = requests.get(metrics_url(running), timeout=10)
    response.raise_for_status()
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return samples
