"""Content digests and manifests read cheaply, yet exactly as before.

A re-ingest decides "unchanged" by comparing a document's digest with the one its stored
manifest holds, so a digest that changed by one bit would re-ingest every existing store.
These tests hold today's digest (the bytes ``TextFiles`` read, hashed as read) to the
computation stores were filled with before, and the manifest reader to ``json.loads``.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pywrapai_graph import Chunker, Document, SQLiteVectorStore
from pywrapai_graph.adapters.sources.text_files import TextFiles
from pywrapai_graph.application.ingest_documents import IngestDocuments, content_hash
from pywrapai_graph.domain.manifest import DocumentManifest, EmbedderIdentity, manifests_from_json
from pywrapai_graph.testing.contracts.vector_store import WordEmbedder


def digest_before(doc: Document, chunker: object) -> str:
    """The digest as computed when existing stores were filled (main at f244e64)."""
    digest = hashlib.sha256()
    digest.update(repr(chunker).encode("utf-8", "surrogatepass") + b"\x00")
    try:
        metadata = json.dumps(doc.metadata, sort_keys=True, ensure_ascii=False, default=repr)
    except ValueError:
        metadata = repr(sorted(doc.metadata.items(), key=lambda kv: str(kv[0])))
    digest.update(metadata.encode("utf-8", "surrogatepass") + b"\x00")
    digest.update(doc.text.encode("utf-8", "surrogatepass"))
    digest.update(b"\x00")
    return digest.hexdigest()


# Printed by content_hash on main at f244e64 (before this change), (Chunker(500, 50), None).
PINNED = [
    (
        Document(
            "\ufeffTitle\r\nLine two \u00e9\u20ac\U0001f600\r\n",
            metadata={"source": "a.md", "path": "/x/a.md"},
            id="a",
        ),
        "f3523f35bcbfc2789d23cd5ce30bfdee692c1189acbf923e207d312d06fe59fd",
        "e2119ffb74f06647621b7f180c3a017a05c2c36ad5fea03bfeeaa50721a7ddec",
    ),
    (
        Document(
            "plain ascii\n\nsecond paragraph",
            metadata={"source": "b.txt", "n": 3, "tags": ["x", "y"], "ok": True, "none": None},
            id="b",
        ),
        "25f9c9104fec75318a5a6fe8aaadc3484fe0fd1a83d638e78b669710d1d7d756",
        "324899fbc6047d55cbb79ce050c675b5aa5cacff053f7829cd8819d4b2e3c00e",
    ),
    (
        Document("", metadata={}, id="c"),
        "5d914c1429783bca412c5de8c3f89cbf9c6ad38c313252f27760ef0aa0665798",
        "afbf8ca2477b9be3c90f99c5b3ce8dc0b57c6aec14b91743cf156bb40eb71f54",
    ),
    (
        Document("lone \ud800 surrogate", metadata={"k\u00e9y": 'v"al\\ue\n'}, id="d"),
        "287ab40c2c122ed664105774311074c0dba7c36f70e0a60491a4b0b80f27561a",
        "be01cc14b45bfcb5366e2d7666e16addc7a48a273a72b36b41413e3b9aea64df",
    ),
]


@pytest.mark.parametrize(("doc", "with_chunker", "without"), PINNED)
def test_digests_are_the_ones_stores_were_filled_with(
    doc: Document, with_chunker: str, without: str
) -> None:
    assert content_hash(doc, Chunker(500, 50)) == with_chunker
    assert content_hash(doc, None) == without


scalars = st.one_of(
    st.text(),
    st.integers(),
    st.floats(allow_nan=True),
    st.booleans(),
    st.none(),
)
metadata_values = st.one_of(scalars, st.lists(scalars, max_size=3))


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(),
    metadata=st.one_of(
        st.dictionaries(st.text(), st.text(), max_size=4),
        st.dictionaries(st.text(), metadata_values, max_size=4),
    ),
)
def test_digest_equals_the_computation_before_for_any_document(
    text: str, metadata: dict[str, Any]
) -> None:
    doc = Document(text, metadata=metadata, id="x")
    chunker = Chunker(200, 20)
    assert content_hash(doc, chunker) == digest_before(doc, chunker)


def test_metadata_that_is_not_json_hashes_as_before() -> None:
    doc = Document("t", metadata={"score": math.nan, "n": 1}, id="x")
    assert content_hash(doc, None) == digest_before(doc, None)


FILES: dict[str, bytes] = {
    "ascii.txt": b"plain words\n\nmore words\n",
    "bom.md": "\ufeff# Title\n\nbody \u00e9\n".encode(),
    "crlf.txt": b"line one\r\nline two\r\n\r\nline three\r\n",
    "wide.rst": "\u4e2d\u6587 \U0001f600 \u20ac\r\n".encode(),
    "empty.txt": b"",
    "one.txt": b"a",
    "latin1.txt": "caf\xe9".encode("latin-1"),  # not UTF-8: skipped, as before
}


def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "files"
    root.mkdir()
    for name, data in FILES.items():
        (root / name).write_bytes(data)
    return root


def test_files_hash_as_before_and_a_store_filled_before_sees_them_unchanged(
    tmp_path: Path,
) -> None:
    root = corpus(tmp_path)
    chunker = Chunker(50, 5)
    docs = list(TextFiles([root]).documents())
    assert sorted(Path(d.id).name for d in docs) == sorted(set(FILES) - {"latin1.txt"})
    for doc in docs:  # the text is the file, byte for byte (BOM and CRLF kept)
        assert doc.text.encode("utf-8") == FILES[Path(doc.id).name]

    # A store as the code before this change filled it: its manifests hold digest_before.
    store = SQLiteVectorStore(tmp_path / "s.db")
    embedder = WordEmbedder(16)
    identity = EmbedderIdentity(embedder.provider, embedder.model, 16)
    for doc in docs:
        chunks = chunker.split(doc)
        vectors = embedder.embed([c.text for c in chunks]) if chunks else []
        for chunk, vector in zip(chunks, vectors, strict=True):
            chunk.embedding = vector
        manifest = DocumentManifest(doc.id, digest_before(doc, chunker), len(chunks), identity)
        store.replace_document(manifest, chunks)

    report = IngestDocuments(embedder, store, chunker)(TextFiles([root]).documents())
    assert sorted(report.unchanged) == sorted(d.id for d in docs)
    assert report.chunks_written == 0
    store.close()


# ---------------------------------------------------------------- manifests read back


manifests = st.builds(
    DocumentManifest,
    doc_id=st.text(max_size=8),
    content_hash=st.one_of(st.text(), st.text("0123456789abcdef", min_size=64, max_size=64)),
    chunk_count=st.integers(min_value=0, max_value=10**12),
    embedder=st.builds(
        EmbedderIdentity,
        provider=st.text(max_size=10),
        model=st.text(max_size=10),
        dimension=st.integers(min_value=1, max_value=4096),
    ),
)


@settings(max_examples=300, deadline=None)
@given(items=st.lists(manifests, max_size=5))
def test_manifests_read_back_as_written(items: list[DocumentManifest]) -> None:
    rows = [(m.doc_id, m.to_json()) for m in items]
    read = list(manifests_from_json(rows))
    assert [m for _, m in read] == [DocumentManifest.from_json(i, t) for i, t in rows] == items
    assert [i for i, _ in read] == [m.doc_id for m in items]


def by_json(doc_id: str, text: str) -> DocumentManifest | type[Exception]:
    try:
        return DocumentManifest.from_json(doc_id, text)
    except Exception as exc:  # the reader must fail alike
        return type(exc)


def by_reader(doc_id: str, text: str) -> DocumentManifest | type[Exception]:
    try:
        return dict(manifests_from_json([(doc_id, text)]))[doc_id]
    except Exception as exc:
        return type(exc)


EMBEDDER = '{"dimension": 4, "model": "m", "provider": "p"}'


@pytest.mark.parametrize(
    "text",
    [
        '{"chunk_count": 2, "content_hash": "abc", "embedder": ' + EMBEDDER + "}",
        '{"chunk_count": 02, "content_hash": "abc", "embedder": ' + EMBEDDER + "}",
        '{"chunk_count": -1, "content_hash": "abc", "embedder": ' + EMBEDDER + "}",
        '{"chunk_count": 2, "content_hash": "a\\"b", "embedder": ' + EMBEDDER + "}",
        '{"chunk_count": 2, "content_hash": "a\nb", "embedder": ' + EMBEDDER + "}",
        '{"chunk_count": 2, "content_hash": "\\u00e9", "embedder": ' + EMBEDDER + "}",
        '{"chunk_count":2,"content_hash":"abc","embedder":' + EMBEDDER + "}",
        '{"chunk_count": 2, "content_hash": "abc", "embedder": ' + EMBEDDER + ', "x": {}}',
        '{"chunk_count": 2, "content_hash": "abc", "embedder": {"dimension": 4}}',
        '{"chunk_count": 2, "content_hash": "abc", "embedder": {"dimension": 4,}}',
        '{"chunk_count": 2, "content_hash": "abc", "embedder": {\n"dimension": 4, '
        '"model": "}", "provider": "{"}}',
        "not json",
    ],
)
def test_manifests_in_other_forms_read_as_json_reads_them(text: str) -> None:
    assert by_reader("d", text) == by_json("d", text)
