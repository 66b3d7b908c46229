"""Send a plan through the public API: notebooks first, then batches of notes.

The importer is a client like any other (``POST /v1/notebooks``,
``POST /v1/memories/batch``), so the key's grants, the account's quotas and every
limit hold. Each item carries its stable ``operationId``: after a crash, sending the
same plan again replays what was saved instead of saving it twice.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import requests

from grove_cli.importers.plan import Item, Notice, Plan
from grove_contracts.notes import MAX_BATCH_ITEMS

#: Stay under GROVE_MAX_BATCH_BODY_BYTES (1 MiB by default) with room for the envelope.
MAX_BATCH_BYTES = 900_000
MAX_ATTEMPTS = 5
MAX_WAIT_SECONDS = 60.0
TIMEOUT_SECONDS = 60.0
RETRIED = (429, 503)


class ImportStopped(Exception):
    """The API refused the import as a whole (a bad key, no grant, unreachable)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Summary:
    """What happened to each planned note, plus the notebooks made for them."""

    counts: Counter[str] = field(default_factory=Counter)
    failed: list[Notice] = field(default_factory=list)
    notebooks_created: int = 0
    notebooks_found: int = 0


class Api:
    """Calls to one Grove API with one key; 429 and 503 are retried a few times."""

    def __init__(self, base_url: str, key: str, sleep: Any = time.sleep) -> None:
        self.base = base_url.rstrip("/")
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {key}"
        self.sleep = sleep

    def call(self, method: str, path: str, body: Any = None, **kwargs: Any) -> Any:
        """The ``data`` of a successful answer; otherwise ``ImportStopped``.

        ``body`` goes as UTF-8 JSON (not ASCII escapes, which would triple the size of
        text in most scripts).
        """
        if body is not None:
            kwargs["data"] = encoded(body)
            kwargs["headers"] = {"Content-Type": "application/json"}
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                response = self.session.request(
                    method, self.base + path, timeout=TIMEOUT_SECONDS, **kwargs
                )
            except requests.RequestException as ex:
                raise ImportStopped(f"cannot reach {self.base}: {ex}") from ex
            if response.status_code in RETRIED and attempt < MAX_ATTEMPTS:
                self.sleep(_retry_after(response, attempt))
                continue
            if response.ok:
                return response.json()["data"]
            raise ImportStopped(f"{method} {path}: {_error(response)}", response.status_code)
        raise AssertionError("unreachable: the last attempt returns or raises")


def encoded(body: Any) -> bytes:
    """A request body as the importer sends it."""
    return json.dumps(body, ensure_ascii=False).encode()


def _retry_after(response: requests.Response, attempt: int) -> float:
    """The server's ``Retry-After`` (seconds), else a doubling wait; at most a minute."""
    try:
        wait = float(response.headers.get("Retry-After", ""))
    except ValueError:
        wait = 2.0 ** (attempt - 1)
    return min(max(wait, 0.0), MAX_WAIT_SECONDS)


def _error(response: requests.Response) -> str:
    try:
        error = response.json()["error"]
        return f"{response.status_code} {error['code']}: {error['message']}"
    except (ValueError, KeyError, TypeError):
        return f"{response.status_code} {response.reason}"


def send(api: Api, plan: Plan) -> Summary:
    """Create the plan's notebooks as needed, then save its notes in batches."""
    summary = Summary()
    notebooks = _notebooks(api, plan, summary)
    bodies = [(item, _body(item, notebooks)) for item in plan.items]
    for batch in _batches(bodies):
        answer = api.call("POST", "/v1/memories/batch", {"items": [b for _, b in batch]})
        for (item, _), result in zip(batch, answer["items"], strict=True):
            summary.counts[result["status"]] += 1
            if result["status"] == "failed":
                error = result["error"]
                details = "; ".join(
                    f"{d['field']}: {d['message']}" for d in error.get("details") or []
                )
                reason = f"{error['code']}: {details or error['message']}"
                summary.failed.append(Notice(item.where, reason))
    return summary


def _body(item: Item, notebooks: dict[tuple[str, ...], str]) -> dict[str, Any]:
    if not item.notebook:
        return item.body
    return {**item.body, "projectId": notebooks[item.notebook]}


def _batches(bodies: list[tuple[Item, dict[str, Any]]]) -> list[list[tuple[Item, Any]]]:
    """At most 100 items and MAX_BATCH_BYTES of JSON a batch."""
    batches: list[list[tuple[Item, Any]]] = []
    size = 0
    for pair in bodies:
        length = len(encoded(pair[1])) + 1
        if not batches or len(batches[-1]) == MAX_BATCH_ITEMS or size + length > MAX_BATCH_BYTES:
            batches.append([])
            size = 0
        batches[-1].append(pair)
        size += length
    return batches


def _notebooks(api: Api, plan: Plan, summary: Summary) -> dict[tuple[str, ...], str]:
    """The ID of every notebook path the plan names, found by name or created.

    Names compare ignoring case, as the API's uniqueness among siblings does; a re-run
    finds the notebooks the first run made.
    """
    ids: dict[tuple[str, ...], str] = {}
    children: dict[str | None, dict[str, str]] = {}
    paths = {
        item.notebook[:depth] for item in plan.items for depth in range(1, 1 + len(item.notebook))
    }
    for path in sorted(paths, key=lambda p: (len(p), p)):
        parent = ids[path[:-1]] if len(path) > 1 else None
        if parent not in children:
            children[parent] = _children(api, parent)
        found = children[parent].get(path[-1].strip().casefold())
        if found is None:
            found = _create(api, path[-1], parent)
            children[parent][path[-1].strip().casefold()] = found
            summary.notebooks_created += 1
        else:
            summary.notebooks_found += 1
        ids[path] = found
    return ids


def _children(api: Api, parent: str | None) -> dict[str, str]:
    params: dict[str, Any] = {"parentId": parent} if parent else {"root": "true"}
    names: dict[str, str] = {}
    while True:
        page = api.call("GET", "/v1/notebooks", params={**params, "limit": 100})
        names.update({nb["name"].casefold(): nb["id"] for nb in page["items"]})
        if not page.get("nextCursor"):
            return names
        params["cursor"] = page["nextCursor"]


def _create(api: Api, name: str, parent: str | None) -> str:
    try:
        created = api.call("POST", "/v1/notebooks", {"name": name, "parentId": parent})
    except ImportStopped as ex:
        if ex.status == 403:
            raise ImportStopped(
                f"{ex} (creating notebook {name!r} needs a key granted all notebooks:"
                " `grove keys create --all-projects`)",
                403,
            ) from ex
        raise
    return str(created["id"])
