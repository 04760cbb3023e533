"""The shipped test kit: fakes (not mocks) and the contract suites adapters must pass.

* ``ScriptedChatModel`` / ``ScriptedReply``: a chat model that answers from a script.
* ``testing.wire``: local HTTP servers speaking each provider's wire format, so an SDK
  adapter is tested through its real SDK and real HTTP.
* ``testing.contracts``: ``VectorStoreContract`` and ``ChatModelContract``, the suites every
  built-in adapter passes and a user's own adapter subclasses.
* ``testing.servers`` and ``testing.pytest_plugin``: real PostgreSQL + pgvector, Chroma and
  Qdrant servers for integration tests, as opt-in pytest fixtures.

Never imports ``composition`` (import-linter); it tests ports, not wiring.
"""

from pywrapai_graph.testing.scripted import ScriptedChatModel, ScriptedReply, ScriptExhaustedError

__all__ = ["ScriptExhaustedError", "ScriptedChatModel", "ScriptedReply"]
