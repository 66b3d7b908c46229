"""``GroveRetriever``: a LlamaIndex retriever over Grove's recall (or search).

A query becomes ``POST /v1/recall`` (or ``/v1/memories/search`` with
``mode="search"``); each note becomes a ``NodeWithScore`` of a ``TextNode`` whose
``id_`` is the note's ID, whose text is its content and whose metadata carries its
kind, notebook, version, provenance and update time, scored with Grove's fused score.
Grove does the retrieval, so no embedding model or LLM is involved.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from grove_client.client import Grove, Id
from grove_client.models import Memory


class GroveRetriever(BaseRetriever):
    """Retrieve Grove notes for a LlamaIndex query engine, agent or workflow.

    ``grove`` is the client (the caller closes it). ``mode="recall"`` (the default)
    answers the notes recall packs into ``max_chars`` from ``project_id``'s notebook plus
    personal notes (``include_personal``); ``mode="search"`` answers one page of hybrid
    search in ``project_id`` (or everything the key reads). ``limit`` bounds both.
    """

    def __init__(
        self,
        grove: Grove,
        *,
        mode: Literal["recall", "search"] = "recall",
        project_id: Id | None = None,
        include_personal: bool | None = None,
        limit: int | None = None,
        max_chars: int | None = None,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self.grove = grove
        self.mode = mode
        self.project_id = project_id
        self.include_personal = include_personal
        self.limit = limit
        self.max_chars = max_chars

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = query_bundle.query_str
        if self.mode == "search":
            page = self.grove.search(query, project_id=self.project_id, limit=self.limit)
            return [_node(hit.memory, hit.score) for hit in page.items]
        recalled = self.grove.recall(
            query,
            project_id=self.project_id,
            include_personal=self.include_personal,
            limit=self.limit,
            max_chars=self.max_chars,
        )
        return [_node(item.memory, item.score) for item in recalled.items]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """``_retrieve`` in a worker thread (the client is synchronous)."""
        return await asyncio.to_thread(self._retrieve, query_bundle)


def _node(note: Memory, score: float | None) -> NodeWithScore:
    provenance = note.provenance
    metadata = {
        "kind": note.kind,
        "project_id": str(note.project_id) if note.project_id else None,
        "version": note.version,
        "source_agent": provenance.source_agent if provenance else None,
        "source_ref": provenance.source_ref if provenance else None,
        "updated_at": note.updated_at.isoformat(),
    }
    given = {name: value for name, value in metadata.items() if value is not None}
    return NodeWithScore(
        node=TextNode(id_=str(note.id), text=note.content, metadata=given), score=score
    )
