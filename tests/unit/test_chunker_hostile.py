"""The chunker under the inputs and uses the world will throw at it.

A chunk size up to ``sys.maxsize`` and beyond, every whitespace character and string kind,
``str`` subclasses, document ids that are not valid text, metadata that is not a plain
dict, is mutated by another thread or fails to copy, a ``Chunk`` class patched at run
time, threads, and reference counts and memory across many splits, error paths included.
Cuts are checked against the one-window-at-a-time reference (``chunker_reference``).
"""

from __future__ import annotations

import gc
import sys
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterator
from types import MappingProxyType
from typing import Any

import pytest

from pywrapai_graph import Chunk, Chunker, Document
from pywrapai_graph.application import chunker as chunker_module
from pywrapai_graph.errors import ArgumentTypeError, InvalidArgumentError
from tests.unit.chunker_reference import reference_chunk_id, reference_split

WHITESPACE = "".join(c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace())
# A text of each string kind, with every boundary the cutting rules look for.
KINDS = {
    "ascii": "Some words. More words!\n\nA paragraph? Yes.\n \nend " * 40,
    "latin-1": "Caf\xe9 cr\xe8me.\xa0Suite\x85de mots. \n\n\xe9t\xe9 " * 40,
    "ucs-2": "\u65e5\u672c\u8a9e\u3000\u306e\u6587. \u2028\u6bb5\u843d\n\n\u8a9e " * 40,
    "astral": "\U0001f600 emoji words. \U0001d11e clef!\n\n\U00020000 wide " * 40,
    "surrogates": "lone \ud800 high. \udfff low\n\nmore \udc80 text " * 40,
}


def texts_of(chunks: list[Chunk]) -> list[str]:
    return [c.text for c in chunks]


def uuid5_ids(doc_id: str, count: int) -> list[str]:
    return [reference_chunk_id(doc_id, i) for i in range(count)]


# ---------------------------------------------------------------- sizes at their limits


@pytest.mark.parametrize("size", [2**40, 2**62, sys.maxsize - 11, sys.maxsize, 2**63, 10**30])
def test_a_huge_chunk_size_keeps_the_document_whole(size: int) -> None:
    # A chunk size that means "do not split": one chunk, the text without its outer
    # whitespace, whatever the overlap.
    text = "  \n Leading blanks, then words. And a sentence!\n\nA paragraph.  \n"
    for overlap in (0, 50, size - 11, size - 1):
        for kind_text in (text, text + "\U0001f600", text * 300):
            [chunk] = Chunker(size, overlap).split(Document(kind_text, {"k": 1}, "d"))
            assert chunk.text == kind_text.strip()
            assert chunk.id == uuid5_ids("d", 1)[0]


