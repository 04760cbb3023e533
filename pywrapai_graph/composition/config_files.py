"""Reading a configuration file: bounded, UTF-8, YAML holding a mapping, every failure a
``ConfigurationError`` naming the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pywrapai_graph.errors import ConfigurationError

__all__ = ["MAX_CONFIG_BYTES", "read_yaml"]

#: a configuration file larger than this is refused (``--config /dev/zero`` must not hang)
MAX_CONFIG_BYTES = 1 << 20


def read_yaml(path: Path) -> dict[str, Any]:
    import yaml  # here: a run configured by the environment alone never loads the parser

    try:
        with path.open("rb") as f:
            raw = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigurationError(f"cannot read config file {str(path)!r}: {exc.strerror}") from exc
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigurationError(
            f"config file {str(path)!r} is larger than {MAX_CONFIG_BYTES} bytes; "
            "a configuration is a few lines of YAML"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigurationError(
            f"config file {str(path)!r} is not UTF-8 text (byte {exc.start}); save it as UTF-8"
        ) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigurationError(
            f"config file {str(path)!r} is not valid YAML{where}: "
            f"{getattr(exc, 'problem', None) or exc}"
        ) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigurationError(
            f"config file {str(path)!r} must hold a mapping (keys like llm:, store:), "
            f"not a {type(data).__name__}"
        )
    return data
