"""A tiny cross-encoder built on the spot, for testing rerankers without downloading a model.

:func:`write_tiny_cross_encoder` writes a real ONNX model and a real ``tokenizer.json`` into a
folder, in the shape Hugging Face exports a cross-encoder (``input_ids``, ``attention_mask``,
``token_type_ids`` in; one logit per pair out), so ``RerankModel(provider="local",
model_dir=folder)`` loads and runs it like any other. Its logit is readable by hand: the sum
of the ``weights`` of the passage's words that also occur in the query, plus ``bias``.
:func:`tiny_cross_encoder_logit` computes the same number in Python.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from pywrapai_graph.errors import InvalidArgumentError, MissingExtraError

__all__ = ["tiny_cross_encoder_logit", "write_tiny_cross_encoder"]

_SPECIAL = ("[PAD]", "[UNK]", "[CLS]", "[SEP]")
_WORD = re.compile(r"\w+|[^\w\s]+")


def tiny_cross_encoder_logit(
    query: str, passage: str, weights: Mapping[str, float], bias: float = 0.0
) -> float:
    """The logit the tiny model gives (query, passage): Σ weight of every passage word (each
    occurrence) that the query also contains, plus ``bias``."""
    asked = set(_WORD.findall(query.lower()))
    return bias + sum(weights.get(w, 0.0) for w in _WORD.findall(passage.lower()) if w in asked)


def write_tiny_cross_encoder(
    folder: str | Path, weights: Mapping[str, float], *, bias: float = 0.0, classes: int = 1
) -> Path:
    """Write ``model.onnx`` and ``tokenizer.json`` of a tiny cross-encoder into ``folder``.

    Args:
        folder: created when missing.
        weights: lower-case word → its weight; the vocabulary is these words (others are
            ``[UNK]``, weight 0).
        bias: added to every logit.
        classes: logits per pair. 1: the logit above; 2: a two-class model whose second
            ("relevant") logit exceeds the first by that logit (the same relevance); more: a
            model no reranker can read, for testing that it is refused.

    Returns:
        The folder.

    Raises:
        InvalidArgumentError: a weight key is not one lower-case word, or ``classes`` < 1.
        MissingExtraError: ``onnx`` (the ``dev`` extra) or ``tokenizers`` is not installed.
    """
    wanted: object = classes  # callers may pass anything at run time
    if isinstance(wanted, bool) or not isinstance(wanted, int) or wanted < 1:
        raise InvalidArgumentError(f"classes must be an int >= 1, got {classes!r}")
    words = sorted(weights)
    bad = [w for w in words if _WORD.fullmatch(w) is None or w != w.lower()]
    if bad:
        raise InvalidArgumentError(f"weights need lower-case single words as keys, got {bad!r}")
    vocab = {token: i for i, token in enumerate([*_SPECIAL, *words])}
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    _write_tokenizer(out / "tokenizer.json", vocab)
    _write_model(
        out / "model.onnx", [0.0] * len(_SPECIAL) + [weights[w] for w in words], bias, classes
    )
    return out


def _write_tokenizer(path: Path, vocab: dict[str, int]) -> None:
    try:
        from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    except ImportError as exc:
        raise MissingExtraError("tokenizers", "local") from exc
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tokenizer.save(str(path))


def _write_model(path: Path, weights: list[float], bias: float, classes: int) -> None:
    try:
        import numpy as np
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError as exc:
        raise MissingExtraError("onnx", "dev") from exc
    size = len(weights)
    constants = [
        numpy_helper.from_array(np.eye(size, dtype=np.float32), "one_hot"),
        numpy_helper.from_array(np.asarray(weights, dtype=np.float32), "weights"),
        numpy_helper.from_array(np.asarray([bias], dtype=np.float32), "bias"),
        # one logit: the score itself; two classes: (-score/2, +score/2), whose difference is it
        numpy_helper.from_array(
            np.linspace(-0.5, 0.5, classes, dtype=np.float32)
            if classes > 1
            else np.ones(1, np.float32),
            "per_class",
        ),
        numpy_helper.from_array(np.asarray([1], dtype=np.int64), "tokens_axis"),
        numpy_helper.from_array(np.asarray([2], dtype=np.int64), "last_axis"),
        numpy_helper.from_array(np.asarray(1.0, dtype=np.float32), "one"),
    ]
    node = helper.make_node
    nodes = [
        node("Gather", ["one_hot", "input_ids"], ["words"]),  # (batch, tokens, vocab)
        node("Cast", ["attention_mask"], ["mask"], to=TensorProto.FLOAT),
        node("Cast", ["token_type_ids"], ["second"], to=TensorProto.FLOAT),
        node("Sub", ["one", "second"], ["first"]),
        node("Mul", ["mask", "first"], ["query_mask_2d"]),
        node("Mul", ["mask", "second"], ["passage_mask_2d"]),
        node("Unsqueeze", ["query_mask_2d", "last_axis"], ["query_mask"]),
        node("Unsqueeze", ["passage_mask_2d", "last_axis"], ["passage_mask"]),
        node("Mul", ["words", "query_mask"], ["query_words"]),
        node("Mul", ["words", "passage_mask"], ["passage_words"]),
        node("ReduceSum", ["query_words", "tokens_axis"], ["query_counts"], keepdims=0),
        node("ReduceSum", ["passage_words", "tokens_axis"], ["passage_counts"], keepdims=0),
        node("Min", ["query_counts", "one"], ["asked"]),  # 1 for a word the query contains
        node("Mul", ["asked", "passage_counts"], ["shared"]),
        node("Mul", ["shared", "weights"], ["weighted"]),
        node("ReduceSum", ["weighted", "tokens_axis"], ["summed"], keepdims=1),
        node("Add", ["summed", "bias"], ["score"]),
        node("Mul", ["score", "per_class"], ["logits"]),
    ]
    ids = [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"])
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]
    logits = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", classes])
    graph = helper.make_graph(nodes, "tiny_cross_encoder", ids, [logits], constants)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
