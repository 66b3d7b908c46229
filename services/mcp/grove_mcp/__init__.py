"""Grove's MCP service (stateless Streamable HTTP) and the API-only stdio bridge."""
