"""The prompt-source port: where versioned system prompts come from."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["PromptSource"]


@runtime_checkable
class PromptSource(Protocol):
    """A named collection of system prompts (a directory, a database table, ...).

    Raises:
        FileNotFoundError: from :meth:`load` when the prompt does not exist; the message
            lists the available names.
        ValueError: from :meth:`load` when the name is unsafe (would leave the collection).
    """

    def load(self, filename: str) -> str:
        """Return the prompt text, stripped of surrounding whitespace."""
        ...

    def list_files(self) -> list[str]:
        """Return the available prompt names, sorted."""
        ...
