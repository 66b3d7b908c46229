"""``GroveStore``: LangGraph's long-term memory store (``BaseStore``) kept in Grove.

Every item is one Grove note in the store's scope (a notebook, ``project_id``, or the
personal notes). Its provenance names it: ``sourceRef`` is the JSON array of the
namespace and the key (``["users","alice","food"]``), ``sourceAgent`` is ``agent`` plus
the namespace joined by dots (a digest when that is over 100 characters), so a lookup by
key lists only that namespace's notes. The value is the note's content as JSON; a note
whose content is not a JSON object (edited by hand in Grove) reads as
``{"content": text}``. A second ``put`` corrects the note (a new version), ``delete``
forgets it, and a query searches with Grove's hybrid search; a search without a query,
and ``list_namespaces``, list the scope's notes. ``index`` and ``ttl`` are not supported:
Grove indexes every note, and keeps it until it is forgotten.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import operator
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)

from grove_client.client import Grove, Id
from grove_client.models import Memory

DEFAULT_AGENT = "langgraph"
MAX_AGENT = 100  # sourceAgent's limit in the API
MAX_REF = 500  # sourceRef's limit
SEARCH_PAGE = 50  # the API's largest search page
MAX_SEARCH_PAGES = 10  # a filtered query reads at most this many pages

Namespace = tuple[str, ...]


class GroveStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items are notes of one Grove scope.

    ``grove`` is the client to use (the caller closes it); ``project_id`` the notebook
    holding the items (``None``: personal notes); ``kind`` the kind of the notes it saves;
    ``agent`` the prefix of their ``sourceAgent``. Two stores with the same scope and
    agent see the same items.
    """

    supports_ttl = False

    def __init__(
        self,
        grove: Grove,
        *,
        project_id: Id | None = None,
        kind: str = "fact",
        agent: str = DEFAULT_AGENT,
    ) -> None:
        self.grove = grove
        self.project_id = None if project_id is None else str(project_id)
        self.kind = kind
        self.agent = agent

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order, one Grove call or more each."""
        return [self._run(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` in a worker thread (the client is synchronous)."""
        return await asyncio.to_thread(self.batch, list(ops))

    def _run(self, op: Op) -> Result:
        validate_op_namespace(op)
        if isinstance(op, GetOp):
            found = self._find(op.namespace, op.key)
            return _item(found[0]) if found else None
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._namespaces(op)
        raise TypeError(f"unknown store operation: {type(op).__name__}")

    # Items

    def _put(self, op: PutOp) -> None:
        found = self._find(op.namespace, op.key)
        if op.value is None:
            if found:
                self.grove.forget([note.id for note in found])
            return
        content = json.dumps(dict(op.value), ensure_ascii=False)
        if found:
            self.grove.update(found[0].id, content=content)
            return
        self.grove.remember(
            content,
            self.kind,
            project_id=self.project_id,
            source_agent=self.agent_of(op.namespace),
            source_ref=_ref(op.namespace, op.key),
        )

    def _find(self, namespace: Namespace, key: str) -> list[Memory]:
        """The notes of an item, newest first (more than one only after racing puts)."""
        ref = _ref(namespace, key)
        notes = self.grove.list_notes(
            project_id=self.project_id or "personal",
            source_agent=self.agent_of(namespace),
            sort="updated_desc",
            limit=100,
        )
        return [note for note in notes if _source_ref(note) == ref]

    def agent_of(self, namespace: Namespace) -> str:
        """The ``sourceAgent`` of a namespace's notes."""
        agent = f"{self.agent}:{'.'.join(namespace)}"
        if len(agent) <= MAX_AGENT:
            return agent
        digest = hashlib.sha256(agent.encode()).hexdigest()[:32]
        return f"{self.agent[: MAX_AGENT - 34]}:#{digest}"

    # Search

    def _search(self, op: SearchOp) -> list[SearchItem]:
        wanted = op.offset + op.limit
        found: list[SearchItem] = []
        for note, score in self._candidates(op.query):
            item = self._own(note)
            if item is None or item.namespace[: len(op.namespace_prefix)] != op.namespace_prefix:
                continue
            if op.filter and not _matches(item.value, op.filter):
                continue
            found.append(_search_item(item, score))
            if len(found) >= wanted:
                break
        return found[op.offset : wanted]

    def _candidates(self, query: str | None) -> Iterator[tuple[Memory, float | None]]:
        """Notes of the scope by relevance to ``query``, or newest first without one."""
        if not query:
            notes = self.grove.list_notes(
                project_id=self.project_id or "personal", sort="updated_desc", limit=100
            )
            yield from ((note, None) for note in notes)
            return
        cursor: str | None = None
        for _ in range(MAX_SEARCH_PAGES):
            page = self.grove.search(
                query, project_id=self.project_id, limit=SEARCH_PAGE, cursor=cursor
            )
            yield from ((hit.memory, hit.score) for hit in page.items)
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def _own(self, note: Memory) -> Item | None:
        """The note as an item of this store, or ``None`` if it is not one."""
        in_scope = (None if note.project_id is None else str(note.project_id)) == self.project_id
        agent = note.provenance.source_agent if note.provenance else None
        if not in_scope or not agent or not agent.startswith(f"{self.agent}:"):
            return None
        return _item(note)

    def _namespaces(self, op: ListNamespacesOp) -> list[Namespace]:
        seen: set[Namespace] = set()
        for note, _ in self._candidates(None):
            item = self._own(note)
            if item is None:
                continue
            if all(_namespace_matches(c, item.namespace) for c in op.match_conditions or ()):
                depth = op.max_depth
                seen.add(item.namespace if depth is None else item.namespace[:depth])
        return sorted(seen)[op.offset : op.offset + op.limit]


