"""grove-client's framework adapters against the real api: LangGraph's ``GroveStore``,
LangChain's ``GroveChatMessageHistory``, and LlamaIndex's ``GroveRetriever`` and
``GroveMemoryBlock``, each checked through the framework and over REST.

The frameworks are the client's optional extras (``make install`` installs them); without
one its tests skip, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import uuid
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TypedDict

import pytest

from grove_client import Grove
from tests.support.tenants import Tenant

if TYPE_CHECKING:
    from grove_client.integrations.langchain import GroveChatMessageHistory
    from grove_client.integrations.langgraph import GroveStore


def require_extra(module: str, extra: str) -> None:
    """Skip without the framework of an extra; fail under CI, which must install it."""
    try:
        importlib.import_module(module)
    except ImportError as ex:
        why = f"{ex.name} is not installed (pip install -e 'clients/python[{extra}]')"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{why}; CI=true, and CI must install it (make install)", pytrace=False)
        pytest.skip(f"{why} (under CI=true this fails)")


@pytest.fixture
def grove(tenant: Tenant) -> Iterator[Grove]:
    assert tenant.client.key is not None
    with Grove(tenant.client.base, tenant.client.key, max_retries=0) as client:
        yield client


@pytest.fixture
def store(grove: Grove) -> GroveStore:
    require_extra("langgraph.store.base", "langgraph")
    from grove_client.integrations.langgraph import GroveStore

    return GroveStore(grove)


@pytest.fixture
def history(grove: Grove) -> GroveChatMessageHistory:
    require_extra("langchain_core.chat_history", "langchain")
    from grove_client.integrations.langchain import GroveChatMessageHistory

    return GroveChatMessageHistory(grove, "session-1")


# LangGraph


def test_store_item_round_trips_as_one_note(store: GroveStore, grove: Grove) -> None:
    namespace = ("users", "alice")
    store.put(namespace, "food", {"likes": "pizza", "spicy": True})
    item = store.get(namespace, "food")
    assert item is not None
    assert (item.namespace, item.key, item.value) == (
        namespace,
        "food",
        {"likes": "pizza", "spicy": True},
    )

    [note] = grove.list_notes()
    assert json.loads(note.content) == {"likes": "pizza", "spicy": True}
    assert note.project_id is None and note.kind == "fact"
    assert note.provenance is not None
    assert note.provenance.source_ref == '["users","alice","food"]'
    assert note.provenance.source_agent == "langgraph:users.alice"
    assert item.created_at == note.created_at

    store.put(namespace, "food", {"likes": "ramen"})
    [corrected] = grove.list_notes()
    assert (corrected.id, corrected.version) == (note.id, 2)
    item = store.get(namespace, "food")
    assert item is not None and item.value == {"likes": "ramen"}
    assert store.get(namespace, "drink") is None
    assert store.get(("users", "bob"), "food") is None

    store.delete(namespace, "food")
    assert store.get(namespace, "food") is None
    assert list(grove.list_notes()) == []


def test_store_reads_a_note_edited_in_grove_as_its_text(store: GroveStore, grove: Grove) -> None:
    store.put(("users", "alice"), "food", {"likes": "pizza"})
    [note] = grove.list_notes()
    grove.update(note.id, content="alice likes pizza, not pasta")
    item = store.get(("users", "alice"), "food")
    assert item is not None and item.value == {"content": "alice likes pizza, not pasta"}


def test_store_search_ranks_by_query_within_the_namespace_prefix(
    store: GroveStore, grove: Grove
) -> None:
    store.put(("users", "alice"), "food", {"text": "alice loves sourdough pizza", "stars": 5})
    store.put(("users", "alice"), "music", {"text": "alice plays jazz piano", "stars": 3})
    store.put(("users", "bob"), "food", {"text": "bob loves pizza margherita", "stars": 2})
    grove.remember("pizza on fridays, saved outside the store")  # not an item: left out

    hits = store.search(("users", "alice"), query="pizza")
    assert [(h.namespace, h.key) for h in hits] == [(("users", "alice"), "food")]
    assert hits[0].score is not None and hits[0].score > 0
    both = store.search(("users",), query="pizza")
    assert sorted(h.namespace[1] for h in both) == ["alice", "bob"]
    assert [h.key for h in store.search(("users",), query="pizza", limit=1, offset=1)] == ["food"]
    assert len(store.search(("users",), query="pizza", limit=1)) == 1
    filtered = store.search(("users",), query="pizza", filter={"stars": {"$gte": 4}})
    assert [h.namespace for h in filtered] == [("users", "alice")]

    listed = store.search(("users", "alice"))
    assert sorted(h.key for h in listed) == ["food", "music"]
    assert all(h.score is None for h in listed)
    assert [h.key for h in store.search((), filter={"stars": 3})] == ["music"]

    assert store.list_namespaces() == [("users", "alice"), ("users", "bob")]
    assert store.list_namespaces(suffix=("bob",)) == [("users", "bob")]
    assert store.list_namespaces(prefix=("users", "*"), max_depth=1) == [("users",)]


def test_store_keeps_to_its_notebook(store: GroveStore, grove: Grove) -> None:
    from grove_client.integrations.langgraph import GroveStore

    notebook = grove.create_notebook("agent memory")
    in_notebook = GroveStore(grove, project_id=notebook.id, kind="preference")
    in_notebook.put(("prefs",), "tea", {"text": "green tea, no sugar"})
    store.put(("prefs",), "tea", {"text": "black tea"})

    item = in_notebook.get(("prefs",), "tea")
    assert item is not None and item.value == {"text": "green tea, no sugar"}
    assert [h.value["text"] for h in in_notebook.search(("prefs",), query="tea")] == [
        "green tea, no sugar"
    ]
    [saved] = grove.list_notes(project_id=notebook.id)
    assert saved.kind == "preference"
    in_notebook.delete(("prefs",), "tea")
    item = store.get(("prefs",), "tea")
    assert item is not None and item.value == {"text": "black tea"}


def test_store_async_methods_and_long_namespaces(store: GroveStore) -> None:
    namespace = ("memories", "x" * 120)  # over sourceAgent's 100 characters: a digest

    async def run() -> tuple[Any, Any]:
        await store.aput(namespace, "k", {"text": "async saves work"})
        got = await store.aget(namespace, "k")
        hits = await store.asearch(("memories",), query="async")
        return got, hits

    got, hits = asyncio.run(run())
    assert got is not None and got.value == {"text": "async saves work"}
    assert [(h.namespace, h.key) for h in hits] == [(namespace, "k")]
    assert len(store.agent_of(namespace)) <= 100
    with pytest.raises(ValueError, match="over 500 characters"):
        store.put(("memories",), "k" * 500, {"text": "too long a key"})
    with pytest.raises(NotImplementedError, match="TTL is not supported"):
        store.put(("memories",), "k", {"text": "kept a day"}, ttl=1440)


class Conversation(TypedDict):
    user: str
    fact: str
    recalled: list[str]


def test_a_langgraph_graph_remembers_and_recalls_through_the_store(
    store: GroveStore, grove: Grove
) -> None:
    from langgraph.graph import END, START, StateGraph
    from langgraph.store.base import BaseStore

    def remember(state: Conversation, *, store: BaseStore) -> dict[str, Any]:
        store.put(("users", state["user"]), str(uuid.uuid4()), {"text": state["fact"]})
        return {}

    def recall(state: Conversation, *, store: BaseStore) -> dict[str, Any]:
        hits = store.search(("users", state["user"]), query="deploy")
        return {"recalled": [h.value["text"] for h in hits]}

    builder = StateGraph(Conversation)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    graph = builder.compile(store=store)

    state = graph.invoke({"user": "alice", "fact": "we deploy on tuesdays", "recalled": []})
    assert state["recalled"] == ["we deploy on tuesdays"]
    [note] = grove.list_notes()
    assert json.loads(note.content) == {"text": "we deploy on tuesdays"}


# LangChain


def test_history_keeps_a_session_in_order_as_notes(
    history: GroveChatMessageHistory, grove: Grove
) -> None:
    from langchain_core.messages import AIMessage, ChatMessage, HumanMessage, SystemMessage

    from grove_client.integrations.langchain import GroveChatMessageHistory

    sent = [
        SystemMessage(content="you are terse"),
        HumanMessage(content="when do we deploy?"),
        AIMessage(content="on tuesdays:\nafter the standup"),
        ChatMessage(role="critic", content="cite the runbook"),
    ]
    history.add_messages(sent[:2])
    history.add_messages(sent[2:])
    other = GroveChatMessageHistory(grove, "session-2")
    other.add_user_message("a message of another session")
    grove.remember("human: saved outside the history")  # no provenance: not a message

    got = history.messages
    assert [(type(m), m.text) for m in got] == [(type(m), m.text) for m in sent]
    assert isinstance(got[3], ChatMessage) and got[3].role == "critic"
    assert [m.text for m in other.messages] == ["a message of another session"]

    notes = [n for n in grove.list_notes() if n.provenance and n.provenance.source_ref]
    by_content = {n.content: n for n in notes}
    note = by_content["human: when do we deploy?"]
    assert note.kind == "fact" and note.project_id is None
    assert note.provenance is not None
    assert (note.provenance.source_agent, note.provenance.source_ref) == (
        "langchain",
        "session-1",
    )
    assert "ai: on tuesdays:\nafter the standup" in by_content

    grove.update(note.id, content="where do we deploy?")  # edited by hand: no role prefix
    assert history.messages[1] == HumanMessage(content="where do we deploy?")

    history.clear()
    assert history.messages == []
    assert [m.text for m in other.messages] == ["a message of another session"]
    left = sorted(n.content for n in grove.list_notes())
    assert left == ["human: a message of another session", "human: saved outside the history"]


def test_history_async_notebook_and_refusals(
    history: GroveChatMessageHistory, grove: Grove
) -> None:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from grove_client.integrations.langchain import GroveChatMessageHistory

    notebook = grove.create_notebook("chats")
    in_notebook = GroveChatMessageHistory(
        grove, "session-1", project_id=notebook.id, kind="decision", agent="support-bot"
    )

    async def run() -> list[Any]:
        await in_notebook.aadd_messages([HumanMessage(content="hi"), AIMessage(content="hello")])
        got = await in_notebook.aget_messages()
        await in_notebook.aclear()
        return got

    assert [m.text for m in asyncio.run(run())] == ["hi", "hello"]
    assert list(grove.list_notes(project_id=notebook.id)) == []
    assert history.messages == []  # same session, another scope and agent

    in_notebook.add_user_message("kept")
    [note] = grove.list_notes(project_id=notebook.id)
    assert note.kind == "decision"
    assert note.provenance is not None and note.provenance.source_agent == "support-bot"

    tool = ToolMessage(content="42", tool_call_id="call-1")
    with pytest.raises(ValueError, match="a tool message is not kept"):
        history.add_messages([HumanMessage(content="first"), tool])
    assert history.messages == []  # checked before anything is saved
    with pytest.raises(ValueError, match="session_id must be 1 to 500 characters"):
        GroveChatMessageHistory(grove, "")


def test_a_runnable_with_message_history_keeps_its_turns_in_grove(
    history: GroveChatMessageHistory, grove: Grove
) -> None:
    from langchain_core._api.deprecation import LangChainDeprecationWarning
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.runnables.history import RunnableWithMessageHistory

    model = FakeListChatModel(responses=["on tuesdays", "after the standup"])
    with warnings.catch_warnings():  # deprecated in langchain-core 1.x, still supported
        warnings.simplefilter("ignore", LangChainDeprecationWarning)
        chat = RunnableWithMessageHistory(model, lambda session_id: history)
    config: Any = {"configurable": {"session_id": "session-1"}}
    assert chat.invoke("when do we deploy?", config=config).content == "on tuesdays"
    assert chat.invoke("at what time?", config=config).content == "after the standup"

    assert history.messages == [
        HumanMessage(content="when do we deploy?"),
        AIMessage(content="on tuesdays"),
        HumanMessage(content="at what time?"),
        AIMessage(content="after the standup"),
    ]
    assert len(list(grove.list_notes(source_agent="langchain"))) == 4


# LlamaIndex


def test_retriever_answers_notes_saved_over_rest(grove: Grove) -> None:
    require_extra("llama_index.core", "llamaindex")
    from llama_index.core.schema import TextNode

    from grove_client.integrations.llamaindex import GroveRetriever

    notebook = grove.create_notebook("ops")
    note = grove.remember(
        "we deploy on tuesdays", "decision", project_id=notebook.id, source_agent="agent-1"
    )
    grove.remember("the cat is called miso")

    [hit] = GroveRetriever(grove, project_id=notebook.id).retrieve("when do we deploy?")
    assert isinstance(hit.node, TextNode)
    assert (hit.node.node_id, hit.node.get_content()) == (str(note.id), "we deploy on tuesdays")
    assert hit.score is not None and hit.score > 0
    assert hit.node.metadata["kind"] == "decision"
    assert hit.node.metadata["project_id"] == str(notebook.id)
    assert hit.node.metadata["source_agent"] == "agent-1"

    searched = GroveRetriever(grove, mode="search", limit=5).retrieve("miso")
    assert [h.node.get_content() for h in searched] == ["the cat is called miso"]
    personal = asyncio.run(GroveRetriever(grove).aretrieve("miso"))
    assert [h.node.get_content() for h in personal] == ["the cat is called miso"]
    assert GroveRetriever(grove).retrieve("deploy tuesdays") == []  # not in personal notes


def test_memory_block_saves_flushed_messages_and_recalls_them(grove: Grove) -> None:
    require_extra("llama_index.core.memory", "llamaindex")
    from llama_index.core.base.llms.types import ChatMessage
    from llama_index.core.memory import Memory

    from grove_client.integrations.llamaindex import GroveMemoryBlock

    notebook = grove.create_notebook("assistant")
    block = GroveMemoryBlock(grove=grove, project_id=notebook.id)
    memory = Memory.from_defaults(
        session_id="chat-1",
        token_limit=40,
        chat_history_token_ratio=0.5,
        token_flush_size=10,
        memory_blocks=[block],
        tokenizer_fn=lambda text: text.split(),
    )
    turns = [
        ("user", "we deploy the billing service on tuesdays"),
        ("assistant", "noted, billing deploys happen on tuesdays"),
        ("system", "a system message is not saved"),
        ("user", "the cat is called miso"),
        ("assistant", "miso, got it"),
    ]
    memory.put_messages([ChatMessage(role=role, content=text) for role, text in turns])

    # the flushed messages, oldest first: user and assistant ones saved, in order
    saved = list(grove.list_notes(project_id=notebook.id, sort="updated_asc"))
    kept = [f"{role}: {text}" for role, text in turns if role != "system"]
    assert len(saved) >= 2
    assert [n.content for n in saved] == kept[: len(saved)]
    assert saved[0].provenance is not None
    assert (saved[0].provenance.source_agent, saved[0].provenance.source_ref) == (
        "llamaindex",
        "chat-1",
    )

    recalled = asyncio.run(
        block.aget([ChatMessage(role="user", content="when does billing deploy?")])
    )
    assert "user: we deploy the billing service on tuesdays" in recalled.split("\n\n")
    assert asyncio.run(block.aget([])) == ""

    messages = memory.get(input="when does billing deploy?")
    context = messages[0]
    assert context.role == "system"
    assert "we deploy the billing service on tuesdays" in (context.content or "")
