"""The contract suites every adapter must pass, shipped so users test their own adapters too.

* :class:`VectorStoreContract` (``vector_store``): subclass it with ``new_store``. It is
  made of one part per capability: the core (add, search, filters, persistence) and
  ``deletion``, ``documents`` (whole-document writes, manifests), ``async_twins``,
  ``lexical_search``, ``lexical_quality``, ``hostile_inputs`` and ``scoped_views``;
  ``store_data`` holds the chunks and documents they write.
* :class:`ConversationStoreContract` (``conversation_store``): subclass it with
  ``new_store`` (and ``reopen``, a second store over the same data).
* :class:`ChatModelContract` (``chat_model``): subclass it with ``wire_server`` and
  ``chat_model``; the wire servers in :mod:`pywrapai_graph.testing.wire` speak the built-in
  providers' formats.

All need pytest (the ``dev`` extra).
"""

from pywrapai_graph.testing.contracts.chat_model import ChatModelContract
from pywrapai_graph.testing.contracts.conversation_store import ConversationStoreContract
from pywrapai_graph.testing.contracts.vector_store import VectorStoreContract

__all__ = ["ChatModelContract", "ConversationStoreContract", "VectorStoreContract"]
