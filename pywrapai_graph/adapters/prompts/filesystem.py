"""PromptRegistry: versioned system prompts as plain files in one directory."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from pywrapai_graph.domain.checks import is_text
from pywrapai_graph.errors import (
    InvalidArgumentError,
    PromptNotFoundError,
    PyWrapAIError,
    UnsafePromptNameError,
)
from pywrapai_graph.ports import PromptSource

__all__ = ["PromptRegistry"]

_MAX_PROMPT_BYTES = 1 << 20
_READ = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK  # NONBLOCK: a FIFO never hangs a load


def _regular_files(folder: int | Path) -> dict[tuple[int, int], str]:
    """The regular files that are entries of ``folder`` (not links), by device and inode."""
    found: dict[tuple[int, int], str] = {}
    with os.scandir(folder) as entries:
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                found[info.st_dev, info.st_ino] = entry.name
    return found


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
        """Sorted names of the regular files in the directory, and of the links to them
        ([] when it does not exist)."""
        try:
            inside = _regular_files(self._dir)
            with os.scandir(self._dir) as entries:
                links = [e.name for e in entries if e.is_symlink()]
        except OSError:
            return []
        names = list(inside.values())
        for name in links:
            try:
                target = os.stat(self._dir / name)
            except OSError:
                continue
            if (target.st_dev, target.st_ino) in inside:
                names.append(name)
        return sorted(n for n in names if not n.startswith("."))

    def load(self, filename: str) -> str:
        """Return the prompt's text, stripped of leading and trailing whitespace.

        The file is opened once, relative to the opened directory and without following a
        link; a link is followed only if the file it opened is a regular file of the
        directory itself (same device and inode as one of its entries). The text is read
        from that descriptor, so a link swapped in between cannot make it read another file.

        Raises:
            UnsafePromptNameError: the name would leave the prompts directory.
            PromptNotFoundError: (a ``FileNotFoundError``) the directory or file is missing;
                the message lists the available files.
            ValueError: the file is not UTF-8 text or is larger than 1 MiB.
        """
        self._check_name(filename)
        try:
            dir_fd = os.open(self._dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            raise PromptNotFoundError(
                f"prompts directory {str(self._dir)!r} does not exist; "
                "create it or pass prompts_dir= with an absolute path"
            ) from None
        try:
            fd = self._open_inside(dir_fd, filename)
        finally:
            os.close(dir_fd)
        with os.fdopen(fd, "rb") as f:
            data = f.read(_MAX_PROMPT_BYTES + 1)
        if len(data) > _MAX_PROMPT_BYTES:
            raise InvalidArgumentError(f"prompt file {filename!r} is larger than 1 MiB")
        try:
            return data.decode("utf-8").strip()
        except UnicodeDecodeError:
            raise InvalidArgumentError(
                f"prompt file {filename!r} is not valid UTF-8 text"
            ) from None

    def _open_inside(self, dir_fd: int, filename: str) -> int:
        """A descriptor of the regular file ``filename`` of the directory ``dir_fd``."""
        try:
            fd = os.open(filename, _READ | os.O_NOFOLLOW, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise self._not_found(filename, exc) from None
            try:  # a link: open what it names, then check that file is one of ours
                fd = os.open(filename, _READ, dir_fd=dir_fd)
            except OSError as inner:
                raise self._not_found(filename, inner) from None
            opened = os.fstat(fd)
            if (opened.st_dev, opened.st_ino) not in _regular_files(dir_fd):
                os.close(fd)
                raise UnsafePromptNameError(
                    f"prompt file {filename!r} resolves outside the prompts directory "
                    "(symlink); refusing to read it"
                ) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise self._not_found(filename, None)
        return fd

    def _not_found(self, filename: str, exc: OSError | None) -> PyWrapAIError:
        if exc is not None and exc.errno not in (errno.ENOENT, errno.ENOTDIR):
            return InvalidArgumentError(
                f"cannot read prompt file {filename!r} in {str(self._dir)!r}: "
                f"{os.strerror(exc.errno or 0)}"
            )
        return PromptNotFoundError(
            f"prompt file {filename!r} not found in {str(self._dir)!r}; "
            f"available: {self.list_files()}"
        )

    @staticmethod
    def _check_name(filename: str) -> None:
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

    def __repr__(self) -> str:
        return f"PromptRegistry(prompts_dir={str(self._dir)!r})"
