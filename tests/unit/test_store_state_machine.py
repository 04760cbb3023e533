"""Random sequences of store operations, checked against a plain dict and exact numpy search."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from pywrapai_graph import Chunk, InMemoryVectorStore, SQLiteVectorStore
from pywrapai_graph.ports import BaseVectorStore

DIM = 4
ids = st.sampled_from([f"c{i}" for i in range(12)])
docs = st.sampled_from(["d0", "d1", "d2"])
vectors = st.lists(st.integers(-5, 5), min_size=DIM, max_size=DIM).filter(any)


class StoreMachine(RuleBasedStateMachine):
    """Each store must agree with the model after every step."""

    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.TemporaryDirectory()
        self.stores: list[BaseVectorStore] = [
            InMemoryVectorStore(),
            SQLiteVectorStore(Path(self.tmp.name) / "s.db"),
        ]
        self.model: dict[str, tuple[str, list[float]]] = {}

    @rule(chunk_id=ids, doc=docs, vector=vectors)
    def add(self, chunk_id: str, doc: str, vector: list[int]) -> None:
        for store in self.stores:
            store.add(
                [
                    Chunk(
                        f"text {chunk_id}",
                        doc_id=doc,
                        id=chunk_id,
                        embedding=[float(x) for x in vector],
                    )
                ]
            )
        self.model[chunk_id] = (doc, [float(x) for x in vector])

    @rule(chunk_id=ids)
    def delete(self, chunk_id: str) -> None:
        expected = 1 if chunk_id in self.model else 0
        for store in self.stores:
            assert store.delete([chunk_id]) == expected
        self.model.pop(chunk_id, None)

    @rule(doc=docs)
    def delete_by_doc(self, doc: str) -> None:
        expected = sum(1 for d, _ in self.model.values() if d == doc)
        for store in self.stores:
            assert store.delete_by_doc(doc) == expected
        self.model = {k: v for k, v in self.model.items() if v[0] != doc}

    @rule(bad_dim=st.integers(1, 3))
    def rejected_batch_changes_nothing(self, bad_dim: int) -> None:
        for store in self.stores:
            try:
                store.add(
                    [
                        Chunk("ok", id="c0", embedding=[1.0] * DIM),
                        Chunk("bad", id="bad", embedding=[1.0] * bad_dim),
                    ]
                )
            except ValueError:
                pass
            else:  # pragma: no cover - would be a bug
                raise AssertionError("a batch with a wrong dimension was accepted")

    @precondition(lambda self: bool(self.model))
    @rule(query=vectors, k=st.integers(1, 5))
    def search_matches_exact_cosine(self, query: list[int], k: int) -> None:
        keys = sorted(self.model)
        m = np.array([self.model[key][1] for key in keys])
        m /= np.linalg.norm(m, axis=1, keepdims=True)
        q = np.array(query, dtype=float)
        scores = m @ (q / np.linalg.norm(q))
        expected = sorted(scores, reverse=True)[:k]
        for store in self.stores:
            got = store.search([float(x) for x in query], k=k)
            # float32 scores: compare within 1e-4 (rounding both sides can split at a .5 boundary)
            assert [h.score for h in got] == pytest.approx([float(s) for s in expected], abs=1e-4)
            for h in got:
                assert abs(scores[keys.index(h.chunk.id)] - h.score) < 1e-4

    @invariant()
    def sizes_agree(self) -> None:
        for store in self.stores:
            assert len(store) == len(self.model)

    def teardown(self) -> None:
        for store in self.stores:
            store.close()
        self.tmp.cleanup()


StoreMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
TestStoreMachine = StoreMachine.TestCase
