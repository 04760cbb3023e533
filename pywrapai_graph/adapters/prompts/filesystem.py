"""PromptRegistry: versioned system prompts as plain files in one directory."""

from __future__ import annotations

import os
from pathlib import Path

from pywrapai_graph.domain.checks import is_text
from pywrapai_graph.errors import InvalidArgumentError, PromptNotFoundError, UnsafePromptNameError
from pywrapai_graph.ports import PromptSource

__all__ = ["PromptRegistry"]

_MAX_PROMPT_BYTES = 1 << 20


class PromptRegistry(PromptSource):
    """Loads prompt files (``{role}-v{version}.txt``) from ``prompts_dir``.

    Names are plain file names: anything that could leave the directory — ``..``, a path
    separator, an absolute path, a NUL byte, or a symlink resolving outside — is refused
    with :class:`~pywrapai_graph.errors.UnsafePromptNameError` (a ``ValueError``).

    Args:
        prompts_dir: the directory; pass an absolute path in production, never rely on CWD.
    """

    def __init__(self, prompts_dir: str | os.PathLike[str] = "system_prompts_registry") -> None:
        self._dir = Path(prompts_dir)

    @property
    def prompts_dir(self) -> Path:
        """The directory prompts are read from."""
        return self._dir

    def list_files(self) -> list[str]:
        """Sorted names of the regular files in the directory ([] when it does not exist)."""
        if not self._dir.is_dir():
            return []
        return sorted(
            entry.name
            for entry in self._dir.iterdir()
            if not entry.name.startswith(".") and self._is_safe_file(entry)
        )

    def load(self, filename: str) -> str:
        """Return the prompt's text, stripped of leading and trailing whitespace.

        Raises:
            UnsafePromptNameError: the name would leave the prompts directory.
            PromptNotFoundError: (a ``FileNotFoundError``) the directory or file is missing;
                the message lists the available files.
            ValueError: the file is not UTF-8 text or is larger than 1 MiB.
        """
        path = self._resolve(filename)
        if not self._dir.is_dir():
            raise PromptNotFoundError(
                f"prompts directory {str(self._dir)!r} does not exist; "
                "create it or pass prompts_dir= with an absolute path"
            )
        if not path.is_file():
            raise PromptNotFoundError(
                f"prompt file {filename!r} not found in {str(self._dir)!r}; "
                f"available: {self.list_files()}"
            )
        if path.stat().st_size > _MAX_PROMPT_BYTES:
            raise InvalidArgumentError(f"prompt file {filename!r} is larger than 1 MiB")
        try:
            return path.read_text(encoding="utf-8").strip()
        except UnicodeDecodeError:
            raise InvalidArgumentError(
                f"prompt file {filename!r} is not valid UTF-8 text"
            ) from None

    def _resolve(self, filename: str) -> Path:
        if not is_text(filename) or not filename.strip():
            raise UnsafePromptNameError("prompt name must be a non-empty file name")
        bad = (
            "\x00" in filename
            or "/" in filename
            or "\\" in filename
            or filename in (".", "..")
            or os.path.isabs(filename)
            or Path(filename).drive != ""
        )
        if bad:
            raise UnsafePromptNameError(
                f"prompt name {filename!r} is not a plain file name inside the prompts "
                "directory; pass just the file name, e.g. 'support-agent-v1.txt'"
            )
        path = self._dir / filename
        if path.exists() and not self._is_safe_file(path):
            raise UnsafePromptNameError(
                f"prompt file {filename!r} resolves outside the prompts directory (symlink); "
                "refusing to read it"
            )
        return path

    def _is_safe_file(self, path: Path) -> bool:
        try:
            root = self._dir.resolve(strict=True)
            target = path.resolve(strict=True)
        except (OSError, RuntimeError):
            return False
        return target.parent == root and target.is_file()

    def __repr__(self) -> str:
        return f"PromptRegistry(prompts_dir={str(self._dir)!r})"
