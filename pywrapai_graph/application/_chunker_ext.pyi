"""The chunker's hot loops, compiled from ``_chunker_ext.c`` (optional; see ``chunker.py``)."""

from collections.abc import Iterator
from typing import Any

from pywrapai_graph.domain import Chunk

class Cutter(Iterator[str]):
    """The texts of the chunks cut from ``text`` (``chunker._py_chunk_texts``'s twin).

    ``size`` is the chunk size (> 10), ``limit`` the overlap limit (0 to ``size - 11``);
    anything else raises ``ValueError``.
    """

    def __init__(self, text: str, size: int, limit: int) -> None: ...
    def __next__(self) -> str: ...

class ChunkIds(Iterator[str]):
    """The ids of a document's chunks 0, 1, 2, ... (``chunker._py_chunk_ids``'s twin), endless.

    ``prefix``: the bytes uuid5 hashes before a chunk's index (namespace, UTF-8 document
    id, NUL). SHA-1 runs on the processor's SHA instructions when it has them, unless
    ``portable`` (the plain C code every processor runs; tests compare the two).
    """

    def __init__(self, prefix: bytes, *, portable: bool = False) -> None: ...
    def __next__(self) -> str: ...

class Chunks(Iterator[Chunk]):
    """``chunk_type(text, doc_id, metadata.copy(), id)`` for each text and id, in C.

    Each object's five slots are filled as ``Chunk``'s dataclass ``__init__`` fills them
    (``embedding`` None) without running it: only for a class whose ``__init__`` does
    just that (``chunker._chunk_init_sets_fields_only``). ``metadata`` must be a dict.
    """

    def __init__(
        self,
        chunk_type: type[Chunk],
        texts: Iterator[str],
        doc_id: str,
        metadata: dict[str, Any],
        ids: Iterator[str],
    ) -> None: ...
    def __next__(self) -> Chunk: ...
