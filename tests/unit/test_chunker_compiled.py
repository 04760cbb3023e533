"""The compiled chunker loops (``_chunker_ext.c``) give exactly what their Python twins give.

``Cutter`` against ``_py_chunk_texts`` on random texts of every string kind (ASCII,
Latin-1, UCS-2, astral, lone surrogates), every Unicode whitespace character, long runs
without whitespace, many dots, at random sizes and overlaps; ``ChunkIds`` against
``uuid.uuid5``, on the processor's SHA instructions and on the portable code. In CI the
compiled module must be the one in use: an install that silently lost it fails here.
"""

from __future__ import annotations

import gc
import itertools
import os
import random
import sys
import uuid
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pywrapai_graph import Chunk, Chunker, Document
from pywrapai_graph.application import chunker as chunker_module
from pywrapai_graph.application.chunker import _CHUNK_NAMESPACE, _id_bytes, _py_chunk_texts

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
BUILT = chunker_module._NATIVE_CUTTER is not None and chunker_module._NATIVE_IDS is not None
compiled_only = pytest.mark.skipif(not BUILT, reason="the compiled chunker is not built here")


def test_the_compiled_loops_are_in_use_in_ci() -> None:
    if not IN_CI and not BUILT:
        pytest.skip("the compiled chunker is not built here (allowed outside CI)")
    from pywrapai_graph.application import _chunker_ext

    assert chunker_module._NATIVE_CUTTER is _chunker_ext.Cutter
    assert chunker_module._NATIVE_IDS is _chunker_ext.ChunkIds
    assert chunker_module._NATIVE_CHUNKS is _chunker_ext.Chunks  # Chunk is a plain dataclass
    assert isinstance(Chunker(50, 10)._chunks(Document("words. " * 20)), _chunker_ext.Chunks)
    assert isinstance(chunker_module._chunk_texts("words. " * 20, 50, 10), _chunker_ext.Cutter)
    assert isinstance(chunker_module._chunk_ids("doc"), _chunker_ext.ChunkIds)


def cut(text: str, size: int, limit: int) -> list[str]:
    assert chunker_module._NATIVE_CUTTER is not None
    return list(chunker_module._NATIVE_CUTTER(text, size, limit))


def ids(doc_id: str, portable: bool) -> Iterator[str]:
    assert chunker_module._NATIVE_IDS is not None
    from pywrapai_graph.application._chunker_ext import ChunkIds

    return ChunkIds(_id_bytes(doc_id), portable=portable)


WHITESPACE = "".join(c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace())
# Each kind of string, and what the cutting rules look at: the marks, every whitespace
# character, blank lines plain, spaced and CRLF; lone surrogates (which UTF-8 refuses).
ALPHABETS = {
    "ascii": "abc xyz.!?\n\t\r\x0b\x0c\x1c\x1d\x1e\x1f",
    "latin-1": "abé ü.!?\n\t\x85\xa0",
    "ucs-2": "ab日本 .\n\u2028\u2029\u3000\u1680\u202f\u205f\u2000\u200a",
    "astral": "a😀𝄞 .!\n\t",
    "surrogates": "a\ud800\udfff \n.",
    "whitespace": WHITESPACE + "ab.",
}
PIECES = [
    "\n\n",
    "\n \n",
    "\r\n\r\n",
    "\n\t \n",
    "\n\u3000\n",
    " \n",
    ". ",
    "! ",
    "? ",
    "a.b.c.d",
    "x" * 40,
    "😀" * 30,
    " " * 25,
    "\n \n \n \n",
    "\n\n\n",
]


def texts() -> st.SearchStrategy[str]:
    chars = st.one_of(
        *(st.text(alphabet=a, max_size=60) for a in ALPHABETS.values()),
        st.sampled_from(PIECES),
        st.text(max_size=20),  # any code point hypothesis picks, surrogates included
    )
    return st.lists(chars, max_size=40).map("".join)


def assert_same_texts(text: str, size: int, limit: int) -> None:
    assert cut(text, size, limit) == list(_py_chunk_texts(text, size, limit))


@compiled_only
@given(
    text=texts(),
    size=st.integers(min_value=11, max_value=300),
    limit_ratio=st.floats(min_value=0, max_value=1),
)
def test_cutter_equals_the_python_loop_on_random_texts(
    text: str, size: int, limit_ratio: float
) -> None:
    assert_same_texts(text, size, int((size - 11) * limit_ratio))


@compiled_only
@pytest.mark.parametrize("name", sorted(ALPHABETS))
def test_cutter_equals_the_python_loop_on_long_texts_of_each_kind(name: str) -> None:
    rng = random.Random(name)
    alphabet = ALPHABETS[name] + "words" * 3
    pieces = [*alphabet, *PIECES, "word", "words", " "]
    text = "".join(rng.choice(pieces) for _ in range(60_000))
    for size, limit in [(500, 50), (11, 0), (40, 29), (120, 30), (2_000, 300)]:
        assert_same_texts(text, size, limit)


@compiled_only
@pytest.mark.parametrize(
    "text",
    [
        "",
        " \n\t ",
        "x" * 30_000,  # no whitespace at all
        "😀" * 30_000,
        "\ud800" * 3_000 + " " + "\udc00" * 3_000,
        "a.b.c.d.e " * 3_000,  # many dots inside words
        "\n \n" * 5_000 + "end of it",  # runs of spaced blank lines: finditer's parity
        "text\n \n \n \nmore text " * 2_000,
        "text\n \n\n \nmore. " * 2_000,
        " " * 20_000 + "tail words here" + "\u3000" * 20_000,
        "word\u2028" * 8_000,
    ],
)
def test_cutter_equals_the_python_loop_on_edge_shapes(text: str) -> None:
    for size, limit in [(500, 50), (40, 10), (11, 0), (12, 1)]:
        assert_same_texts(text, size, limit)


