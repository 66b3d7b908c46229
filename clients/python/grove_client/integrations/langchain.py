"""``GroveChatMessageHistory``: a LangChain chat message history kept in Grove.

Every message of a session is one Grove note of the history's scope (a notebook,
``project_id``, or the personal notes), saved in order, one request each. Its provenance
names the session: ``sourceAgent`` is ``agent`` (``langchain``), ``sourceRef`` the
session ID. Its content is the message's role, a colon, a space and its text
(``human: when do we deploy?``), so people and recall read it as text: the role is
``human``, ``ai``, ``system``, or a ``ChatMessage``'s own role. The API lists notes by
``sourceAgent`` but not by ``sourceRef``, so reading a session lists the agent's notes
of the scope and keeps the session's, oldest first. ``clear`` forgets them.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
)

from grove_client.client import Grove, Id
from grove_client.models import Memory

DEFAULT_AGENT = "langchain"
MAX_REF = 500  # sourceRef's limit in the API
FORGET_BATCH = 100  # the most notes one forget takes
ROLE = re.compile(r"([A-Za-z0-9_-]{1,40}):[ ]?(.*)", re.DOTALL)
MESSAGES: dict[str, type[BaseMessage]] = {
    "human": HumanMessage,
    "ai": AIMessage,
    "system": SystemMessage,
}


class GroveChatMessageHistory(BaseChatMessageHistory):
    """The messages of one chat session, as notes of one Grove scope.

    ``grove`` is the client to use (the caller closes it); ``session_id`` names the
    session (at most 500 characters); ``project_id`` the notebook holding the notes
    (``None``: personal notes); ``kind`` their kind; ``agent`` their ``sourceAgent``.
    Two histories with the same scope, agent and session see the same messages.
    """

    def __init__(
        self,
        grove: Grove,
        session_id: str,
        *,
        project_id: Id | None = None,
        kind: str = "fact",
        agent: str = DEFAULT_AGENT,
    ) -> None:
        if not session_id or len(session_id) > MAX_REF:
            raise ValueError(f"session_id must be 1 to {MAX_REF} characters")
        self.grove = grove
        self.session_id = session_id
        self.project_id = None if project_id is None else str(project_id)
        self.kind = kind
        self.agent = agent

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The session's messages, in the order they were saved."""
        return [_message(note.content) for note in self._notes()]

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Save each message as a note, in order (all are checked before any is saved)."""
        contents = [_content(message) for message in messages]
        for content in contents:
            self.grove.remember(
                content,
                self.kind,
                project_id=self.project_id,
                source_agent=self.agent,
                source_ref=self.session_id,
            )

    def clear(self) -> None:
        """Forget the session's notes."""
        ids = [note.id for note in self._notes()]
        for start in range(0, len(ids), FORGET_BATCH):
            self.grove.forget(ids[start : start + FORGET_BATCH])

    async def aget_messages(self) -> list[BaseMessage]:
        """``messages`` in a worker thread (the client is synchronous)."""
        return await asyncio.to_thread(lambda: self.messages)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """``add_messages`` in a worker thread."""
        await asyncio.to_thread(self.add_messages, list(messages))

    async def aclear(self) -> None:
        """``clear`` in a worker thread."""
        await asyncio.to_thread(self.clear)

    def _notes(self) -> list[Memory]:
        """The session's notes, oldest first (the agent's notes filtered by session)."""
        notes = self.grove.list_notes(
            project_id=self.project_id or "personal",
            source_agent=self.agent,
            sort="created_desc",
            limit=100,
        )
        mine = [note for note in notes if _source_ref(note) == self.session_id]
        return mine[::-1]


def _content(message: BaseMessage) -> str:
    """A message as a note's content: ``role: text``."""
    roles = [name for name, cls in MESSAGES.items() if isinstance(message, cls)]
    if isinstance(message, ChatMessage):
        role = message.role
    elif roles:
        role = roles[0]
    else:
        raise ValueError(
            f"a {message.type} message is not kept: the history keeps human, ai, system"
            " and chat messages (their text only)"
        )
    if not ROLE.fullmatch(f"{role}: "):
        raise ValueError(f"role {role!r} is not 1 to 40 letters, digits, '_' or '-'")
    return f"{role}: {message.text}"


def _message(content: str) -> BaseMessage:
    """A note's content as a message; without a ``role:`` prefix, a human message."""
    match = ROLE.fullmatch(content)
    if match is None:
        return HumanMessage(content=content)
    role, text = match.groups()
    if role in MESSAGES:
        return MESSAGES[role](content=text)
    return ChatMessage(role=role, content=text)


def _source_ref(note: Memory) -> str | None:
    return note.provenance.source_ref if note.provenance else None
