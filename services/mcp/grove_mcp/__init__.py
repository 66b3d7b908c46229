"""Grove's MCP service (stateless Streamable HTTP); the stdio bridge is ``clients/mcp-bridge``."""
