"""The tool registry: every tool is complete, and MCP, REST and the bridge agree on it."""

from __future__ import annotations

import json
import re

import mcp_types as types
import pytest
from pydantic import ValidationError

from grove_contracts.project_memory import PROJECT_MEMORY_TOOLS
from grove_contracts.tools import INSTRUCTIONS, NOTE_WRITING, TOOLS, TOOLS_BY_NAME, Tool
from grove_mcp.results import failure, success, tool_list
from tests.support.schemas import undescribed

ANNOTATION_KEYS = {"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}


def test_names_are_unique_and_snake_case() -> None:
    names = [tool.name for tool in TOOLS]
    assert len(names) == len(set(names))
    assert set(TOOLS_BY_NAME) == set(names)
    for name in names:
        assert re.fullmatch(r"[a-z][a-z_]*[a-z]", name), name


@pytest.mark.parametrize("tool", TOOLS, ids=lambda tool: tool.name)
def test_every_tool_is_complete(tool: Tool) -> None:
    assert tool.title.strip()
    assert tool.description.strip()
    assert tool.description.strip() != tool.title.strip()

    annotations = tool.annotations()
    assert set(annotations) == ANNOTATION_KEYS
    assert annotations["title"] == tool.title
    assert annotations["openWorldHint"] is False
    assert all(isinstance(annotations[k], bool) for k in ANNOTATION_KEYS - {"title"})
    if tool.read_only:
        assert not tool.destructive

    schema = tool.input_schema()
    assert schema["type"] == "object"
    # Unknown arguments are errors, and the schema says so.
    assert schema.get("additionalProperties") is False, tool.name
    assert tool.output_schema()["type"] == "object"

    described = tool.describe()
    assert list(described) == [
        "name",
        "title",
        "description",
        "inputSchema",
        "outputSchema",
        "annotations",
    ]
    assert described["inputSchema"] == schema


@pytest.mark.parametrize("tool", TOOLS + PROJECT_MEMORY_TOOLS, ids=lambda tool: tool.name)
def test_every_input_property_is_described(tool: Tool) -> None:
    """A model fills in an argument from its description: every property of every tool
    (the project key's ``project_memory_*`` tools too) has one, in nested models
    (``$defs``) and list items too."""
    schema = tool.input_schema()
    assert schema["properties"]
    assert undescribed(schema) == [], tool.name


def test_the_schema_check_finds_a_property_without_a_description() -> None:
    nested = {
        "properties": {"a": {"description": "said", "type": "string"}},
        "$defs": {"Item": {"properties": {"b": {"type": "string"}, "c": {"description": " "}}}},
        "anyOf": [{"items": {"properties": {"d": {"type": "integer"}}}}],
    }
    assert undescribed(nested) == [
        "/$defs/Item/properties/b",
        "/$defs/Item/properties/c",
        "/anyOf/0/items/properties/d",
    ]


def test_note_writing_guidance_is_in_the_instructions_and_remember() -> None:
    """Clients that read only the server's instructions, and those that read only the
    tool that writes notes, get the same advice on writing one."""
    for advice in ("one fact a note", "name its subject", "dates absolutely", "kind"):
        assert advice in NOTE_WRITING
    assert NOTE_WRITING in INSTRUCTIONS
    assert NOTE_WRITING in TOOLS_BY_NAME["remember"].description


@pytest.mark.parametrize("tool", [t for t in TOOLS if not t.read_only], ids=lambda t: t.name)
def test_mutating_tools_take_an_operation_id(tool: Tool) -> None:
    assert "operationId" in tool.input_schema()["properties"], tool.name
    assert "operationId" in tool.description


def test_every_tool_has_a_handler() -> None:
    from grove_memory.notes.tools import HANDLERS

    assert set(HANDLERS) == set(TOOLS_BY_NAME)


def test_mcp_listing_is_the_registry() -> None:
    listed = tool_list().tools
    assert [t.name for t in listed] == [t.name for t in TOOLS]
    for published, tool in zip(listed, TOOLS, strict=True):
        # Built here from the registry's own fields, not by mcp_tool: the listing is
        # exactly these, with nothing added.
        assert published == types.Tool(
            name=tool.name,
            title=tool.title,
            description=tool.description,
            input_schema=tool.input_model.model_json_schema(),
            output_schema=tool.output_model.model_json_schema(),
            annotations=types.ToolAnnotations(
                title=tool.title,
                read_only_hint=tool.read_only,
                destructive_hint=tool.destructive,
                idempotent_hint=tool.idempotent,
                open_world_hint=False,
            ),
        )
        dumped = published.model_dump(by_alias=True, exclude_none=True, mode="json")
        assert {k: dumped[k] for k in tool.describe()} == tool.describe()


def test_results_carry_json_text() -> None:
    good = success({"id": "x", "n": 1})
    assert good.is_error is not True
    assert good.structured_content == {"id": "x", "n": 1}
    bad = failure("not_found", "note not found", "req-1")
    assert bad.is_error is True
    assert '"not_found"' in bad.content[0].text  # type: ignore[union-attr]


def test_tool_errors_do_not_break_the_output_schema() -> None:
    """Structured content, when a result has any, must match the tool's outputSchema.

    The spec says so without an exception for errors, and the MCP Inspector (2.12)
    enforces it on ``isError`` results too; the error JSON always travels as text.
    """
    bad = failure("not_found", "note not found", "req-1", [{"field": "id"}], {"retry": "no"})
    assert json.loads(bad.content[0].text)["error"]["code"] == "not_found"  # type: ignore[union-attr]
    # As a client sees the result: no structuredContent at all, or one each tool accepts.
    structured = bad.model_dump(by_alias=True, exclude_none=True, mode="json").get(
        "structuredContent"
    )
    broken = []
    for tool in TOOLS:
        try:
            if structured is not None:
                tool.output_model.model_validate(structured)
        except ValidationError:
            broken.append(tool.name)
    assert broken == [], f"isError structuredContent breaks the outputSchema of {broken}"
