"""Chunk metadata as JSON text (one encoder, the same bytes on every store), and read back."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from pywrapai_graph.domain import Chunk
from pywrapai_graph.errors import VectorStoreError

__all__ = ["metadata_json", "metadata_jsons", "stored_chunk", "stored_metadata"]


#: One encoder for every chunk (``json.dumps`` with options builds a new one per call).
_METADATA_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, sort_keys=True)


def _row_encoder() -> Callable[[Any], str]:
    """``_METADATA_ENCODER.encode``'s C encoder made once, without circular checks (flat data)."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # no C accelerator: the encoder itself
        return _METADATA_ENCODER.encode
    encoder = _METADATA_ENCODER
    pieces = make(
        None,
        encoder.default,
        json.encoder.encode_basestring,
        None,
        encoder.key_separator,
        encoder.item_separator,
        encoder.sort_keys,
        encoder.skipkeys,
        encoder.allow_nan,
    )
    return lambda value: "".join(pieces(value, 0))


_encode_row = _row_encoder()
#: Values whose equal values have the same JSON text (not float: 0.0 == -0.0).
_SAME_TEXT = frozenset({str, int, bool, type(None)})


def metadata_jsons(chunks: Sequence[Chunk]) -> list[str]:
    """Each chunk's :func:`metadata_json`; a run of equal metadata (same keys in order, equal
    values of the same plain types: a document's chunks) is encoded once."""
    out: list[str] = []
    last: object = None
    last_types: tuple[type, ...] = ()
    encoded = ""
    for c in chunks:
        metadata = c.metadata
        if metadata is not last and not (
            last_types and metadata == last and tuple(map(type, metadata.values())) == last_types
        ):
            encoded = _encode_row(metadata)
            last = metadata
            types = tuple(map(type, metadata.values()))
            last_types = types if _SAME_TEXT.issuperset(types) else ()
        out.append(encoded)
    return out


def stored_metadata(text: object, chunk_id: object, where: str) -> dict[str, Any]:
    """A stored row's metadata JSON as a dict (else VectorStoreError: changed outside us)."""
    try:
        value = json.loads(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        value = None
    if not isinstance(value, dict):
        raise VectorStoreError(
            f"chunk {chunk_id!r} in {where} has metadata that is not a JSON object (the row "
            "was changed outside this library); delete the chunk (store.delete([id])) and "
            "add it again"
        )
    return value


def stored_chunk(row: Sequence[Any], where: str) -> Chunk:
    """The chunk of an ``(id, doc_id, text, metadata JSON)`` row (:func:`stored_metadata`)."""
    chunk_id, doc_id, text, metadata = row
    return Chunk(text, doc_id, stored_metadata(metadata, chunk_id, where), chunk_id)


def metadata_json(chunk: Chunk) -> str:
    """The chunk's metadata as JSON (checked metadata: ``BaseVectorStore`` refused any other)."""
    return _encode_row(chunk.metadata)