def _ref(namespace: Namespace, key: str) -> str:
    ref = json.dumps([*namespace, key], ensure_ascii=False, separators=(",", ":"))
    if len(ref) > MAX_REF:
        raise ValueError(f"namespace and key are over {MAX_REF} characters as JSON")
    return ref


def _source_ref(note: Memory) -> str | None:
    return note.provenance.source_ref if note.provenance else None


def _item(note: Memory) -> Item | None:
    """The item a note holds, or ``None`` if its ``sourceRef`` does not name one."""
    try:
        path = json.loads(_source_ref(note) or "")
    except ValueError:
        return None
    if not isinstance(path, list) or len(path) < 2 or not all(isinstance(p, str) for p in path):
        return None
    return Item(
        value=_value(note.content),
        key=path[-1],
        namespace=tuple(path[:-1]),
        created_at=note.created_at,
        updated_at=note.updated_at,
    )


def _value(content: str) -> dict[str, Any]:
    try:
        value = json.loads(content)
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {"content": content}


def _search_item(item: Item, score: float | None) -> SearchItem:
    return SearchItem(
        namespace=item.namespace,
        key=item.key,
        value=item.value,
        created_at=item.created_at,
        updated_at=item.updated_at,
        score=score,
    )


def _namespace_matches(condition: MatchCondition, namespace: Namespace) -> bool:
    """Whether a namespace starts (``prefix``) or ends (``suffix``) with the path,
    ``"*"`` matching any one label."""
    path = condition.path
    if len(namespace) < len(path):
        return False
    labels = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    return all(p in ("*", label) for p, label in zip(path, labels, strict=True))


COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": operator.eq,
    "$ne": operator.ne,
    "$gt": operator.gt,
    "$gte": operator.ge,
    "$lt": operator.lt,
    "$lte": operator.le,
}


def _matches(value: dict[str, Any], filter: dict[str, Any]) -> bool:
    """Whether a value passes a store filter: per top-level field, equality or the
    operators of ``COMPARISONS`` (``{"$gte": 3}``); values that do not compare fail."""
    for field, wanted in filter.items():
        actual = value.get(field)
        if isinstance(wanted, dict) and wanted and all(k.startswith("$") for k in wanted):
            if not all(_compare(actual, op, operand) for op, operand in wanted.items()):
                return False
        elif actual != wanted:
            return False
    return True


def _compare(actual: Any, op: str, operand: Any) -> bool:
    if op not in COMPARISONS:
        raise ValueError(f"unsupported filter operator: {op}")
    try:
        return bool(COMPARISONS[op](actual, operand))
    except TypeError:  # None < 3, "a" > 1: no match, as in LangGraph's own stores
        return False