@pytest.mark.parametrize("name", sorted(KINDS))
def test_sizes_and_overlaps_at_their_limits_cut_as_the_reference(name: str) -> None:
    # The smallest size (11), the largest overlap the size allows (size - 1, capped at
    # size - 11) and sizes around the text's length, against the reference loop.
    text = KINDS[name]
    n = len(text)
    for size in (11, 12, 13, 21, 64, n - 1, n, n + 1, n + 11, 2 * n):
        for overlap in sorted({0, 1, size // 2, size - 11, size - 10, size - 1}):
            if not 0 <= overlap < size:
                continue
            chunker = Chunker(size, overlap)
            doc = Document(text, {}, "d")
            got = texts_of(chunker.split(doc))
            assert got == texts_of(reference_split(chunker, doc))
            assert all(len(t) <= size for t in got)


# ---------------------------------------------------------------- whitespace and string kinds


@pytest.mark.parametrize("kind", ["", "\xe9", "\u65e5", "\U0001f600"])
def test_texts_of_whitespace_only_make_no_chunks(kind: str) -> None:
    # Every whitespace character alone, repeated, and all of them, in a text of each
    # kind (the widening character is outside, so it is the content).
    chunker = Chunker(40, 10)
    for space in [*WHITESPACE, WHITESPACE]:
        assert chunker.split(Document(space * 60, {}, "d")) == []
        if kind:
            [chunk] = chunker.split(Document(space * 30 + kind * 10 + space * 30, {}, "d"))
            assert chunk.text == kind * 10


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_kind_of_string_cuts_as_the_reference(name: str) -> None:
    text = KINDS[name]
    for size, overlap in [(500, 50), (40, 10), (11, 0), (100, 99)]:
        chunker = Chunker(size, overlap)
        doc = Document(text, {"kind": name}, "doc")
        chunks = chunker.split(doc)
        assert texts_of(chunks) == texts_of(reference_split(chunker, doc))
        assert [c.id for c in chunks] == uuid5_ids("doc", len(chunks))
        assert all(type(c.text) is str for c in chunks)


def test_a_50_mb_line_is_cut_within_the_size() -> None:
    # One line of 50 million characters (no newline; words, then no whitespace at all).
    text = "word " * 5_000_000 + "x" * 25_000_000
    chunker = Chunker(2_000, 200)
    got = [c.text for c in chunker.iter_split(Document(text, {}, "d"))]
    assert len(got) == 26_390 and max(map(len, got)) == 2_000
    # The same shape, smaller, cuts exactly as the reference loop.
    small = Document("word " * 50_000 + "x" * 250_000, {}, "d")
    assert texts_of(chunker.split(small)) == texts_of(reference_split(chunker, small))


# ---------------------------------------------------------------- hostile strings


class Shouting(str):
    """A str subclass whose methods lie: the chunker must cut its characters, not them."""

    def __getitem__(self, key: Any) -> str:
        return str.__getitem__(self, key).upper()

    def rfind(self, *args: Any) -> int:
        return -1

    def find(self, *args: Any) -> int:
        return -1

    def isascii(self) -> bool:
        return False

    def rstrip(self, chars: str | None = None) -> str:
        return ""

    def encode(self, encoding: str = "utf-8", errors: str = "strict") -> bytes:
        return b"not the id"


def test_a_str_subclass_text_is_cut_as_its_characters() -> None:
    plain = "Sentence one here. Sentence two here!\n\nA new paragraph of words. " * 30
    chunker = Chunker(80, 20)
    expected = chunker.split(Document(plain, {}, "d"))
    got = chunker.split(Document(Shouting(plain), {}, "d"))
    assert got == expected
    assert all(type(c.text) is str for c in got)


def test_a_str_subclass_id_is_kept_and_hashed_as_its_characters() -> None:
    doc_id = Shouting("doc-\xe9")
    chunks = Chunker(40, 10).split(Document("Some words here. " * 20, {}, doc_id))
    assert all(c.doc_id is doc_id for c in chunks)
    assert [c.id for c in chunks] == uuid5_ids("doc-\xe9", len(chunks))


@pytest.mark.parametrize("text", ["", "   \n\t ", "Some words to cut. " * 20])
def test_an_id_that_is_not_a_str_is_refused_whatever_the_text(text: str) -> None:
    for bad in (123, None, b"doc"):
        with pytest.raises(ArgumentTypeError, match=r"Document\.id must be a str"):
            Chunker(40, 10).split(Document(text, {}, bad))  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["", "Some words to cut. " * 20])
def test_an_id_with_a_lone_surrogate_is_refused_whatever_the_text(text: str) -> None:
    # What TextFiles makes of a file name that is not UTF-8 (os.fsdecode's surrogates).
    with pytest.raises(InvalidArgumentError, match="lone surrogate"):
        Chunker(40, 10).split(Document(text, {}, "/data/caf\udce9.txt"))


def test_a_text_that_is_not_a_str_is_refused() -> None:
    # Document refuses it; a frozen dataclass can still be forced.
    for bad in (b"bytes text here", None, 42):
        doc = Document("placeholder")
        object.__setattr__(doc, "text", bad)
        with pytest.raises(ArgumentTypeError, match=r"Document\.text must be str"):
            Chunker(40, 10).split(doc)


class LoggedDocument(Document):
    """A Document subclass (frozen, slotted) that counts how often its fields are read."""

    __slots__ = ()
    reads: list[str] = []  # noqa: RUF012 (a class-level log on purpose)

    def __getattribute__(self, name: str) -> Any:
        if name in ("text", "id", "metadata"):
            LoggedDocument.reads.append(name)
        return super().__getattribute__(name)


def test_a_document_subclass_is_split_reading_each_field_once() -> None:
    LoggedDocument.reads.clear()
    doc = LoggedDocument("Words of a subclassed document. " * 10, {"k": [1]}, "d")
    chunks = Chunker(60, 10).split(doc)
    assert chunks == Chunker(60, 10).split(Document(doc.text, {"k": [1]}, "d"))
    LoggedDocument.reads.clear()
    Chunker(60, 10).split(doc)
    assert sorted(LoggedDocument.reads) == ["id", "metadata", "text"]


# ---------------------------------------------------------------- metadata that is not a dict


class CountingDict(dict[str, Any]):
    copies = 0

    def copy(self) -> CountingDict:
        CountingDict.copies += 1
        return CountingDict(self)


@pytest.mark.parametrize(
    "make",
    [
        lambda: CountingDict(k=[1]),
        lambda: OrderedDict(k=[1]),
        lambda: defaultdict(list, k=[1]),
        lambda: MappingProxyType({"k": [1]}),
    ],
)
def test_metadata_mappings_are_copied_by_their_own_copy(make: Callable[[], Any]) -> None:
    metadata = make()
    CountingDict.copies = 0
    chunks = Chunker(60, 10).split(Document("Mapping metadata words. " * 20, metadata, "d"))
    expected = metadata.copy()
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.metadata == dict(metadata)
        assert type(chunk.metadata) is type(expected)
        assert chunk.metadata is not metadata
        assert chunk.metadata["k"] is metadata["k"]  # a shallow copy, as dict.copy()
    if type(metadata) is CountingDict:
        assert CountingDict.copies == len(chunks) + 1


class Collider:
    """A metadata key whose ``__eq__`` runs while a dict holding it is copied."""

    def __init__(self, on_eq: Callable[[], None]) -> None:
        self.on_eq = on_eq

    def __hash__(self) -> int:
        return 7  # every Collider collides

    def __eq__(self, other: object) -> bool:
        self.on_eq()
        return self is other


def sparse_dict(keys: list[Collider]) -> dict[Any, Any]:
    """A dict that ``dict.copy()`` rebuilds key by key (comparing colliding keys)."""
    out: dict[Any, Any] = dict.fromkeys(keys, 1)
    for i in range(40):
        out[i] = i
    for i in range(40):
        del out[i]
    return out


def test_a_metadata_copy_that_raises_propagates_and_leaks_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    armed: list[int] = []

    def boom() -> None:
        if armed:
            raise KeyError("a key's __eq__ failed")

    metadata = sparse_dict([Collider(boom), Collider(boom)])
    doc_id = "".join(["doc", "-id"])
    text = "Text for a failing copy. " * 20
    chunk_text = "".join(["a chunk's ", "text"])  # what the failed chunk held, shared
    armed.append(1)

    def counts() -> list[int]:
        return [sys.getrefcount(o) for o in (doc_id, metadata, text, chunk_text)]

    before = counts()
    for _ in range(200):
        with pytest.raises(KeyError, match="__eq__ failed"):
            Chunker(40, 10).split(Document(text, metadata, doc_id))
    monkeypatch.setattr(chunker_module, "_chunk_texts", lambda *_: iter([chunk_text] * 3))
    for _ in range(200):
        with pytest.raises(KeyError, match="__eq__ failed"):
            Chunker(40, 10).split(Document(text, metadata, doc_id))
    assert counts() == before


def test_metadata_mutated_by_another_thread_gives_whole_snapshots() -> None:
    # Each chunk's metadata is a copy of the dict as it was at one moment: a state the
    # other thread made (it updates both keys in one call), never a torn one, and the
    # split never fails. Between rounds the other thread is waited for, so rounds see
    # different states.
    metadata: dict[str, int] = {"a": 0, "b": 0}
    made = [0]
    stop = threading.Event()

    def mutate() -> None:
        while not stop.is_set():
            made[0] += 1
            metadata.update({"a": made[0], "b": made[0]})

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    thread = threading.Thread(target=mutate)
    thread.start()
    seen: list[dict[str, Any]] = []
    try:
        doc = Document("Shared metadata words. " * 2_000, metadata, "d")
        for _ in range(4):
            newest = max([m["a"] for m in seen], default=0)
            while made[0] <= newest + 1 and thread.is_alive():
                stop.wait(0.001)
            seen += [c.metadata for c in Chunker(60, 10).split(doc)]
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(switch)
    assert all(m.keys() == {"a", "b"} and m["a"] == m["b"] for m in seen)
    assert len({m["a"] for m in seen}) >= 4


# ---------------------------------------------------------------- threads


def test_threads_splitting_the_same_and_different_documents_agree() -> None:
    docs = [Document(KINDS[name] * 3, {"kind": name}, name) for name in sorted(KINDS)]
    chunkers = [Chunker(60, 20), Chunker(500, 50), Chunker(11, 0)]
    expected = {(d.id, i): c.split(d) for d in docs for i, c in enumerate(chunkers)}
    jobs = [(d, i) for d in docs for i in range(len(chunkers))] * 3
    wrong: list[tuple[str, int]] = []
    done: list[int] = []
    start = threading.Barrier(4)

    def work(offset: int) -> None:
        start.wait()
        for doc, i in jobs[offset:] + jobs[:offset]:  # the same jobs, out of step
            split = chunkers[i].split if offset % 2 else chunkers[i].iter_split
            if list(split(doc)) != expected[(doc.id, i)]:
                wrong.append((doc.id, i))
            done.append(1)

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(k * 7,)) for k in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(switch)
    assert wrong == []
    assert len(done) == 4 * len(jobs)


