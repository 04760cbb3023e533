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

from pywrapai_graph.composition.settings import RetrieverSettings
from pywrapai_graph.errors import ConfigurationError

if TYPE_CHECKING:
    from pywrapai_graph.composition.settings import Settings

__all__ = ["EVAL_AXES", "EvalAxis", "EvalSetting", "eval_settings"]


def _always(_values: Mapping[str, object]) -> bool:
    return True


def _hybrid_only(values: Mapping[str, object]) -> bool:
    return values.get("mode") == "hybrid"


@dataclass(frozen=True, slots=True)
class EvalAxis:
    """One dimension of the comparison.

    Attributes:
        field: the ``retriever.*`` field it sets; also the option's name (``--field``).
        help: the option's help text.
        applies: whether the axis means anything for a setting (given the setting's other
            ``retriever.*`` values); where it does not, it is left out of the setting.
    """

    field: str
    help: str
    applies: Callable[[Mapping[str, object]], bool] = _always

    @property
    def option(self) -> str:
        """The command-line option (``--mode``)."""
        return "--" + self.field.replace("_", "-")

    def choices(self) -> tuple[str, ...]:
        """The values the field accepts, when it is a fixed set (a Literal), else ()."""
        annotation = RetrieverSettings.model_fields[self.field].annotation
        return tuple(str(a) for a in get_args(annotation))


#: The axes, in the order settings are named (``hybrid/rrf``).
EVAL_AXES: tuple[EvalAxis, ...] = (
    EvalAxis("mode", "retrieval modes to compare, comma-separated (default: retriever.mode)"),
    EvalAxis(
        "fusion",
        "fusions to compare in hybrid mode, comma-separated (default: retriever.fusion)",
        _hybrid_only,
    ),
)


@dataclass(frozen=True, slots=True)
class EvalSetting:
    """One row of the comparison: its name (``hybrid/rrf``), the values of the axes that
    apply to it, and the whole configuration with them."""

    name: str
    values: Mapping[str, object]
    settings: Settings


def _values(axis: EvalAxis, given: str | None, configured: object) -> list[object]:
    if given is None:
        return [configured]
    values = list(dict.fromkeys(v.strip() for v in given.split(",") if v.strip()))
    allowed = axis.choices()
    unknown = [v for v in values if allowed and v not in allowed]
    if not values or unknown:
        raise ConfigurationError(
            f"eval {axis.option}: {given!r} is not a comma-separated list of "
            f"{', '.join(allowed) or 'values'} (e.g. {axis.option} {','.join(allowed[:2])})"
        )
    return list(values)


def _setting(base: Settings, values: dict[str, object]) -> Settings:
    try:
        retriever = RetrieverSettings.model_validate({**base.retriever.model_dump(), **values})
    except ValidationError as exc:
        raise ConfigurationError(f"eval: the setting {values} is not valid: {exc}") from exc
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
        values = {axis.field: value for axis, value in pairs if axis.applies(merged)}
        name = "/".join(str(v) for v in values.values())
        if name not in settings:
            settings[name] = EvalSetting(name, values, _setting(base, values))
    return list(settings.values())
