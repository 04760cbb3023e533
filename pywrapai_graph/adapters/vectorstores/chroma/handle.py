"""A Chroma collection handle that follows its collection's name across re-creation.

chromadb's ``Collection`` addresses its collection by id. ``clear()`` deletes the collection
and creates it again (a cleared store may take another embedding dimension), so after
another process's ``clear()`` every handle the other processes hold names a collection that
no longer exists, and each of their calls fails with ``NotFoundError`` forever. A
:class:`FollowingHandle` answers that by fetching the collection of the same name again
(creating it if the clearing process has not yet) and repeating the call once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["FollowingHandle"]


class FollowingHandle:
    """Calls go to the current collection of a name; a missing one is fetched again.

    Args:
        fetch: gets (or creates) the collection by name.
        not_found: the SDK's exception for a collection that no longer exists.
        refetched: called after a re-fetch (the store forgets what it knew of the old one).
    """

    def __init__(
        self,
        fetch: Callable[[], Any],
        not_found: type[Exception],
        refetched: Callable[[], object] = lambda: None,
    ) -> None:
        self._fetch = fetch
        self._not_found = not_found
        self._refetched = refetched
        self.current = fetch()

    def refetch(self) -> None:
        """Fetch the collection again (after this process re-created it, or another did)."""
        self.current = self._fetch()
        self._refetched()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.current, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return getattr(self.current, name)(*args, **kwargs)
            except self._not_found:
                self.refetch()
                return getattr(self.current, name)(*args, **kwargs)

        return call
