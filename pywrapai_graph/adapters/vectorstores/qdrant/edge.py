"""Qdrant's own engine in this process (qdrant-edge-py) behind the qdrant-client calls the
store makes, so :class:`QdrantVectorStore` is written once for a server and a folder.

A folder (temporary for ``":memory:"``) holds an exhaustively searched Edge shard per collection
(``edge/<name>``) and serves one store at a time (``flock``). The engine loads some damaged
files with fewer points and no error: each shard's point count is recorded and checked, with
one point read whole, when the folder opens.
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

from pywrapai_graph import errors
from pywrapai_graph.adapters._optional import require
from pywrapai_graph.adapters._unreachable import refuse_unencoded_userinfo
from pywrapai_graph.adapters.vectorstores.kit.local_files import check_room, os_failure
from pywrapai_graph.adapters.vectorstores.kit.no_follow import open_file

__all__ = ["EdgeFolder", "local_location"]

_SHARDS = "edge"
_LOCK = ".pywrapai.lock"
_COUNTS = ".pywrapai-points.json"
_CONFIG = "edge_config.json"
#: what qdrant-client's local mode (earlier releases) kept at the top of a folder
_OLD = ("collection", "meta.json", "pywrapai-integrity.json")
#: bytes a point may take on disk per byte of its vectors and payload (log, segment, index)
_SPREAD = 4
#: room a new shard or payload index may take at once (its files and first pages: ~5 MB)
_SHARD_ROOM = 8 << 20


def local_location(
    collection: object,
    location: str | os.PathLike[str] | None,
    path: str | os.PathLike[str] | None,
    url: str | None,
) -> str | os.PathLike[str] | None:
    """The local location (``":memory:"`` by default; None with a url), the arguments
    checked (``ConfigurationError``)."""
    if path is not None and location is not None:
        raise errors.ConfigurationError("pass either location= or path=, not both")
    where = location if location is not None else path
    if url is not None and where is not None:
        raise errors.ConfigurationError("pass either a location (':memory:' or a path) or url=")
    if url is not None:
        refuse_unencoded_userinfo(url, "Qdrant url")
    if not collection or not isinstance(collection, str):
        raise errors.ConfigurationError("collection must be a non-empty string")
    return ":memory:" if url is None and where is None else where


def _refuse_links_in(root: Path) -> None:
    links = [Path(d, n) for d, ds, ns in os.walk(root) for n in ds + ns if Path(d, n).is_symlink()]
    if root.is_symlink() or links:
        inside = f" ({os.path.relpath(links[0], root)!r})" if links else ""
        raise errors.VectorStoreError(
            f"the storage folder {str(root)!r} is or holds a symbolic link{inside}"
        )


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
    """The collections of a folder (``root``; None: a temporary one, removed by
    :meth:`close`) as Qdrant Edge shards, through qdrant-client's calls.

    Raises:
        StoreBusyError: another store, in this process or another, holds the folder.
        StoreDamagedError: a damaged folder (:meth:`_check`).
        InvalidStateError: a folder of an earlier release (qdrant-client's local mode).
        VectorStoreError: a symbolic link in the folder.
    """

    def __init__(self, root: Path | None) -> None:
        self._edge = require("qdrant_edge", "qdrant", "qdrant-edge-py")
        self._models = require("qdrant_client.models", "qdrant", "qdrant-client")
        self.root = Path(tempfile.mkdtemp(prefix="pywrapai-qdrant-")) if root is None else root
        self._shards = self.root / _SHARDS
        self._open: dict[str, Any] = {}
        #: each shard's recorded point count (None: a temporary folder, nothing recorded)
        self._counts: dict[str, int] | None = None
        self._release: Callable[[], object]
        if root is None:
            self._release = weakref.finalize(self, shutil.rmtree, self.root, True)
            return
        self._release = self._take()
        try:
            self._check()
        except BaseException:
            self.close()
            raise

    def _take(self) -> Callable[[], object]:
        _refuse_links_in(self.root)
        with self._failures():
            self.root.mkdir(parents=True, exist_ok=True)
            fd = open_file(self.root / _LOCK, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise errors.StoreBusyError(
                f"the Qdrant folder {str(self.root)!r} is open in another store (in this "
                "process or another), and a folder serves one store at a time: close that "
                "store first, or use a Qdrant server for concurrent access"
            ) from None
        return weakref.finalize(self, os.close, fd)  # also for a store dropped unclosed

    def _check(self) -> None:
        """Refuse an earlier release's folder, and damage: a shard missing or unloadable,
        fewer points than recorded, or a point read whole without its payload."""
        if not self._shards.exists() and any((self.root / n).exists() for n in _OLD):
            raise errors.InvalidStateError(
                f"{str(self.root)!r} is a Qdrant folder of an earlier release (qdrant-client's "
                "local mode, which this release no longer reads): ingest into a new folder"
            )
        try:
            saved = json.loads((self.root / _COUNTS).read_bytes())
            recorded = {str(name): int(n) for name, n in saved.items()}
        except FileNotFoundError:
            recorded = {}  # a new folder, or one of the release before the record
        except (ValueError, TypeError, AttributeError):
            raise self._damaged(_COUNTS, "the point record is unreadable") from None
        made = {p.parent.name for p in self._shards.glob(f"*/{_CONFIG}")}  # (a crash while
        self._counts = {}  # creating one leaves a shard without its configuration: unused)
        for name in sorted(made | set(recorded)):
            if name not in made:
                raise self._damaged(name, "its shard or its configuration is missing")
            with self._loading(name):  # its count, and one point read whole
                live = self._live(name)
                first, _ = self.scroll(name, None, 1, None, True)
            if first and not first[0].payload:  # every point the store writes has one
                raise self._damaged(name, "a point lost its payload")
            if live < recorded.get(name, 0):
                raise self._damaged(name, f"{live} points of the {recorded[name]} written")
            self._note(name, live)

    def _damaged(self, name: str, what: str) -> errors.StoreDamagedError:
        return errors.StoreDamagedError(
            f"the Qdrant folder {str(self.root)!r} is damaged ({name!r}: {what}); nothing was "
            "served from it. Restore the folder from a backup, or move it aside and ingest "
            "into a new folder."
        )

    @contextmanager
    def _failures(self) -> Iterator[None]:
        """The engine's errors as ours (a panic, on a damaged file, is pyo3's
        ``PanicException``, a ``BaseException``)."""
        try:
            yield
        except errors.PyWrapAIError:
            raise
        except BaseException as exc:
            if not isinstance(exc, Exception) and type(exc).__name__ != "PanicException":
                raise
            full = os_failure(str(self.root), exc)
            if isinstance(full, errors.StorageFullError):
                raise full from exc
            raise errors.VectorStoreError(
                f"Qdrant Edge failed on the folder {str(self.root)!r}: {exc}"
            ) from exc

    @contextmanager
    def _loading(self, name: str) -> Iterator[None]:
        """The engine failing on a shard as the folder opens: damage (a full disk aside)."""
        try:
            with self._failures():
                yield
        except (errors.StorageFullError, errors.StoreDamagedError):
            raise
        except errors.VectorStoreError as exc:
            raise self._damaged(name, f"the engine cannot read it: {exc}") from exc

    def _path(self, name: str) -> Path:
        if not name or Path(name).name != name or name in (".", ".."):
            raise errors.VectorStoreError(f"{name!r} cannot name a collection in a folder")
        return self._shards / name

    def _shard(self, name: str) -> Any:
        if name not in self._open:
            path = self._path(name)
            with self._failures():
                check_room(self.root, _SHARD_ROOM)  # loading writes (its log, a segment)
            with self._loading(name):
                shard = self._open[name] = self._edge.EdgeShard.load(str(path))
            with self._failures():
                if shutil.disk_usage(self.root).free > 2 * _allocated(path) + _SHARD_ROOM:
                    shard.optimize()  # rewrites segments that hold many deleted points
        return self._open[name]

    def _live(self, name: str) -> int:
        return int(self.count(name).count)

    def _note(self, name: str, points: int | None) -> None:
        """Record ``name``'s point count (None: forget the shard), replacing the file whole."""
        if self._counts is None:
            return
        self._counts.pop(name, None)
        if points is not None:
            self._counts[name] = max(points, 0)
        temporary = self.root / f"{_COUNTS}.tmp"
        with self._failures():
            fd = open_file(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as out:
                json.dump(self._counts, out)
            os.replace(temporary, self.root / _COUNTS)

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
        if isinstance(c, m.IsEmptyCondition):
            return e.IsEmptyCondition(c.is_empty.key)
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
        """The engine's query and search parameters of qdrant-client's; a sparse vector's IDF
        counts live points only (the engine counts deleted ones until it compacts them)."""
        e, m = self._edge, self._models
        if isinstance(query, m.RrfQuery):
            return e.Fusion.Rrf(k=query.rrf.k, weights=query.rrf.weights), None
        if isinstance(query, m.FusionQuery):
            return e.Fusion.Dbsf(), None
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

    def _request(self, kind: Any, asked: dict[str, Any]) -> Any:
        """The engine's ``kind`` (a request, or a prefetch) of qdrant-client's query fields."""
        query, params = self._scoring(asked["query"], asked.get("using"), asked.get("params"))
        prefetches = [
            self._request(self._edge.Prefetch, dict(p)) for p in asked.get("prefetch") or []
        ]
        extra = {"with_payload": True} if kind is self._edge.QueryRequest else {}
        return kind(
            limit=asked["limit"],
            query=query,
            prefetches=prefetches or None,
            filter=self._filter(asked.get("filter")),
            score_threshold=asked.get("score_threshold"),
            params=params,
            **extra,
        )

    # ------------------------------------------------------------------ qdrant-client's calls
    def collection_exists(self, name: str) -> bool:
        return name in self._open or (self._path(name) / _CONFIG).is_file()

    def get_collection(self, name: str) -> SimpleNamespace:
        """The collection's vectors, as qdrant-client describes them."""
        with self._failures():
            config = json.loads((self._path(name) / _CONFIG).read_bytes())
        dense = (config.get("vectors") or {}).get("")
        params = SimpleNamespace(
            vectors=SimpleNamespace(size=dense["size"]) if dense else None,
            sparse_vectors=dict.fromkeys(config.get("sparse_vectors") or {}),
        )
        return SimpleNamespace(config=SimpleNamespace(params=params))

    def create_collection(
        self, name: str, vectors_config: Any, sparse_vectors_config: Any = None, **_: Any
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
        self._note(name, 0)

    def delete_collection(self, name: str) -> None:
        self._note(name, None)
        shard = self._open.pop(name, None)
        with self._failures():
            if shard is not None:
                shard.close()
            shutil.rmtree(self._path(name), ignore_errors=True)

    def _update(self, name: str, kind: str, *args: Any, room: int | None = 0) -> None:
        """One ``UpdateOperation.<kind>(*args)``, refused first if the disk may not hold
        ``room`` bytes more than a shard's (None: a delete, never refused)."""
        with self._failures():
            if room is not None:
                check_room(self.root, room + _SHARD_ROOM)
            self._shard(name).update(getattr(self._edge.UpdateOperation, kind)(*args))

    def create_payload_index(
        self, name: str, field_name: str, field_schema: Any = None, **_: Any
    ) -> None:
        types = self._edge.PayloadSchemaType
        kind = types.Integer if field_schema == "integer" else types.Keyword
        self._update(name, "create_field_index", field_name, kind)

    def upsert(self, name: str, points: Sequence[Any], **_: Any) -> None:
        moved = [self._edge.Point(p.id, self._vector(p.vector), p.payload) for p in points]
        room = _SPREAD * sum(_point_bytes(p) for p in points)
        self._update(name, "upsert_points", moved, room=room)
        self._note(name, self._live(name))

    def delete(self, name: str, points_selector: Any, **_: Any) -> None:
        ids = list(points_selector.points)
        self._note(name, self._live(name) - len(ids))  # what a crash below may leave
        self._update(name, "delete_points", ids, room=None)
        self._note(name, self._live(name))

    def set_payload(self, name: str, payload: dict[str, Any], points: Any, **_: Any) -> None:
        room = _SPREAD * len(json.dumps(payload))
        self._update(name, "set_payload_by_filter", self._filter(points), payload, room=room)

    def batch_update_points(self, name: str, update_operations: Sequence[Any], **_: Any) -> None:
        """``set_payload`` operations (the only ones the store batches), in order."""
        for op in update_operations:
            self.set_payload(name, op.set_payload.payload, op.set_payload.filter)

    def scroll(
        self,
        name: str,
        scroll_filter: Any = None,
        limit: int = 10,
        offset: Any = None,
        with_vectors: bool = False,
        **_: Any,
    ) -> tuple[list[Any], Any]:
        filter = self._filter(scroll_filter)
        request = self._edge.ScrollRequest(offset, limit, filter, True, with_vectors)
        with self._failures():
            return self._shard(name).scroll(request)  # type: ignore[no-any-return]

    def count(self, name: str, count_filter: Any = None, **_: Any) -> SimpleNamespace:
        request = self._edge.CountRequest(exact=True, filter=self._filter(count_filter))
        with self._failures():
            return SimpleNamespace(count=self._shard(name).count(request))

    def retrieve(self, name: str, ids: Sequence[Any], **_: Any) -> list[Any]:
        with self._failures():
            return list(self._shard(name).retrieve(list(ids), True, False))

    def query_points(self, collection_name: str, query: Any, **asked: Any) -> SimpleNamespace:
        """One query: a vector's nearest, or a fusion or formula over ``prefetch`` queries."""
        asked.update(
            query=query, filter=asked.get("query_filter"), params=asked.get("search_params")
        )
        request = self._request(self._edge.QueryRequest, asked)
        with self._failures():
            return SimpleNamespace(points=self._shard(collection_name).query(request))

    def query_batch_points(
        self, collection_name: str, requests: Sequence[Any], **_: Any
    ) -> list[SimpleNamespace]:
        e = self._edge
        batch = e.QueryBatchRequest([self._request(e.QueryRequest, dict(r)) for r in requests])
        with self._failures():
            found = self._shard(collection_name).query_batch(batch)
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
