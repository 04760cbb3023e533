"""The shipped test kit: fakes (not mocks) and the contract suites adapters must pass."""

from pywrapai_graph.testing.scripted import ScriptedChatModel, ScriptedReply, ScriptExhaustedError

__all__ = ["ScriptExhaustedError", "ScriptedChatModel", "ScriptedReply"]
