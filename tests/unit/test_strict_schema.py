"""The copy of a pydantic schema sent to OpenAI's strict mode, and the schemas it cannot say."""

from __future__ import annotations

from pydantic import BaseModel, Field

from pywrapai_graph.adapters.llm._structured import strict_schema


class Street(BaseModel):
    name: str
    number: int | None = None


class Address(BaseModel):
    street: Street = Field(description="where")
    past: list[Street] = []
    zip: str = "0000"


def test_every_object_is_closed_and_every_property_required() -> None:
    made = strict_schema(Address.model_json_schema())
    assert made is not None
    assert made["required"] == ["street", "past", "zip"]
    assert made["additionalProperties"] is False
    street = made["$defs"]["Street"]
    assert street["required"] == ["name", "number"] and street["additionalProperties"] is False
    assert made["properties"]["street"] == {"$ref": "#/$defs/Street"}  # a reference alone
    assert "default" not in str(made)
    assert Address.model_json_schema()["properties"]["zip"]["default"] == "0000"  # untouched


def test_a_property_may_be_named_like_a_keyword() -> None:
    class Odd(BaseModel):
        default: int
        properties: str

    made = strict_schema(Odd.model_json_schema())
    assert made is not None and made["required"] == ["default", "properties"]


def test_open_mappings_and_tuples_cannot_be_strict() -> None:
    class Counts(BaseModel):
        by_name: dict[str, int]

    class Pair(BaseModel):
        pair: tuple[int, str]

    assert strict_schema(Counts.model_json_schema()) is None
    assert strict_schema(Pair.model_json_schema()) is None
