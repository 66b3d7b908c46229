"""``/v1/tools``: the agent tool registry, and each tool run over REST."""

from __future__ import annotations

import falcon
from pydantic import BaseModel, ConfigDict

from grove_api.body import read_json
from grove_api.resources import Resource, ok
from grove_api.routing import Operation, Route
from grove_contracts.tools import INSTRUCTIONS, OWNER_TOOLS, TOOLS, ToolList
from grove_memory.notes import tools


class Arguments(BaseModel):
    """A tool's arguments: any JSON object, validated by the tool's own input model."""

    model_config = ConfigDict(extra="allow")


class Tools(Resource):
    """``GET /v1/tools``: the registry as published to agents, and the instructions
    MCP servers send (the stdio bridge takes both from here)."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        ok(resp, {"tools": [tool.describe() for tool in TOOLS], "instructions": INSTRUCTIONS})


class ToolCall(Resource):
    """``POST /v1/tools/{tool}``: run one registry tool; the body is its arguments."""

    def on_post(self, req: falcon.Request, resp: falcon.Response, tool: str) -> None:
        arguments = read_json(req, Arguments, self.max_body)
        ok(resp, tools.call(self.store, req.context.principal, tool, arguments.model_dump()))


#: The agent tools, then the owner session's operations run the same way.
CALLABLE = TOOLS + OWNER_TOOLS
TOOL_NAMES = tuple(tool.name for tool in CALLABLE)


ROUTES: tuple[Route, ...] = (
    Route(
        Tools,
        (Operation("GET", "/v1/tools", "The agent tool registry", ToolList),),
    ),
    Route(
        ToolCall,
        (
            Operation(
                "POST",
                "/v1/tools/{tool}",
                "Run one registry tool; the body is its arguments",
                tuple(tool.output_model for tool in CALLABLE),
                body=tuple(tool.input_model for tool in CALLABLE),
                errors=(404, 409, 410),
                path_values={"tool": TOOL_NAMES},
                description="The body is the tool's arguments, validated by its input model;"
                " `data` is its output model (both as `GET /v1/tools` lists them). The owner"
                " session's operations run here too, by name (`preview_notebook`,"
                " `archive_notebook`, `restore_notebook`, `delete_notebook`,"
                " `list_archived_notebooks`: the notebook routes' operations, not listed by"
                " `GET /v1/tools`); keys and agent tokens get 403 `owner_session_required`.",
            ),
        ),
    ),
)
