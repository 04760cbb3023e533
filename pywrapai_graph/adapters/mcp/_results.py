"""An MCP tool result as the text the model receives."""

from __future__ import annotations

import json

from pywrapai_graph.errors import MissingExtraError

try:
    import mcp_types
except ImportError as exc:  # this module loads only when an MCP server is configured
    raise MissingExtraError("mcp", "mcp") from exc

__all__ = ["result_text"]


def _block_text(block: mcp_types.ContentBlock) -> str:
    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
        size = len(block.data) * 3 // 4  # base64
        return f"[{block.type}: {block.mime_type}, {size} bytes]"
    if isinstance(block, mcp_types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, mcp_types.TextResourceContents):
            return resource.text
        return f"[resource {resource.uri}: {resource.mime_type or 'binary'}]"
    return f"[resource link {block.uri}]"


def result_text(result: mcp_types.CallToolResult) -> str:
    """The text blocks of ``result`` joined by newlines (other blocks described in one
    line each); its structured content as JSON when it has no blocks."""
    if not result.content and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return "\n".join(_block_text(block) for block in result.content)
