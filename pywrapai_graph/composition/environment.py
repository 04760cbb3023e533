"""The ``PYWRAPAI_*`` environment as a settings layer, read as pydantic-settings reads it.

:class:`~pywrapai_graph.composition.settings.Settings` used to be a pydantic-settings
``BaseSettings``; importing pydantic-settings (its cloud, dotenv and CLI sources, asyncio)
costs about a third of an ``ask`` (``benchmarks/ask_cli.py``; the bar for a second reader is
10%), so these few rules are kept here instead, for the shape our settings have — sections
(models of scalars, lists and mappings of models) and top-level scalars:

- names are matched case-insensitively: ``PYWRAPAI_<FIELD>`` and, nested with ``__``,
  ``PYWRAPAI_<SECTION>__<KEY>``; values stay strings for pydantic to convert;
- ``PYWRAPAI_<SECTION>`` holds a JSON object (an error when it is not JSON), which the
  nested variables then update; a value for a list field (``stop``) is parsed as JSON when
  it is JSON and kept as a string otherwise;
- a model built from keyword values puts them on top of the environment, merged key by key
  (the keywords win), and matches their top-level names case-insensitively.

``tests/unit/test_settings_environment.py`` checks all of it against pydantic-settings on
random environments.
"""

from __future__ import annotations

import json
import os
import types
from collections.abc import Mapping, Sequence
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from pywrapai_graph.errors import ConfigurationError

__all__ = ["deep_update", "environment_values", "with_environment"]

PREFIX = "pywrapai_"
NESTED = "__"


def deep_update(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """``top`` on ``base``: dictionaries under the same key are merged, anything else replaced."""
    out = dict(base)
    for key, value in top.items():
        current = out.get(key)
        if key in out and isinstance(current, dict) and isinstance(value, dict):
            out[key] = deep_update(current, value)
        else:
            out[key] = value
    return out


def _is_complex(annotation: Any) -> bool:
    """A model, mapping or collection (not text): its environment value is JSON."""
    origin = get_origin(annotation) or annotation
    if not isinstance(origin, type) or issubclass(origin, str | bytes):
        return False
    return issubclass(origin, BaseModel | Mapping | Sequence | tuple | set | frozenset)


def _is_union(annotation: Any) -> bool:
    return get_origin(annotation) in (Union, types.UnionType)


def _json_rule(field: FieldInfo) -> tuple[bool, bool]:
    """(decode the value as JSON, keep the text when it is not JSON)."""
    annotation = field.annotation
    if _is_complex(annotation):
        return True, False
    if _is_union(annotation) and any(_is_complex(a) for a in get_args(annotation)):
        return True, True
    return False, False


def _model_of(field: FieldInfo | None) -> type[BaseModel] | None:
    if field is None:
        return None
    annotation = field.annotation
    for candidate in (annotation, *(get_args(annotation) if _is_union(annotation) else ())):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _sub_field(field: FieldInfo | None, key: str) -> FieldInfo | None:
    """The field named ``key`` (any case) of the model ``field`` holds, if any; for a
    mapping (``mcp.servers``), its value type under any key."""
    annotation = field.annotation if field is not None else None
    if get_origin(annotation) in (dict, Mapping) and len(get_args(annotation)) == 2:
        value = get_args(annotation)[1]
        # pydantic-settings decodes a mapping's values leniently: text that is not JSON stays text
        return FieldInfo.from_annotation(value | str)
    model = _model_of(field)
    if model is None:
        return None
    return next((f for name, f in model.model_fields.items() if name.lower() == key), None)


def _loads(value: str, lenient: bool) -> Any:
    """``value`` decoded as JSON; when it is not JSON, kept as text if ``lenient``."""
    try:
        return json.loads(value)
    except ValueError:
        if not lenient:
            raise
        return value


def _decode(value: str, field: FieldInfo | None) -> Any:
    if field is None or not value:
        return value
    decode, lenient = _json_rule(field)
    return _loads(value, lenient) if decode else value


def _nested(name: str, field: FieldInfo, env: Mapping[str, str]) -> dict[str, Any]:
    """The ``PYWRAPAI_<NAME>__...`` variables as nested dictionaries, in environment order."""
    prefix = f"{PREFIX}{name}{NESTED}"
    result: dict[str, Any] = {}
    for env_name, value in env.items():
        if not env_name.startswith(prefix):
            continue
        *keys, last = env_name[len(prefix) :].split(NESTED)
        node: Any = result
        target: FieldInfo | None = field
        for key in keys:
            target = _sub_field(target, key)
            if isinstance(node, dict):
                node = node.setdefault(key, {})
        target = _sub_field(target, last)
        if isinstance(node, dict):
            node[last] = _decode(value, target)
        else:  # a deeper name under a scalar already set: decoded for its errors, then dropped
            _decode(value, target)
    return result


def _field_value(name: str, field: FieldInfo, env: Mapping[str, str]) -> Any:
    value = env.get(PREFIX + name)
    decode, lenient = _json_rule(field)
    if not decode:
        return value
    if value is None:
        return _nested(name, field, env) or None
    decoded = _loads(value, lenient)
    if isinstance(decoded, dict):
        return deep_update(decoded, _nested(name, field, env))
    return decoded


def _rename(model: type[BaseModel], values: Mapping[str, Any]) -> dict[str, Any]:
    """A section's keys renamed to the field they name in any case (a later key wins), and
    so on down into the models its fields hold (``retriever.reranker``)."""
    names: dict[str, str] = {}
    for name in model.model_fields:
        names.setdefault(name.lower(), name)
    out: dict[str, Any] = {}
    for key, value in values.items():
        name = names.get(key.lower(), key)
        inner = _model_of(model.model_fields.get(name))
        out[name] = _rename(inner, value) if inner and isinstance(value, dict) else value
    return out


def _match_names(model: type[BaseModel], values: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword names equal to a field name but for case renamed to it (the first one wins)."""
    provided: dict[str, list[str]] = {}
    for key in values:
        provided.setdefault(key.lower(), []).append(key)
    left = set(values)
    out: dict[str, Any] = {}
    for name in model.model_fields:
        matched = [key for key in provided.get(name.lower(), []) if key in left]
        if matched:
            left.difference_update(matched)
            out[name] = values[matched[0]]
    out.update({key: value for key, value in values.items() if key in left})
    return out


def environment_values(
    model: type[BaseModel], environ: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """What the ``PYWRAPAI_*`` variables set, as the nested dictionary ``model`` validates.

    Raises:
        ConfigurationError: a section variable (``PYWRAPAI_LLM``) is not valid JSON.
    """
    env = {
        key.lower(): value for key, value in (os.environ if environ is None else environ).items()
    }
    data: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        try:
            value = _field_value(name, field, env)
        except ValueError:
            raise ConfigurationError(
                "invalid PYWRAPAI_* environment variable: error parsing value for field "
                f'"{name}" from source "EnvSettingsSource"'
            ) from None
        if value is None:
            continue
        section = _model_of(field)
        if isinstance(value, dict) and section is not None:
            value = _rename(section, value)
        data[name] = value
    return data


def with_environment(model: type[BaseModel], values: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword ``values`` for ``model`` on top of the environment (the keywords win).

    Raises:
        ConfigurationError: a section variable is not valid JSON.
    """
    return deep_update(environment_values(model), _match_names(model, values))
