"""An MCP server whose tool fails with text holding a secret (``tests/secret_forms.py``),
on the ``mcp`` SDK's server side, over stdio: the secret comes from the server, never from
the call's arguments.

    python tests/integration/mcp_leaky_server.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.secret_forms import FORMS

app = MCPServer("pywrapai-leaky")


@app.tool()
def deploy(form: int) -> str:
    """Fail the way a misconfigured deployment tool does."""
    raise ToolError(f"deploy failed: {FORMS[form][0]}")


if __name__ == "__main__":
    app.run()
