"""The kit of the local text models (the embedder and the cross-encoder): a model folder's
files, an onnxruntime session, a Hugging Face tokenizer, token ids padded into the model's
inputs, and :class:`OnnxTextModel`, the base holding them. Nothing is downloaded: the files
are on disk."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from pywrapai_graph.errors import ConfigurationError, MissingExtraError, ProviderError

try:
    import onnxruntime as ort
    from tokenizers import Encoding, Tokenizer
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingExtraError("onnxruntime and tokenizers", "local") from exc

__all__ = [
    "Encoding",
    "OnnxTextModel",
    "Tokenizer",
    "cut_text",
    "load_session",
    "load_tokenizer",
    "model_files",
    "run_session",
    "token_inputs",
]

#: How far back a cut looks for a whitespace, so that no word is split.
_WORD_REACH = 256


def cut_text(text: str, budget: int) -> str:
    """``text`` cut to at most ``budget`` characters, at a whitespace when one is near (a word
    cut in two would tokenize differently from the whole word)."""
    if len(text) <= budget:
        return text
    for end in range(budget, max(budget - _WORD_REACH, 0), -1):
        if text[end].isspace():
            return text[:end]
    return text[:budget]


def model_files(model_dir: str | os.PathLike[str]) -> tuple[Path, Path]:
    """(model.onnx, tokenizer.json) of a model folder.

    Raises:
        ConfigurationError: the folder lacks one of them.
    """
    folder = Path(model_dir)
    model, tokenizer = folder / "model.onnx", folder / "tokenizer.json"
    missing = [p.name for p in (model, tokenizer) if not p.is_file()]
    if missing:
        raise ConfigurationError(
            f"model_dir {str(folder)!r} lacks {' and '.join(missing)}; it must hold the "
            "model exported to ONNX (model.onnx) and its Hugging Face tokenizer.json"
        )
    return model, tokenizer


def load_session(path: Path, threads: int) -> tuple[ort.InferenceSession, set[str]]:
    """An onnxruntime CPU session of a text model and the names of its inputs.

    Raises:
        ConfigurationError: the file cannot be loaded, or the model does not take
            ``input_ids`` and ``attention_mask``.
    """
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    try:
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own untyped errors
        raise ConfigurationError(f"cannot load ONNX model {str(path)!r}: {exc}") from exc
    inputs = {i.name for i in session.get_inputs()}
    if not {"input_ids", "attention_mask"} <= inputs:
        raise ConfigurationError(
            f"{str(path)!r} is not a text encoder: it takes {sorted(inputs)}, "
            "not input_ids and attention_mask"
        )
    return session, inputs


def load_tokenizer(path: Path, max_length: int) -> Tokenizer:
    """The tokenizer of ``tokenizer.json``, truncating at ``max_length`` tokens, no padding
    (a batch is padded to its own longest text by :func:`token_inputs`).

    Raises:
        ConfigurationError: the file cannot be loaded.
    """
    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as exc:  # the tokenizers library raises plain Exception
        raise ConfigurationError(f"cannot load tokenizer {str(path)!r}: {exc}") from exc
    tokenizer.enable_truncation(max_length)
    tokenizer.no_padding()
    return tokenizer


def token_inputs(
    encodings: Sequence[Encoding], inputs: set[str]
) -> dict[str, npt.NDArray[np.int64]]:
    """The model's inputs for a batch: ids, attention mask and (when the model takes them)
    segment ids, zero-padded to the longest encoding."""
    width = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(encodings), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    types = np.zeros_like(ids)
    for row, enc in enumerate(encodings):
        ids[row, : len(enc.ids)] = enc.ids
        mask[row, : len(enc.ids)] = 1
        types[row, : len(enc.ids)] = enc.type_ids
    feed = {"input_ids": ids, "attention_mask": mask}
    if "token_type_ids" in inputs:
        feed["token_type_ids"] = types
    return feed


def run_session(
    session: ort.InferenceSession, feed: dict[str, npt.NDArray[np.int64]], provider: str
) -> npt.NDArray[np.float32]:
    """The model's first output as float32.

    Raises:
        ProviderError: the model failed on these inputs.
    """
    try:
        out = session.run(None, feed)[0]
    except Exception as exc:  # onnxruntime raises its own untyped errors
        raise ProviderError(f"{provider}: the ONNX model failed: {exc}", provider=provider) from exc
    return np.asarray(out, dtype=np.float32)


class OnnxTextModel:
    """Base of the local text models: their settings, session and tokenizer, and the batches
    they run (texts grouped by length, so that little padding is computed)."""

    provider = "local"
    max_batch = 4096

    def _settle(self, threads: int, max_length: int, batch_size: int, shortest: int) -> None:
        """Take the settings, or raise ConfigurationError for one the model cannot run with."""
        if threads < 1 or max_length < shortest or batch_size < 1:
            raise ConfigurationError(
                f"threads and batch_size must be >= 1 and max_length >= {shortest}, got "
                f"threads={threads}, max_length={max_length}, batch_size={batch_size}"
            )
        self.max_length = max_length
        self.batch_size = batch_size

    def _load(self, files: tuple[Path, Path], name: str, threads: int) -> None:
        """Open ``(model.onnx, tokenizer.json)`` as the model called ``name``."""
        self.default_model = name
        self._session, self._inputs = load_session(files[0], threads)
        self._tokenizer = load_tokenizer(files[1], self.max_length)

    def close(self) -> None:
        """Nothing to release (the session is freed with the object)."""

    def _batches(self, encodings: Sequence[Encoding]) -> Iterator[list[int]]:
        """The indexes of ``encodings`` in batches of ``batch_size``, shortest first."""
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self.batch_size):
            yield order[start : start + self.batch_size]
