"""Tools: named callables an agent can invoke, and ToolMemory can query."""

from agentkit.tools._function import FunctionTool
from agentkit.tools._protocol import Tool

__all__ = ["FunctionTool", "Tool"]
