"""Qdrant's own engine in this process (qdrant-edge-py) behind the qdrant-client calls that
:class:`QdrantVectorStore` makes, so the store is written once for a server and a folder.

:class:`EdgeFolder` holds a folder (``location=``, or a temporary one for ``":memory:"``):
one Qdrant Edge shard per collection under ``<folder>/edge/<name>``, each with the engine's
write-ahead log, so a write the engine has taken survives the death of the process. It takes
the store's qdrant-client models (filters, points, sparse vectors) and answers with what the
store reads of qdrant-client's replies (``.points``, ``.count``, records with ``.id``,
``.payload`` and ``.vector``). Nothing in the folder is unpickled: the engine reads its own
binary segments and JSON. Search is exhaustive (no HNSW index is built); a shard holding
many deleted points is compacted when a store first opens it, if the disk has room for that.

One store holds a folder at a time (an exclusive ``flock`` on ``.pywrapai.lock``, dropped
when the store closes or its process dies). A folder holding a symbolic link anywhere is
refused. A write the disk may not hold is refused before it starts
(:func:`check_room`), and so is opening a shard on a nearly full disk: the engine maps its
files into memory, and a full disk under a mapped page ends the process instead of raising.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import tempfile
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from pywrapai_graph.adapters._optional import require
from pywrapai_graph.adapters.vectorstores.kit.local_files import check_room, os_failure
from pywrapai_graph.adapters.vectorstores.kit.no_follow import open_file
from pywrapai_graph.errors import (
    PyWrapAIError,
    StorageFullError,
    StoreBusyError,
    VectorStoreError,
)

__all__ = ["SHARDS", "EdgeFolder", "refuse_links_in"]

#: the subfolder holding one shard per collection
SHARDS = "edge"
_LOCK = ".pywrapai.lock"
_CONFIG = "edge_config.json"
#: bytes a point may take on disk per byte of its vectors and payload (log, segment, index)
_SPREAD = 4
#: room a new shard or payload index may take at once (its files and first pages: ~5 MB)
_SHARD_ROOM = 8 << 20


def refuse_links_in(root: Path) -> None:
    """Refuse a folder that is, or holds anywhere, a symbolic link (never followed).

    Raises:
        VectorStoreError: naming the link.
    """
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in [*dirnames, *filenames]:
            if Path(dirpath, name).is_symlink():
                raise VectorStoreError(
                    f"the storage folder {str(root)!r} contains a symbolic link "
                    f"({os.path.relpath(Path(dirpath, name), root)!r}); refusing to open it"
                )
    if root.is_symlink():
        raise VectorStoreError(f"the storage folder {str(root)!r} is a symbolic link")


def _allocated(folder: Path) -> int:
    """The bytes the files under ``folder`` take on disk (the engine's are sparse)."""
    return sum(
        os.lstat(os.path.join(path, name)).st_blocks * 512
        for path, _dirs, names in os.walk(folder)
        for name in names
    )


def _point_bytes(point: Any) -> int:
    """About what a point's vectors and payload take written out (12 bytes an element)."""
    vector = point.vector
    parts: list[Any] = list(vector.values()) if isinstance(vector, dict) else [vector]
    size = sum(12 * len(p.indices if hasattr(p, "indices") else p) for p in parts)
    return size + len(json.dumps(point.payload, default=str))


class EdgeFolder:
    """The collections of a folder as Qdrant Edge shards, through qdrant-client's calls.

    Args:
        root: the folder; None for a temporary one, removed by :meth:`close`.
        hold: take the folder's lock (False only inside a folder whose lock the caller holds).

    Raises:
        StoreBusyError: another store, in this process or another, holds the folder.
        VectorStoreError: a symbolic link in the folder.
    """

    def __init__(self, root: Path | None, hold: bool = True) -> None:
        self._edge = require("qdrant_edge", "qdrant", "qdrant-edge-py")
        self._models = require("qdrant_client.models", "qdrant", "qdrant-client")
        temporary = root is None
        self.root = Path(tempfile.mkdtemp(prefix="pywrapai-qdrant-")) if root is None else root
        self._shards = self.root / SHARDS
        self._open: dict[str, Any] = {}
        self._release: Callable[[], object] = lambda: None
        if temporary:
            self._release = weakref.finalize(self, shutil.rmtree, self.root, True)
        elif hold:
            self._release = self._take()

    def _take(self) -> Callable[[], object]:
        refuse_links_in(self.root)
        with self._failures():
            self.root.mkdir(parents=True, exist_ok=True)
            fd = open_file(self.root / _LOCK, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StoreBusyError(
                f"the Qdrant folder {str(self.root)!r} is open in another store (in this "
                "process or another), and a folder serves one store at a time: close that "
                "store first, or use a Qdrant server for concurrent access"
            ) from None
        return weakref.finalize(self, os.close, fd)  # also for a store dropped unclosed

    @contextmanager
    def _failures(self) -> Iterator[None]:
        """The engine's errors as ours (its exceptions carry a message alone; a panic, on a
        damaged file, is pyo3's ``PanicException``, a ``BaseException``)."""
        try:
            yield
        except PyWrapAIError:
            raise
        except BaseException as exc:
            if not isinstance(exc, Exception) and type(exc).__name__ != "PanicException":
                raise
            full = os_failure(str(self.root), exc)
            if isinstance(full, StorageFullError):
                raise full from exc
            raise VectorStoreError(
                f"Qdrant Edge failed on the folder {str(self.root)!r}: {exc}"
            ) from exc

    def _path(self, name: str) -> Path:
        if not name or Path(name).name != name or name in (".", ".."):
            raise VectorStoreError(f"{name!r} cannot name a collection in a folder")
        return self._shards / name

    def _shard(self, name: str) -> Any:
        if name not in self._open:
            path = self._path(name)
            with self._failures():
                check_room(self.root, _SHARD_ROOM)  # loading writes (its log, a segment)
                shard = self._open[name] = self._edge.EdgeShard.load(str(path))
                if shutil.disk_usage(self.root).free > 2 * _allocated(path) + _SHARD_ROOM:
                    shard.optimize()  # rewrites segments that hold many deleted points
        return self._open[name]

    # ------------------------------------------------------------------ models in, replies out
    def _vector(self, vector: Any) -> Any:
        if isinstance(vector, dict):
            return {name: self._vector(v) for name, v in vector.items()}
        if hasattr(vector, "indices"):  # qdrant-client's sparse vector, or the engine's
            return self._edge.SparseVector(list(vector.indices), list(vector.values))
        return list(vector)

    def _filter(self, selector: Any) -> Any:
        if selector is None:
            return None
        parts = [
            [self._condition(c) for c in cs or []] or None
            for cs in (selector.must, selector.must_not)
        ]
        return self._edge.Filter(must=parts[0], must_not=parts[1])

    def _condition(self, c: Any) -> Any:
        e, m = self._edge, self._models
        if isinstance(c, m.Filter):
            return self._filter(c)
        if isinstance(c, m.HasIdCondition):
            return e.HasIdCondition(set(c.has_id))
        if c.range is not None:
            return e.FieldCondition(c.key, range=e.RangeFloat(gte=c.range.gte, lte=c.range.lte))
        if isinstance(c.match, m.MatchAny):
            return e.FieldCondition(c.key, match=e.MatchAny(list(c.match.any)))
        value = c.match.value
        # the binding reads a Python bool as the integer 1 (a bool is an int); numpy's is a bool
        return e.FieldCondition(
            c.key, match=e.MatchValue(np.bool_(value) if value is True or value is False else value)
        )

    def _scoring(self, query: Any, using: str | None, params: Any) -> tuple[Any, Any]:
        """The engine's scoring query and search parameters of qdrant-client's: a fusion, a
        formula, or a vector's nearest (a sparse vector's IDF over the live points having it,
        within the corpus ``params`` name: left to itself the engine counts deleted points
        too, until it compacts their segment)."""
        e, m = self._edge, self._models
        if isinstance(query, m.RrfQuery):
            return e.Fusion.Rrf(k=query.rrf.k, weights=query.rrf.weights), None
        if isinstance(query, m.FusionQuery):
            return e.Fusion.Dbsf() if query.fusion == m.Fusion.DBSF else e.Fusion.Rrf(k=2), None
        if isinstance(query, m.FormulaQuery):
            return e.Formula(self._expression(query.formula), defaults=query.defaults), None
        nearest = e.Query.Nearest(self._vector(query), using=using)
        if not using:
            return nearest, None
        corpus = getattr(getattr(params, "idf", None), "corpus", None)
        live = [e.HasVectorCondition(using), *(self._filter(corpus).must or [] if corpus else [])]
        return nearest, e.SearchParams(idf=e.IdfParams(corpus=e.Filter(must=live)))

    def _expression(self, x: Any) -> Any:
        """A formula of sums, products, constants and ``$score[i]`` variables."""
        ex = self._edge.Expression
        if isinstance(x, str):
            return ex.Variable(x)
        if isinstance(x, float | int):
            return ex.Constant(float(x))
        if isinstance(x, self._models.SumExpression):
            return ex.Sum([self._expression(y) for y in x.sum])
        return ex.Mult([self._expression(y) for y in x.mult])

    def _prefetch(self, p: Any) -> Any:
        query, params = self._scoring(p.query, p.using, p.params)
        return self._edge.Prefetch(
            limit=p.limit,
            query=query,
            prefetches=[self._prefetch(q) for q in p.prefetch or []] or None,
            filter=self._filter(p.filter),
            score_threshold=p.score_threshold,
            params=params,
        )

    def _request(self, limit: int, selector: Any, payload: Any, **asked: Any) -> Any:
        """The engine's request of a ``query_points`` (or a batch's ``QueryRequest``)."""
        query, params = self._scoring(asked["query"], asked.get("using"), asked.get("params"))
        return self._edge.QueryRequest(
            limit=limit,
            query=query,
            prefetches=[self._prefetch(p) for p in asked.get("prefetch") or []] or None,
            filter=self._filter(selector),
            with_payload=payload,
            score_threshold=asked.get("score_threshold"),
            params=params,
        )

    def _record(self, record: Any) -> SimpleNamespace:
        """A point as qdrant-client gives it: named vectors, sparse ones as its models."""
        named: dict[str, Any] | None = (
            {"": record.vector} if isinstance(record.vector, list) else record.vector
        )
        vector = (
            None
            if named is None
            else {
                name: self._models.SparseVector(indices=v.indices, values=v.values)
                if hasattr(v, "indices")
                else v
                for name, v in named.items()
            }
        )
        return SimpleNamespace(id=str(record.id), payload=record.payload, vector=vector)

    # ------------------------------------------------------------------ qdrant-client's calls
    def collection_exists(self, name: str) -> bool:
        return name in self._open or (self._path(name) / _CONFIG).is_file()

    def get_collection(self, name: str) -> SimpleNamespace:
        """The collection's vectors, as qdrant-client describes them (from the engine's JSON)."""
        with self._failures():
            config = json.loads((self._path(name) / _CONFIG).read_bytes())
        dense = (config.get("vectors") or {}).get("")
        params = SimpleNamespace(
            vectors=SimpleNamespace(size=dense["size"]) if dense else None,
            sparse_vectors=dict.fromkeys(config.get("sparse_vectors") or {}),
        )
        return SimpleNamespace(config=SimpleNamespace(params=params))

    def create_collection(
        self, name: str, vectors_config: Any, sparse_vectors_config: Any = None
    ) -> None:
        """A shard of cosine vectors and IDF-weighted sparse vectors (the store's only kind)."""
        e, path = self._edge, self._path(name)
        config = e.EdgeConfig(
            vectors=e.EdgeVectorParams(size=vectors_config.size, distance=e.Distance.Cosine),
            sparse_vectors={
                n: e.EdgeSparseVectorParams(modifier=e.Modifier.Idf)
                for n in sparse_vectors_config or {}
            },
            optimizers=e.EdgeOptimizersConfig(indexing_threshold=0),  # no HNSW: exact search
        )
        with self._failures():
            check_room(self.root, _SHARD_ROOM)
            shutil.rmtree(path, ignore_errors=True)  # what a crash while creating it left
            self._open[name] = e.EdgeShard.create(str(path), config)

    def delete_collection(self, name: str) -> None:
        shard = self._open.pop(name, None)
        with self._failures():
            if shard is not None:
                shard.close()
            shutil.rmtree(self._path(name), ignore_errors=True)

    def create_payload_index(
        self, name: str, field_name: str, field_schema: Any = None, **_: Any
    ) -> None:
        e = self._edge
        kind = e.PayloadSchemaType.Integer if field_schema == "integer" else None
        with self._failures():
            check_room(self.root, _SHARD_ROOM)
            operation = e.UpdateOperation.create_field_index(
                field_name, kind or e.PayloadSchemaType.Keyword
            )
            self._shard(name).update(operation)

    def upsert(self, name: str, points: Sequence[Any], **_: Any) -> None:
        e = self._edge
        with self._failures():
            check_room(self.root, _SPREAD * sum(_point_bytes(p) for p in points) + _SHARD_ROOM)
            moved = [e.Point(p.id, self._vector(p.vector), p.payload) for p in points]
            self._shard(name).update(e.UpdateOperation.upsert_points(moved))

    def delete(self, name: str, points_selector: Any, **_: Any) -> None:
        with self._failures():
            operation = self._edge.UpdateOperation.delete_points(list(points_selector.points))
            self._shard(name).update(operation)

    def set_payload(self, name: str, payload: dict[str, Any], points: Any, **_: Any) -> None:
        with self._failures():
            check_room(self.root, _SPREAD * len(json.dumps(payload)) + _SHARD_ROOM)
            operation = self._edge.UpdateOperation.set_payload_by_filter(
                self._filter(points), payload
            )
            self._shard(name).update(operation)

    def scroll(
        self,
        name: str,
        scroll_filter: Any = None,
        limit: int = 10,
        offset: Any = None,
        with_payload: bool = True,
        with_vectors: bool = False,
    ) -> tuple[list[SimpleNamespace], Any]:
        request = self._edge.ScrollRequest(
            offset=offset,
            limit=limit,
            filter=self._filter(scroll_filter),
            with_payload=with_payload,
            with_vector=with_vectors,
        )
        with self._failures():
            records, after = self._shard(name).scroll(request)
        return [self._record(r) for r in records], after

    def count(self, name: str, count_filter: Any = None, **_: Any) -> SimpleNamespace:
        request = self._edge.CountRequest(exact=True, filter=self._filter(count_filter))
        with self._failures():
            return SimpleNamespace(count=self._shard(name).count(request))

    def retrieve(self, name: str, ids: Sequence[Any], **_: Any) -> list[SimpleNamespace]:
        with self._failures():
            return [self._record(r) for r in self._shard(name).retrieve(list(ids), True, False)]

    def query_points(
        self,
        name: str,
        query: Any,
        limit: int = 10,
        query_filter: Any = None,
        with_payload: Any = True,
        **asked: Any,
    ) -> SimpleNamespace:
        """One query: a vector's nearest, or a fusion or formula over ``prefetch`` queries
        (``using``, ``prefetch``, ``search_params``, ``score_threshold`` as qdrant-client's)."""
        asked["params"] = asked.pop("search_params", None)
        request = self._request(limit, query_filter, with_payload, query=query, **asked)
        with self._failures():
            return SimpleNamespace(points=self._shard(name).query(request))

    def query_batch_points(self, name: str, requests: Sequence[Any]) -> list[SimpleNamespace]:
        e = self._edge
        batch = [
            self._request(r.limit, r.filter, r.with_payload, query=r.query, using=r.using)
            for r in requests
        ]
        with self._failures():
            found = self._shard(name).query_batch(e.QueryBatchRequest(batch))
        return [SimpleNamespace(points=points) for points in found]

    def close(self) -> None:
        """Close every shard (their logs flushed), then let the folder go (idempotent)."""
        shards, self._open = list(self._open.values()), {}
        try:
            with self._failures():
                for shard in shards:
                    shard.flush()
                    shard.close()
        finally:
            self._release()
