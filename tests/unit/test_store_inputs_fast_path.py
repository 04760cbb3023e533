"""The fast predicate of the chunk check accepts exactly what the explaining check accepts."""

from __future__ import annotations

import math
from enum import IntEnum
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pywrapai_graph.domain import Chunk
from pywrapai_graph.errors import InvalidArgumentError, PyWrapAIError
from pywrapai_graph.ports import store_inputs

_texts = st.text(alphabet=st.characters(), max_size=8) | st.sampled_from(
    ["\ud800", "a\udfffb", "é", ""]
)
_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | _texts
_values: st.SearchStrategy[Any] = (
    _scalars
    | st.lists(_scalars, max_size=3)
    | st.tuples(_scalars)
    | st.lists(st.lists(_scalars, max_size=2), max_size=2)
    | st.dictionaries(_texts, _scalars, max_size=2)
    | st.sets(st.integers(), max_size=2)
    | st.just(math.inf)
    | st.binary(max_size=3)
)
_keys: st.SearchStrategy[Any] = _texts | st.integers() | st.none()
_anything: st.SearchStrategy[Any] = _texts | st.integers() | st.none() | st.binary(max_size=2)


def _explained_ok(chunk: Chunk) -> bool:
    try:
        store_inputs._explain_chunk(chunk)
    except PyWrapAIError:
        return False
    return True


@settings(max_examples=400, deadline=None)
@given(
    ident=_anything,
    doc=_anything,
    text=_anything,
    metadata=st.dictionaries(_keys, _values, max_size=3) | st.lists(st.integers(), max_size=1),
)
def test_the_fast_predicate_accepts_exactly_what_the_explaining_check_accepts(
    ident: Any, doc: Any, text: Any, metadata: Any
) -> None:
    chunk = Chunk(id=ident, doc_id=doc, text=text, metadata=metadata)
    assert store_inputs._valid_chunk(chunk) == _explained_ok(chunk)


@settings(max_examples=400, deadline=None)
@given(
    ident=_texts,
    text=_texts,
    metadata=st.dictionaries(_keys, _values, min_size=1, max_size=3),
)
def test_the_fast_predicate_judges_metadata_as_the_explaining_check_does(
    ident: str, text: str, metadata: dict[Any, Any]
) -> None:
    chunk = Chunk(id=ident, doc_id="doc", text=text, metadata=metadata)
    assert store_inputs._valid_chunk(chunk) == _explained_ok(chunk)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.builds(
            Chunk,
            id=_anything,
            doc_id=_anything,
            text=_anything,
            metadata=st.dictionaries(_keys, _values, max_size=3) | st.lists(st.integers()),
        ),
        max_size=4,
    )
)
def test_the_batch_predicate_accepts_exactly_the_batches_of_valid_chunks(
    chunks: list[Chunk],
) -> None:
    """One C-level pass over a whole batch: for plain types (all the strategies draw) it
    says what checking each chunk says."""
    assert store_inputs._valid_batch(chunks) == all(map(store_inputs._valid_chunk, chunks))


class _Tag(str):
    pass


class _Level(IntEnum):
    LOW = 1


def test_types_the_batch_predicate_does_not_know_are_judged_chunk_by_chunk() -> None:
    """Subclasses of str/int/dict are left to the per-chunk check: valid ones pass, a lone
    surrogate inside a str subclass is still refused."""
    fine = [
        Chunk("t", "d", {"level": _Level.LOW, "tag": _Tag("x")}, "c1"),
        Chunk(_Tag("text"), "d", {}, "c2"),
    ]
    assert not store_inputs._valid_batch(fine)
    store_inputs.check_chunks(fine)
    bad = [Chunk("t", "d", {}, "c1"), Chunk("t", "d", {"tag": _Tag("a\ud800")}, "c2")]
    with pytest.raises(InvalidArgumentError, match="c2"):
        store_inputs.check_chunks(bad)
