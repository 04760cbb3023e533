"""Structured output against a real OpenAI-compatible server: llama.cpp serving SmolLM2-135M
(see ``tests/integration/llama_server.py``). Its ``json_schema`` support constrains the reply
to the schema's grammar; what a grammar cannot say (a validator) is what the retries are for."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import BaseModel, field_validator

from pywrapai import LLM
from pywrapai_graph.errors import StructuredOutputError
from tests.integration.llama_server import ALIAS, LlamaServer

pytestmark = pytest.mark.integration


class City(BaseModel):
    name: str
    population: int


class Capital(BaseModel):
    name: str

    @field_validator("name")
    @classmethod
    def _never(cls, value: str) -> str:
        raise ValueError("the name must be a country's capital spelled in Klingon")


@pytest.fixture(scope="module")
def llama() -> Iterator[LlamaServer]:
    with LlamaServer() as server:
        yield server


def smol(server: LlamaServer) -> LLM:
    return LLM(
        provider="openai",
        model=ALIAS,
        base_url=server.base_url,
        api_key="no-key",
        timeout=60.0,
        max_retries=0,
    )


def test_a_real_server_returns_an_object_that_validates(llama: LlamaServer) -> None:
    with smol(llama) as llm:
        city = llm.chat_structured(
            "Biggest French city? Answer in JSON.", City, retries=2, max_tokens=64, seed=7
        )
    assert city.name  # it validated: a City
    records = llm.tokens.records
    assert 1 <= len(records) <= 3
    assert all(r.usage.input_tokens > 0 and r.usage.output_tokens > 0 for r in records)


async def test_a_real_server_is_asked_again_with_the_validation_error(llama: LlamaServer) -> None:
    llm = smol(llama)
    async with llm:
        with pytest.raises(StructuredOutputError) as info:
            await llm.achat_structured(
                "Capital of France? Answer in JSON.", Capital, retries=2, max_tokens=32, seed=7
            )
    error = info.value
    assert len(error.replies) == 3 and all(r.strip() for r in error.replies)
    assert "Klingon" in error.validation_error
    # each attempt was booked, and each resent the conversation grown by a reply and its error
    inputs = [r.usage.input_tokens for r in llm.tokens.records]
    assert len(inputs) == 3 and inputs[0] < inputs[1] < inputs[2]