# ---------------------------------------------------------------- references and memory


def rss_pages() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1])


def test_many_splits_hold_no_references_and_no_memory() -> None:
    # About 74,000 chunks a round, 300,000 in all: what the chunks held is released with
    # them (the shared document id, metadata dict and values, the text), the number of
    # live objects is back where it was, and the process does not grow round after round.
    value = object()
    metadata = {"source": "a.txt", "value": value}
    doc_id = "".join(["doc", "-id"])
    text = ("A sentence here. " * 30 + "\n\n") * 400 + "\U0001f600 word " * 1_000
    doc = Document(text, metadata, doc_id)
    chunker = Chunker(60, 20)

    def one_round() -> int:
        made = 0
        for i in range(12):
            chunks = chunker.split(doc) if i % 2 else list(chunker.iter_split(doc))
            made += len(chunks)
        it = chunker.iter_split(doc)  # abandoned midway
        next(it)
        del it, chunks
        return made

    def refs() -> list[int]:
        return [sys.getrefcount(o) for o in (metadata, value, doc_id, text)]

    made = one_round()
    gc.collect()
    before, objects, rss = refs(), len(gc.get_objects()), rss_pages()
    for _ in range(3):
        assert one_round() == made
    gc.collect()
    assert made > 70_000
    assert refs() == before
    assert len(gc.get_objects()) <= objects + 10
    # A leak of one chunk text or metadata copy per chunk: 220,000 objects, tens of MB.
    assert rss_pages() - rss < 2_048  # 8 MB of 4 kB pages


