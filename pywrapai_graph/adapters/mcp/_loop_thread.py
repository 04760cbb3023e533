"""An event loop in a daemon thread of its own, which owns long-lived async connections.

An MCP session is a task group that must be entered and left by one task of one loop, and
lives as long as the connection (for stdio, the server's process). Callers come from any
thread and any loop (``asyncio.run`` per sync call, a web server's loop...), so the session
cannot live in theirs: it lives here, and callers submit coroutines to this loop. An async
caller awaits the result without blocking its own loop; cancelling its await cancels the
submitted task here.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["LoopThread"]

T = TypeVar("T")
_log = logging.getLogger(__name__)


class LoopThread:
    """A running event loop in a daemon thread, stopped by :meth:`stop`.

    Args:
        name: the thread's name.
    """

    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        loop = self._loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            try:
                self._finish(loop)
            finally:
                loop.close()

    @staticmethod
    def _finish(loop: asyncio.AbstractEventLoop) -> None:
        """Cancel what is still running (it unwinds its connections) and close the loop's
        generators and executor, as ``asyncio.run`` does on its way out."""
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())

    @property
    def thread(self) -> threading.Thread:
        """The thread running the loop."""
        return self._thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coro`` on this loop; cancelling the returned future cancels it.

        Raises:
            RuntimeError: the loop has stopped (``coro`` is closed, not run).
        """
        try:
            return asyncio.run_coroutine_threadsafe(coro, self._loop)
        except RuntimeError:
            coro.close()
            raise

    def in_loop(self) -> bool:
        """True when called from this loop's own thread."""
        return threading.current_thread() is self._thread

    def stop(self, timeout_s: float) -> bool:
        """Stop the loop (tasks still running are cancelled and unwound) and wait for its
        thread; True when it ended within ``timeout_s``."""
        with contextlib.suppress(RuntimeError):  # already closed
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self.in_loop():
            return False
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            _log.warning("the MCP event-loop thread %s did not stop in time", self._thread.name)
            return False
        return True
