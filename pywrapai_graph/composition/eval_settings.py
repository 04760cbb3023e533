"""The retrieval settings ``pywrapai-graph eval`` compares: a product of axes.

Each axis is one ``retriever.*`` field with a command-line option (``--mode dense,hybrid``,
``--fusion rrf,weighted``). The settings are every combination of the values given, in the
order given, where an axis that does not apply to a combination (fusion outside hybrid
mode) is left out and the duplicates this makes are dropped. An axis not given on the
command line takes its value from the configuration. Adding a dimension (a reranker, a
BM25 parameter) is one more :class:`EvalAxis` in :data:`EVAL_AXES`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, get_args

from pydantic import ValidationError

from pywrapai_graph.composition.providers import RERANK_PROVIDERS
from pywrapai_graph.composition.settings import RetrieverSettings
from pywrapai_graph.errors import ConfigurationError

if TYPE_CHECKING:
    from pywrapai_graph.composition.settings import Settings

__all__ = ["EVAL_AXES", "EvalAxis", "EvalSetting", "eval_settings"]


def _always(_values: Mapping[str, object]) -> bool:
    return True


def _hybrid_only(values: Mapping[str, object]) -> bool:
    return values.get("mode") == "hybrid"


def _literal_choices(field: str) -> tuple[str, ...]:
    annotation = RetrieverSettings.model_fields[field].annotation
    return tuple(str(a) for a in get_args(annotation))


def _word(word: str, _configured: object) -> object:
    return word


def _named(value: object) -> str | None:
    return str(value)


def _reranker_choices(_field: str) -> tuple[str, ...]:
    return ("none", *RERANK_PROVIDERS)


def _reranker(word: str, configured: object) -> object:
    """ "none": no reranker; a provider name: the configured reranker when it is that
    provider (its model, folder, key...), else that provider with its defaults."""
    if word == "none":
        return None
    if isinstance(configured, Mapping) and configured.get("provider") == word:
        return configured
    return {"provider": word}


def _reranker_name(value: object) -> str | None:
    if not isinstance(value, Mapping):
        return None  # no reranker: the setting's name says nothing of it
    return f"rerank:{value.get('provider')}"


@dataclass(frozen=True, slots=True)
class EvalAxis:
    """One dimension of the comparison.

    Attributes:
        field: the ``retriever.*`` field it sets; also the option's name (``--field``).
        help: the option's help text.
        applies: whether the axis means anything for a setting (given the setting's other
            ``retriever.*`` values); where it does not, it is left out of the setting.
        accepted: the words the option takes (default: the field's Literal values).
        value: a word (and the configured value) -> the field's value (default: the word).
        name: a field value -> its part of the setting's name (None: no part).
    """

    field: str
    help: str
    applies: Callable[[Mapping[str, object]], bool] = _always
    accepted: Callable[[str], tuple[str, ...]] = _literal_choices
    value: Callable[[str, object], object] = _word
    name: Callable[[object], str | None] = _named

    @property
    def option(self) -> str:
        """The command-line option (``--mode``)."""
        return "--" + self.field.replace("_", "-")

    def choices(self) -> tuple[str, ...]:
        """The words the option accepts (empty: any)."""
        return self.accepted(self.field)


#: The axes, in the order settings are named (``hybrid/rrf``).
EVAL_AXES: tuple[EvalAxis, ...] = (
    EvalAxis("mode", "retrieval modes to compare, comma-separated (default: retriever.mode)"),
    EvalAxis(
        "fusion",
        "fusions to compare in hybrid mode, comma-separated (default: retriever.fusion)",
        _hybrid_only,
    ),
    EvalAxis(
        "reranker",
        "rerankers to compare, comma-separated: none, or a provider (the configured "
        "retriever.reranker when it is that provider) (default: retriever.reranker)",
        accepted=_reranker_choices,
        value=_reranker,
        name=_reranker_name,
    ),
)


@dataclass(frozen=True, slots=True)
class EvalSetting:
    """One row of the comparison: its name (``hybrid/rrf``), the name of each applying axis's
    value (None: no reranker), and the whole configuration with them."""

    name: str
    values: Mapping[str, str | None]
    settings: Settings


def _values(axis: EvalAxis, given: str | None, configured: object) -> list[object]:
    if given is None:
        return [configured]
    words = list(dict.fromkeys(v.strip() for v in given.split(",") if v.strip()))
    allowed = axis.choices()
    unknown = [v for v in words if allowed and v not in allowed]
    if not words or unknown:
        raise ConfigurationError(
            f"eval {axis.option}: {given!r} is not a comma-separated list of "
            f"{', '.join(allowed) or 'values'} (e.g. {axis.option} {','.join(allowed[:2])})"
        )
    return [axis.value(word, configured) for word in words]


def _setting(base: Settings, name: str, values: dict[str, object]) -> Settings:
    try:
        retriever = RetrieverSettings.model_validate({**base.retriever.model_dump(), **values})
    except ValidationError as exc:
        raise ConfigurationError(f"eval: the setting {name} is not valid: {exc}") from exc
    return base.model_copy(update={"retriever": retriever})


def eval_settings(
    base: Settings, given: Mapping[str, str | None], axes: Sequence[EvalAxis] = EVAL_AXES
) -> list[EvalSetting]:
    """The settings to compare: ``given`` maps an axis field to its comma-separated values
    (None: the configured value).

    Raises:
        ConfigurationError: a value the field does not accept, or an empty list.
    """
    configured = base.retriever.model_dump()
    lists = [_values(axis, given.get(axis.field), configured[axis.field]) for axis in axes]
    settings: dict[str, EvalSetting] = {}
    for combination in itertools.product(*lists):
        pairs = list(zip(axes, combination, strict=True))
        merged = {**configured, **{axis.field: value for axis, value in pairs}}
        applying = [(axis, value) for axis, value in pairs if axis.applies(merged)]
        names = {axis.field: axis.name(value) for axis, value in applying}
        name = "/".join(n for n in names.values() if n is not None)
        if name not in settings:
            values = {axis.field: value for axis, value in applying}
            settings[name] = EvalSetting(name, names, _setting(base, name, values))
    return list(settings.values())
