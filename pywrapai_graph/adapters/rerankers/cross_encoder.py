"""A local reranker: a cross-encoder in ONNX, from a folder the user names, run by onnxruntime.

No PyTorch and no network: the folder holds ``model.onnx`` (a sequence-classification model
taking ``input_ids``, ``attention_mask`` and optionally ``token_type_ids``, as Hugging Face
exports a cross-encoder such as ms-marco-MiniLM-L-6-v2) and its ``tokenizer.json``. Query and
passage are encoded as one pair; a model with one output logit is scored by its sigmoid, a
two-class model by the probability of its second ("relevant") class, so scores are in [0, 1]
and keep the model's order.
"""

from __future__ import annotations

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
from pywrapai_graph.errors import ConfigurationError, ProviderError
from pywrapai_graph.ports.rerank_provider import RerankProvider, RerankScores

__all__ = ["LocalCrossEncoder"]

#: Characters of a passage tokenized per token of the window: a passage's cost is bounded by
#: the window, not by its length (the tokenizer then truncates the pair exactly).
_CHARS_PER_TOKEN = 8


def _relevance(logits: npt.NDArray[np.float32], rows: int) -> npt.NDArray[np.float64]:
    """Scores in [0, 1] from a (rows,), (rows, 1) or (rows, 2) logit array."""
    values = logits.astype(np.float64).reshape(rows, -1)
    if values.shape[1] == 1:
        return 1.0 / (1.0 + np.exp(-values[:, 0]))
    if values.shape[1] == 2:
        return 1.0 / (1.0 + np.exp(values[:, 0] - values[:, 1]))
    raise ProviderError(
        f"local: the reranker gave {values.shape[1]} scores per pair; a cross-encoder gives "
        "one logit (or two classes)",
        provider="local",
    )


class LocalCrossEncoder(OnnxTextModel, RerankProvider):
    """Scores (query, passage) pairs with a cross-encoder on this machine.

    Args:
        model_dir: the folder holding ``model.onnx`` and ``tokenizer.json`` (required:
            nothing is downloaded).
        model_name: the name recorded in the ledger (default: the folder name).
        threads: onnxruntime intra-op threads.
        max_length: tokens per (query, passage) pair; longer pairs are truncated.
        batch_size: pairs per onnxruntime call (grouped by length to pad little).

    Raises:
        ConfigurationError: no ``model_dir``, a missing or unloadable file, or a bad setting.
    """

    def __init__(
        self,
        *,
        model_dir: str | os.PathLike[str] | None = None,
        model_name: str | None = None,
        threads: int = 1,
        max_length: int = 512,
        batch_size: int = 16,
    ) -> None:
        if model_dir is None:
            raise ConfigurationError(
                "the local reranker needs model_dir=: a folder holding a cross-encoder "
                "exported to ONNX (model.onnx) and its tokenizer.json; nothing is downloaded"
            )
        self._settle(threads, max_length, batch_size, shortest=4)
        files = model_files(model_dir)
        self._load(files, model_name or Path(model_dir).resolve().name, threads)

    def __repr__(self) -> str:
        return f"LocalCrossEncoder(model={self.default_model!r})"

    def _run(self, encodings: Sequence[Encoding]) -> npt.NDArray[np.float64]:
        logits = run_session(self._session, token_inputs(encodings, self._inputs), "local")
        return _relevance(logits, len(encodings))

    def score(self, query: str, texts: Sequence[str], model: str) -> RerankScores:
        if not texts:
            return RerankScores([], 0, self.default_model)
        budget = self.max_length * _CHARS_PER_TOKEN
        pairs = [(cut_text(query, budget), cut_text(t, budget)) for t in texts]
        encodings = self._tokenizer.encode_batch(pairs)
        scores = np.empty(len(encodings), dtype=np.float64)
        for rows in self._batches(encodings):
            scores[rows] = self._run([encodings[i] for i in rows])
        tokens = sum(len(e.ids) for e in encodings)
        return RerankScores([float(s) for s in scores], tokens, self.default_model)
