"""A small MCP server (the ``mcp`` SDK's MCPServer) that the README's MCP example starts.

    python examples/mcp_weather_server.py      # speaks MCP over stdin/stdout

Any MCP server works the same way: one written in another language, started with ``npx``
or ``uvx``, or one behind a streamable-HTTP URL.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

app = MCPServer("weather")

FORECASTS = {"lyon": "16°C, cloudy", "oslo": "-3°C, snow", "lisbon": "22°C, sunny"}


@app.tool()
def get_forecast(city: str, days: int = 1) -> str:
    """Today's forecast for a city (the same for the next ``days`` days)."""
    forecast = FORECASTS.get(city.lower(), "15°C, clear")
    return f"{city}: {forecast}" + (f" for {days} days" if days > 1 else "")


if __name__ == "__main__":
    app.run()