def test_bad_arguments_and_failures_midway_leak_no_references() -> None:
    metadata = {"k": "v"}
    doc_id = "".join(["doc", "-id"])
    text = "Words that are cut into chunks. " * 40

    def failing_texts() -> Iterator[str]:
        yield "a first chunk text"
        raise ValueError("the text source broke")

    def attempts() -> None:
        for size, overlap in [(10, 0), (50, 50), (50, -1), (True, 0)]:
            with pytest.raises(ValueError):
                Chunker(size, overlap)
        with pytest.raises(ArgumentTypeError):
            Chunker(40, 10).split(Document(text, metadata, 7))  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError):
            Chunker(40, 10).split(Document(text, metadata, doc_id + "\ud800"))
        made = Chunker(40, 10)._chunks(Document(text, metadata, doc_id))
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(chunker_module, "_chunk_texts", lambda *_: failing_texts())
            broken = Chunker(40, 10)._chunks(Document(text, metadata, doc_id))
        assert next(broken).text == "a first chunk text"
        with pytest.raises(ValueError, match="the text source broke"):
            next(broken)
        assert list(broken) == []
        next(made)
        del made, broken

    attempts()
    gc.collect()
    before = [sys.getrefcount(o) for o in (metadata, doc_id, text)]
    for _ in range(300):
        attempts()
    gc.collect()
    assert [sys.getrefcount(o) for o in (metadata, doc_id, text)] == before


# ---------------------------------------------------------------- settings changed after creation


def test_settings_set_after_creation_are_checked_and_used() -> None:
    doc = Document("Some words here. And more words follow!\n\nNew para. " * 30, {}, "d")
    chunker = Chunker(500, 450)
    # A chunk size at or under the overlap once ran the loop forever: now refused as in
    # the constructor.
    for size in (100, 450, 5):
        with pytest.raises(InvalidArgumentError):
            chunker.chunk_size = size
    with pytest.raises(InvalidArgumentError):
        chunker.overlap = 500
    assert (chunker.chunk_size, chunker.overlap) == (500, 450)
    assert chunker.split(doc) == Chunker(500, 450).split(doc)
    # Valid changes are used (a new overlap was once ignored).
    chunker.overlap = 40
    chunker.chunk_size = 100
    assert repr(chunker) == "Chunker(chunk_size=100, overlap=40)"
    assert chunker.split(doc) == Chunker(100, 40).split(doc)
    chunker.overlap = 0
    assert chunker.split(doc) == Chunker(100, 0).split(doc)


class Odd(int):
    """An int whose arithmetic lies: the chunker must use its value."""

    def __add__(self, other: object) -> int:
        return 7

    def __sub__(self, other: object) -> int:
        return 7

    def __le__(self, other: object) -> bool:
        return False


def test_int_subclass_settings_are_used_as_their_values() -> None:
    doc = Document("Some words here. And more words follow!\n\nNew para. " * 30, {}, "d")
    chunker = Chunker(Odd(60), Odd(20))
    assert type(chunker.chunk_size) is int and type(chunker.overlap) is int
    assert chunker.split(doc) == Chunker(60, 20).split(doc)
