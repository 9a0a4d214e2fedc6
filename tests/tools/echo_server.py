"""A stdio MCP server with one tool, ``echo`` (the tests declare it in AgentConfig.mcp_servers)."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("echo")


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return f"echo: {text}"


if __name__ == "__main__":
    server.run()
