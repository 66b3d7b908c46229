"""``GroveRetriever``: a LlamaIndex retriever over Grove's recall (or search).

A query becomes ``POST /v1/recall`` (or ``/v1/memories/search`` with
``mode="search"``); each note becomes a ``NodeWithScore`` of a ``TextNode`` whose
``id_`` is the note's ID, whose text is its content and whose metadata carries its
kind, notebook, version, provenance and update time, scored with Grove's fused score.
Grove does the retrieval, so no embedding model or LLM is involved.

``GroveMemoryBlock``: a block of LlamaIndex's ``Memory``, its long-term part in Grove.
The messages that ``Memory`` flushes out of its short-term queue are saved as notes (one
per message, ``role: text``, ``sourceAgent`` the block's ``agent``, ``sourceRef`` the
memory's session ID); each ``Memory.get`` recalls the notes relevant to the latest
messages into the block's text.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import Field
from llama_index.core.memory import BaseMemoryBlock
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


MAX_QUERY = 1000  # recall's longest query


class GroveMemoryBlock(BaseMemoryBlock[str]):
    """Long-term memory for LlamaIndex's ``Memory``: saves flushed messages to Grove and
    recalls the notes relevant to the conversation.

    ``grove`` is the client (the caller closes it). ``_aput`` saves each flushed message
    whose role is in ``roles`` and that has text as a note of ``kind`` in ``project_id``
    (``None``: personal notes), in order. ``_aget`` recalls with the text of the last
    ``context_window`` messages (its last 1,000 characters) as the query, from
    ``project_id`` plus personal notes (``include_personal``), at most ``limit`` notes
    packed into ``max_chars``, and answers their contents, most relevant first, one per
    paragraph (``""`` when none is relevant).
    """

    name: str = Field(default="GroveMemory", description="The name of the memory block.")
    grove: Grove = Field(description="The Grove client (the caller closes it).")
    project_id: Id | None = Field(default=None, description="The notebook of the notes.")
    include_personal: bool | None = Field(default=None, description="Recall personal notes.")
    limit: int | None = Field(default=None, description="At most this many notes.")
    max_chars: int | None = Field(default=None, description="Recall's character budget.")
    context_window: int = Field(default=5, description="The messages a recall reads.")
    kind: str = Field(default="fact", description="The kind of the notes saved.")
    agent: str = Field(default="llamaindex", description="The notes' sourceAgent.")
    roles: tuple[str, ...] = Field(
        default=("user", "assistant"), description="The roles of the messages saved."
    )

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        query = " ".join(m.content or "" for m in (messages or [])[-self.context_window :])
        query = query.strip()[-MAX_QUERY:]
        if not query:
            return ""
        recalled = await asyncio.to_thread(
            self.grove.recall,
            query,
            project_id=self.project_id,
            include_personal=self.include_personal,
            limit=self.limit,
            max_chars=self.max_chars,
        )
        return "\n\n".join(item.memory.content for item in recalled.items)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        await asyncio.to_thread(self._save, list(messages))

    def _save(self, messages: list[ChatMessage]) -> None:
        for message in messages:
            role = str(message.role.value)
            text = (message.content or "").strip()
            if role not in self.roles or not text:
                continue
            session = message.additional_kwargs.get("session_id")
            self.grove.remember(
                f"{role}: {text}",
                self.kind,
                project_id=self.project_id,
                source_agent=self.agent,
                source_ref=None if session is None else str(session),
            )


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
