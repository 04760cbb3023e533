"""A batch's metadata JSON is, text for text, what encoding each chunk alone gives."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pywrapai_graph.adapters.vectorstores.kit.metadata_json import metadata_json, metadata_jsons
from pywrapai_graph.domain import Chunk

_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([0, 1, 1.0, True, 0.0, -0.0, False, "1", ""])
    | st.text(max_size=6)
)
_metadata: st.SearchStrategy[dict[str, Any]] = st.dictionaries(
    st.sampled_from(["a", "b", "é", "z"]) | st.text(max_size=3),
    _scalars | st.lists(_scalars, max_size=3),
    max_size=3,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_metadata, st.integers(1, 3)), max_size=6))
def test_runs_of_equal_metadata_encode_as_each_chunk_alone(
    runs: list[tuple[dict[str, Any], int]],
) -> None:
    """Runs of equal copies (a document's chunks) next to equal-but-different values (1,
    1.0 and True; 0.0 and -0.0) and to the same dict object repeated."""
    chunks: list[Chunk] = []
    for metadata, copies in runs:
        chunks += [Chunk("t", "d", dict(metadata), f"c{len(chunks)}") for _ in range(copies)]
        chunks.append(Chunk("t", "d", metadata, f"c{len(chunks)}"))
        chunks.append(Chunk("t", "d", metadata, f"c{len(chunks)}"))  # the same object again
    assert metadata_jsons(chunks) == [metadata_json(c) for c in chunks]


def test_equal_values_of_other_types_or_signs_are_encoded_again() -> None:
    values: list[dict[str, Any]] = [
        {"x": 1},
        {"x": 1.0},
        {"x": True},
        {"x": 0.0},
        {"x": -0.0},
        {"x": [1]},
        {"x": [1.0]},
    ]
    chunks = [Chunk("t", "d", metadata, str(i)) for i, metadata in enumerate(values)]
    assert metadata_jsons(chunks) == [
        '{"x": 1}',
        '{"x": 1.0}',
        '{"x": true}',
        '{"x": 0.0}',
        '{"x": -0.0}',
        '{"x": [1]}',
        '{"x": [1.0]}',
    ]
    assert metadata_jsons(chunks) == [
        json.dumps(c.metadata, ensure_ascii=False, allow_nan=False, sort_keys=True) for c in chunks
    ]