@compiled_only
@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("text", 10, 0), ValueError),
        (("text", 50, 40), ValueError),
        (("text", 50, -1), ValueError),
        ((b"text", 50, 0), TypeError),
        (("text", "50", 0), TypeError),
    ],
)
def test_cutter_refuses_what_the_chunker_never_passes(
    args: tuple[object, ...], error: type
) -> None:
    with pytest.raises(error):
        cut(*args)  # type: ignore[arg-type]


@compiled_only
@pytest.mark.parametrize("portable", [False, True])
def test_chunk_ids_equal_uuid5(portable: bool) -> None:
    # Prefixes (16 + the UTF-8 id + 1 bytes) of 17 to 128 bytes: the index and padding
    # fill one or two 64-byte blocks, whatever the number of digits.
    doc_ids = ["", *("x" * k for k in range(20, 49)), "y" * 111, "ünï 😀" * 9, str(uuid.uuid4())]
    for doc_id in doc_ids:
        got = list(itertools.islice(ids(doc_id, portable), 1_100))
        assert got == [str(uuid.uuid5(_CHUNK_NAMESPACE, f"{doc_id}\x00{i}")) for i in range(1_100)]
    # Indexes of 5 to 7 digits.
    endless = ids("doc", portable)
    seen = 0
    for i in (99_999, 100_000, 999_999, 1_000_000):
        got_i = next(itertools.islice(endless, i - seen, None))
        seen = i + 1
        assert got_i == str(uuid.uuid5(_CHUNK_NAMESPACE, f"doc\x00{i}"))


@compiled_only
def test_chunk_ids_refuse_a_prefix_that_is_not_bytes() -> None:
    from pywrapai_graph.application._chunker_ext import ChunkIds

    with pytest.raises(TypeError):
        ChunkIds("doc")  # type: ignore[arg-type]


@compiled_only
def test_chunks_are_the_objects_chunk_init_makes() -> None:
    from pywrapai_graph.application._chunker_ext import Chunks

    texts = [f"chunk number {i}" for i in range(2_000)]
    ids = [f"id-{i}" for i in range(2_000)]
    metadata = {"source": "a.txt", "tags": ["x"], "n": 1}
    made = list(Chunks(Chunk, iter(texts), "doc", metadata, iter(ids)))
    expected = [Chunk(t, "doc", metadata.copy(), i) for t, i in zip(texts, ids, strict=True)]
    assert made == expected
    assert all(type(c) is Chunk and gc.is_tracked(c) and c.embedding is None for c in made)
    # Each chunk holds its own (shallow) copy of the metadata, as dict.copy() makes.
    made[0].metadata["n"] = 2
    assert metadata["n"] == 1
    assert made[1].metadata["n"] == 1
    assert made[0].metadata is not made[1].metadata
    assert made[0].metadata["tags"] is metadata["tags"]
    made[0].embedding = [0.5]
    assert made[0] != expected[0]
    # What the chunks hold is released with them.
    doc_id = "".join(["d", "oc"])
    before = sys.getrefcount(doc_id)
    chunks = list(Chunks(Chunk, iter(texts), doc_id, {}, iter(ids)))
    assert sys.getrefcount(doc_id) == before + len(chunks)
    del chunks
    assert sys.getrefcount(doc_id) == before


def test_split_makes_the_same_chunks_with_and_without_the_compiled_maker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    doc = Document("A sentence here. " * 500 + "\n\n" + "more words " * 300, {"k": [1]}, "d")
    made = Chunker(200, 40).split(doc)
    monkeypatch.setattr(chunker_module, "_NATIVE_CHUNKS", None)
    assert Chunker(200, 40).split(doc) == made
    # A metadata mapping that is not exactly a dict is copied by its own copy().

    class Tagged(dict[str, object]):
        def copy(self) -> Tagged:
            return Tagged(self)

    monkeypatch.undo()
    tagged = Chunker(200, 40).split(Document(doc.text, Tagged(k=[1]), "d"))
    assert tagged == made
    assert all(type(c.metadata) is Tagged for c in tagged)


@compiled_only
def test_chunks_refuse_what_they_cannot_make() -> None:
    from pywrapai_graph.application._chunker_ext import Chunks

    class NoSlots:
        text = doc_id = metadata = id = embedding = None

    with pytest.raises(TypeError):
        Chunks(NoSlots, iter(["t"]), "d", {}, iter(["i"]))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Chunks(Chunk, iter(["t"]), "d", [], iter(["i"]))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Chunks(Chunk, ["t"], "d", {}, iter(["i"]))  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="ids ran out"):
        list(Chunks(Chunk, iter(["t", "u"]), "d", {}, iter(["i"])))

    def failing() -> Iterator[str]:
        yield "first"
        raise ValueError("broken text source")

    chunks = Chunks(Chunk, failing(), "d", {}, iter(["i", "j"]))
    assert next(chunks).text == "first"
    with pytest.raises(ValueError, match="broken text source"):
        next(chunks)
    assert list(chunks) == []


def test_chunk_is_still_the_plain_dataclass_the_compiled_maker_fills() -> None:
    # If this fails, Chunk changed: the chunker then makes chunks with Chunk(...) again
    # (correct, slower); update _chunker_ext.c's Chunks and this test together.
    assert chunker_module._chunk_init_sets_fields_only()
