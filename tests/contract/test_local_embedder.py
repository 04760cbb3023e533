"""The local ONNX embedder: semantic retrieval with no network, files from the [local] extra."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pywrapai import Embedder
from pywrapai_graph import Document, InMemoryVectorStore, VectorRetriever
from pywrapai_graph.adapters.embedders import local
from pywrapai_graph.composition.container import build_container
from pywrapai_graph.errors import ConfigurationError, MissingExtraError

# Answers and questions share almost no words: only a semantic model ranks them right.
FAQ = {
    "refund": "Money goes back to your card within five business days after we receive the parcel.",
    "password": "To regain access, use the 'forgot credentials' link on the sign-in page.",
    "shipping": "Parcels travel by courier and usually arrive in two to four days.",
    "hours": "Our support staff answers from 9 am until 6 pm, Monday through Friday.",
    "cancel": "You can end your plan at any moment from the billing settings.",
    "pets": "Dogs and cats are welcome in every room of the hotel for a small fee.",
}
QUESTIONS = {
    "refund": "How long until I am reimbursed for a returned item?",
    "password": "I cannot log in because I lost my password",
    "shipping": "When will my order be delivered?",
    "hours": "What time is customer service open?",
    "cancel": "How do I unsubscribe from my subscription?",
    "pets": "Can I bring my puppy along?",
}


@pytest.fixture(scope="module")
def embedder() -> Iterator[Embedder]:
    with Embedder(provider="local") as e:
        yield e


def test_faq_questions_find_their_answer_first(embedder: Embedder) -> None:
    retriever = VectorRetriever(embedder, InMemoryVectorStore(), k=1)
    retriever.add_documents([Document(text, id=key) for key, text in FAQ.items()])
    for key, question in QUESTIONS.items():
        [hit] = retriever.retrieve(question)
        assert hit.chunk.doc_id == key, question


def test_vectors_are_unit_length_deterministic_and_batch_independent(embedder: Embedder) -> None:
    texts = list(FAQ.values())
    together = np.asarray(embedder.embed(texts))
    alone = np.asarray([embedder.embed_one(t) for t in texts])
    assert together.shape == (len(texts), 384)
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    # grouped by length and padded differently, the vectors stay the same
    assert np.allclose(together, alone, atol=1e-5)


def test_identity_and_usage(embedder: Embedder) -> None:
    assert (embedder.provider, embedder.model, embedder.dimension) == (
        "local",
        "all-MiniLM-L6-v2-int8",
        384,
    )
    before = len(embedder.tokens.records)
    embedder.embed(["one short text"])
    record = embedder.tokens.records[before]
    assert record.provider == "local"
    assert record.usage.input_tokens == 5  # [CLS] one short text [SEP]
    assert record.cost_usd == 0.0


def test_truncation_is_counted_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    short = Embedder(provider="local", max_length=8)
    with caplog.at_level(logging.WARNING):
        short.embed(["a b c d e f g h i j k l", "tiny", "also a rather long sentence here ok"])
    assert short.truncated_texts == 2
    assert "2 of 3 texts exceed 8 tokens" in caplog.text


def test_model_dir_loads_the_named_files(tmp_path: Path, embedder: Embedder) -> None:
    model, tokenizer = local.default_model_files()
    (tmp_path / "model.onnx").symlink_to(model)
    (tmp_path / "tokenizer.json").symlink_to(tokenizer)
    mine = Embedder(provider="local", model_dir=tmp_path, threads=2)
    assert mine.model == tmp_path.name
    assert np.allclose(mine.embed_one("hello"), embedder.embed_one("hello"), atol=1e-5)


def test_model_dir_without_files_says_what_is_missing(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"not a model")
    with pytest.raises(ConfigurationError, match=r"lacks tokenizer\.json"):
        Embedder(provider="local", model_dir=tmp_path)
    _, tokenizer = local.default_model_files()
    (tmp_path / "tokenizer.json").symlink_to(tokenizer)
    with pytest.raises(ConfigurationError, match="cannot load ONNX model"):
        Embedder(provider="local", model_dir=tmp_path)


def test_bad_settings_are_rejected() -> None:
    with pytest.raises(ConfigurationError, match="threads"):
        Embedder(provider="local", threads=0)


def test_config_falls_back_to_hashing_without_the_packages(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    container = build_container({"embedder": {"provider": "local"}})
    assert container.embedder().provider == "local"
    # the model package is not importable: as on an install without the [local] extra
    monkeypatch.setattr(local, "_MODEL_PACKAGE", "no_such_model_package_here")
    with pytest.raises(MissingExtraError, match=r"pywrapai-graph\[local\]"):
        Embedder(provider="local")
    with caplog.at_level(logging.WARNING):
        fallback = build_container({"embedder": {"provider": "local"}}).embedder()
    assert fallback.provider == "hashing"
    assert "falling back" in caplog.text


class _CountingTokenizer:
    """The real tokenizer, counting the characters it is handed."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.chars = 0

    def encode_batch(self, texts: list[str]) -> Any:
        self.chars += sum(len(t) for t in texts)
        return self.tokenizer.encode_batch(texts)


