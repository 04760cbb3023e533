"""The shipped test kit: fakes (not mocks) and the contract suites adapters must pass.

* ``ScriptedChatModel`` / ``ScriptedReply``: a chat model that answers from a script.
* ``testing.wire``: local HTTP servers speaking each provider's wire format, so an SDK
  adapter is tested through its real SDK and real HTTP.
* ``testing.contracts``: ``VectorStoreContract`` and ``ChatModelContract``, the suites every
  built-in adapter passes and a user's own adapter subclasses.

Never imports ``composition`` (import-linter); it tests ports, not wiring.
"""

from pywrapai_graph.testing.scripted import ScriptedChatModel, ScriptedReply, ScriptExhaustedError

__all__ = ["ScriptExhaustedError", "ScriptedChatModel", "ScriptedReply"]
