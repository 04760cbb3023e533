"""Reasoning items: a model's reasoning, kept with its answer so the next turn can send it back.

OpenAI's Responses API returns the reasoning of models such as o4-mini and gpt-5 as
``reasoning`` output items. With ``store=False`` (the provider keeps nothing) those items come
back encrypted and must be sent in the next request's input for the model to continue its
reasoning across tool turns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pywrapai_graph.errors import ArgumentTypeError, InvalidArgumentError

__all__ = ["ReasoningItem", "reasoning_items_from_records"]


@dataclass(frozen=True, slots=True)
class ReasoningItem:
    """One reasoning item a model returned; opaque, sent back unchanged.

    Attributes:
        id: the provider's id of the item (``rs_...``).
        encrypted_content: the reasoning, encrypted by the provider (None when the provider
            keeps it itself and the id alone refers to it).
        summary: the reasoning summaries the provider shows, in order (empty unless asked
            for, e.g. ``extra={"reasoning": {"summary": "auto"}}``).
    """

    id: str
    encrypted_content: str | None = None
    summary: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        given: object = self.summary
        if isinstance(given, str) or not isinstance(given, Sequence):
            raise ArgumentTypeError("ReasoningItem.summary must be a sequence of str")
        object.__setattr__(self, "summary", tuple(given))

    def to_dict(self) -> dict[str, Any]:
        """The item as JSON values (for a history store)."""
        return {
            "id": self.id,
            "encrypted_content": self.encrypted_content,
            "summary": list(self.summary),
        }


def reasoning_items_from_records(records: object) -> tuple[ReasoningItem, ...]:
    """The items :meth:`ReasoningItem.to_dict` records describe (None: none).

    Raises:
        InvalidArgumentError: a record that is not a mapping with an ``id``.
    """
    if records is None:
        return ()
    if not isinstance(records, Sequence) or isinstance(records, str):
        raise InvalidArgumentError("reasoning_items must be a list of records")
    out = []
    for record in records:
        if not isinstance(record, Mapping) or "id" not in record:
            raise InvalidArgumentError("a reasoning item record is a mapping with an 'id'")
        content = record.get("encrypted_content")
        out.append(
            ReasoningItem(
                str(record["id"]),
                None if content is None else str(content),
                tuple(str(s) for s in record.get("summary") or ()),
            )
        )
    return tuple(out)
