"""The local embedder against its runtime: ours vs raw onnxruntime (the floor) vs fastembed.

Run: python -m benchmarks.local_embedder [FOLDER] [--texts N] [--rounds R] [--threads 1,2]

FOLDER is a BEIR collection (default ../shared/data/cranfield, beside the repository); its
documents are chunked as ingest chunks them (``Chunker(500, 50)``) and the first N chunks
are embedded by each runner, on the same model files (the ``[local]`` extra's int8
all-MiniLM-L6-v2), interleaved round by round so that the machine's load falls on all alike:

* ``ours``: ``Embedder(provider="local")``'s ``embed_matrix``, the path ingest takes;
* ``ours, whole ingest``: ``VectorRetriever.add_documents`` of the texts (one chunk each)
  into an in-memory store: embedding, hashing, writing;
* ``floor``: the least a program must do with onnxruntime and tokenizers for the same
  vectors: the tokenizer truncating at 256, texts sorted by length, batches of 32 padded
  to their longest, ``session.run``, mean pooling, L2 normalisation;
* ``floor unsorted``: the same in input order (what bucketing by length buys);
* ``fastembed``: ``fastembed.TextEmbedding`` pointed at the same model files through
  ``specific_model_path`` (a folder of links plus the ``tokenizer_config.json`` it requires),
  with ``HF_HUB_OFFLINE=1``: nothing is downloaded; its default batch size.

Each row: the best wall time over the rounds, texts per second, the CPU seconds of that
round (all threads), and the ratio of its rate to the floor's at the same thread count, in
wall and in CPU time (on a shared machine, the CPU ratio is the one the load does not move).
Then what one 20 MB text costs ours against a text that just fills the window. The vectors
of every runner are compared with the floor's (max absolute difference).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from pywrapai_graph import Chunker, Document, Embedder, InMemoryVectorStore, VectorRetriever
from pywrapai_graph.adapters.embedders.local import default_model_files
from pywrapai_graph.adapters.sources.beir import load_beir

DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "cranfield"
WINDOW, BATCH = 256, 32
Matrix = npt.NDArray[np.float32]
Runner = Callable[[Sequence[str]], Matrix | None]


def _texts(folder: Path, n: int) -> list[str]:
    chunker = Chunker(500, 50)
    texts: list[str] = []
    for doc in load_beir(folder).corpus:
        texts += [c.text for c in chunker.split(doc) if c.text.strip()]
        if len(texts) >= n:
            break
    return texts[:n]


def _floor(threads: int, *, sort: bool) -> Runner:
    """Raw onnxruntime + tokenizers, nothing else."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    model, tokenizer_file = default_model_files()
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    tokenizer.enable_truncation(WINDOW)
    tokenizer.no_padding()

    def run(texts: Sequence[str]) -> Matrix:
        encodings = tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        if not sort:
            order = list(range(len(texts)))
        out = np.empty((len(texts), 384), dtype=np.float32)
        for start in range(0, len(order), BATCH):
            rows = order[start : start + BATCH]
            width = max(len(encodings[i].ids) for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            for r, i in enumerate(rows):
                ids[r, : len(encodings[i].ids)] = encodings[i].ids
                mask[r, : len(encodings[i].ids)] = 1
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            hidden = session.run(None, feed)[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / weights.sum(axis=1)
            out[rows] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        return out

    return run


def _ours(threads: int) -> Runner:
    embedder = Embedder(provider="local", threads=threads)

    def run(texts: Sequence[str]) -> Matrix:
        matrix = np.frombuffer(embedder.embed_matrix(texts), dtype=np.float32)
        return matrix.reshape(len(texts), -1)

    return run


def _ours_ingest(threads: int) -> Runner:
    """A whole ingest of the texts (one chunk each) into a fresh in-memory store."""
    embedder = Embedder(provider="local", threads=threads)

    def run(texts: Sequence[str]) -> None:
        docs = [Document(text, id=str(i)) for i, text in enumerate(texts)]
        VectorRetriever(embedder, InMemoryVectorStore()).add_documents(docs)

    return run


def _fastembed_folder() -> Path:
    """The model files as fastembed reads a local model: links plus its tokenizer config."""
    model, tokenizer_file = default_model_files()
    folder = Path(tempfile.mkdtemp(prefix="fastembed-minilm-"))
    (folder / "model.onnx").symlink_to(model)
    (folder / "tokenizer.json").symlink_to(tokenizer_file)
    config = {"model_max_length": WINDOW, "pad_token": "[PAD]"}
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return folder


def _fastembed(threads: int, folder: Path) -> Runner | str:
    os.environ["HF_HUB_OFFLINE"] = "1"  # a download attempt fails instead of fetching
    try:
        from fastembed import TextEmbedding
    except ImportError:
        return "fastembed not installed (pip install 'pywrapai-graph[bench]')"
    model = TextEmbedding(
        "sentence-transformers/all-MiniLM-L6-v2",
        specific_model_path=str(folder),
        threads=threads,
        local_files_only=True,
    )

    def run(texts: Sequence[str]) -> Matrix:
        return np.asarray(list(model.embed(list(texts))), dtype=np.float32)

    return run


def _measure(
    runners: dict[str, Runner], texts: list[str], rounds: int
) -> dict[str, tuple[float, float, Matrix | None]]:
    """name -> (best wall, CPU of that round, vectors); runners interleaved each round."""
    best: dict[str, tuple[float, float, Matrix | None]] = {}
    for _ in range(rounds):
        for name, run in runners.items():
            cpu0, wall0 = time.process_time(), time.perf_counter()
            vectors = run(texts)
            wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
            if name not in best or wall < best[name][0]:
                best[name] = (wall, cpu, vectors)
    return best


def _huge_text_cost(texts: list[str]) -> tuple[float, float]:
    """CPU seconds for ours to embed one 20 MB text, and its first 2,048 characters (which
    fill the 256-token window too), best of 5 each."""
    logging.getLogger("pywrapai_graph.adapters.embedders.local").setLevel(logging.ERROR)
    embedder = Embedder(provider="local")
    prose = " ".join(texts)
    huge = (prose + " ") * (20_000_000 // len(prose) + 1)
    timings = []
    for sample in (huge, huge[:2048]):
        best = float("inf")
        for _ in range(5):
            start = time.process_time()
            embedder.embed([sample])
            best = min(best, time.process_time() - start)
        timings.append(best)
    return timings[0], timings[1]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", nargs="?", default=str(DEFAULT))
    parser.add_argument("--texts", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", default="1,2")
    args = parser.parse_args(argv)
    texts = _texts(Path(args.folder), args.texts)
    folder = _fastembed_folder()
    name = Path(args.folder).name
    print(f"{len(texts)} chunks of {name}, {args.rounds} rounds, {os.cpu_count()} CPUs")
    print(f"load average {os.getloadavg()[0]:.1f}: wall times include other processes' load;")
    print("texts per CPU-second (all threads) is the rate the load does not change")
    header = f"{'runner':<30} {'wall s':>7} {'texts/s':>8} {'vs floor':>8} {'CPU s':>7}"
    print(header + f" {'texts/CPU-s':>11} {'vs floor':>8} {'max |diff|':>10}")
    for threads in (int(t) for t in args.threads.split(",")):
        runners: dict[str, Runner] = {
            "floor": _floor(threads, sort=True),
            "ours": _ours(threads),
            "ours, whole ingest": _ours_ingest(threads),
            "floor unsorted": _floor(threads, sort=False),
        }
        peer = _fastembed(threads, folder)
        if isinstance(peer, str):
            print(peer)
        else:
            runners["fastembed"] = peer
        for run in runners.values():
            run(texts[:8])  # warm up: first-call allocations
        best = _measure(runners, texts, args.rounds)
        floor_wall, floor_cpu, reference = best["floor"]
        for name, (wall, cpu, vectors) in best.items():
            diff = np.nan
            if vectors is not None and reference is not None:
                diff = float(np.abs(vectors - reference).max())
            label = f"{name} ({threads} thread{'s' if threads > 1 else ''})"
            print(
                f"{label:<30} {wall:7.2f} {len(texts) / wall:8.1f} {floor_wall / wall:7.3f}x "
                f"{cpu:7.2f} {len(texts) / cpu:11.1f} {floor_cpu / cpu:7.3f}x {diff:10.1e}"
            )
    huge, one = _huge_text_cost(texts)
    print(
        f"ours, one 20 MB text: {huge * 1e3:.1f} ms CPU; its first 2,048 characters (a full "
        f"window): {one * 1e3:.1f} ms CPU ({huge / one:.2f}x)"
    )


if __name__ == "__main__":
    main()