PROSE = " ".join(f"{text} ({i})" for i, text in enumerate(list(FAQ.values()) * 40))


def test_a_20_mb_text_costs_the_window_not_its_length() -> None:
    """Before: the whole text was tokenized, then truncated (44 s of CPU for 20 MB)."""
    provider = local.LocalEmbeddings()
    counting = _CountingTokenizer(provider._tokenizer)
    provider._tokenizer = counting  # type: ignore[assignment]
    huge = (PROSE + " ") * (20_000_000 // len(PROSE) + 1)
    assert len(huge) >= 20_000_000
    vectors, tokens, truncated = provider.embed_array([huge])
    assert counting.chars <= provider.max_length * 8
    assert (tokens, truncated) == (provider.max_length, 1)
    prefix, _, _ = provider.embed_array([PROSE[:4000]])  # 4,000 chars: over 256 tokens
    assert np.array_equal(vectors, prefix)


def test_a_long_run_of_whitespace_still_fills_the_window_from_whole_words() -> None:
    provider = local.LocalEmbeddings()
    spaced = "refunds " + " " * 100_000 + PROSE
    collapsed = "refunds " + PROSE  # whitespace runs make no tokens for this tokenizer
    a, tokens, truncated = provider.embed_array([spaced])
    b, _, _ = provider.embed_array([collapsed])
    assert np.array_equal(a, b)
    assert (tokens, truncated) == (provider.max_length, 1)
    short = "refunds " + " " * 100_000 + "take five days"
    _, tokens, truncated = provider.embed_array([short])
    assert truncated == 0 and tokens < provider.max_length


class _RecordingSession:
    """The real onnxruntime session, remembering the shape of each batch it is fed."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.shapes: list[tuple[int, int]] = []
        self.tokens = 0

    def run(self, outputs: Any, feed: dict[str, Any]) -> Any:
        self.shapes.append(feed["input_ids"].shape)
        self.tokens += int(feed["attention_mask"].sum())
        return self.session.run(outputs, feed)


def test_batches_are_bucketed_by_length_and_never_wider_than_the_window() -> None:
    provider = local.LocalEmbeddings(batch_size=8)
    # threads by default: half the CPUs this process may use (1 on 2 cores)
    assert provider.threads == max(1, len(os.sched_getaffinity(0)) // 2) == local.default_threads()
    assert provider._session.get_session_options().intra_op_num_threads == provider.threads
    recording = _RecordingSession(provider._session)
    provider._session = recording
    words = PROSE.split()
    rng = np.random.default_rng(4)
    texts = [" ".join(words[: int(n)]) for n in rng.integers(1, 400, size=60)]
    texts[7] = (PROSE + " ") * 2_000  # ~1.6 MB: over the window
    vectors, tokens, truncated = provider.embed_array(texts)
    assert vectors.shape == (60, 384) and truncated >= 1
    assert len(recording.shapes) == 8  # ceil(60 / 8)
    assert max(width for _, width in recording.shapes) <= provider.max_length
    assert recording.tokens == tokens
    # sorted by length, each batch pads to its own longest: little padding is computed
    padded = sum(rows * width for rows, width in recording.shapes)
    assert padded <= 1.15 * tokens
    # the order of the texts does not change a vector
    again, _, _ = provider.embed_array(texts[::-1])
    assert np.allclose(again[::-1], vectors, atol=1e-6)
