"""Qdrant's REST API over qdrant-client's own in-process engine, for machines without a
Qdrant server (no Docker, no binary).

Not a Qdrant server: it answers only the endpoints :class:`QdrantVectorStore` calls, with
qdrant-client's local engine (``QdrantClient(":memory:")``) behind them. What it proves is
the store's server mode end to end on the real SDKs — ``QdrantClient`` and
``AsyncQdrantClient`` build real HTTP requests from our models, parse real responses, and
our translation and versioned-document logic run over them — while the engine's semantics
are those of Qdrant local mode. The tests against a real Qdrant server are the ones that
take ``qdrant_url`` (Docker or ``PYWRAPAI_TEST_QDRANT_URL``).
"""

from __future__ import annotations

import json
import re
import threading
import warnings
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlparse

from pydantic import BaseModel
from qdrant_client import QdrantClient, models

Handler = Callable[[QdrantClient, str, Any], Any]


def _update(_: object) -> models.UpdateResult:
    return models.UpdateResult(operation_id=0, status=models.UpdateStatus.COMPLETED)


#: what a cluster would hold of each collection's creation (the local engine keeps none)
CLUSTER_KEYS = ("shard_number", "replication_factor", "write_consistency_factor")
_cluster: dict[str, dict[str, Any]] = {}


def _create(engine: QdrantClient, name: str, body: Any) -> bool:
    request = models.CreateCollection.model_validate(body)
    _cluster[name] = {k: getattr(request, k) for k in CLUSTER_KEYS}
    return engine.create_collection(
        name, vectors_config=request.vectors, sparse_vectors_config=request.sparse_vectors
    )


def _info(engine: QdrantClient, name: str, _: Any) -> Any:
    """The collection as a server describes it, with the cluster settings it was made with."""
    info = engine.get_collection(name)
    params = info.config.params.model_copy(update=_cluster.get(name, {}))
    return info.model_copy(update={"config": info.config.model_copy(update={"params": params})})


def _upsert(engine: QdrantClient, name: str, body: Any) -> models.UpdateResult:
    request = models.PointsList.model_validate(body)
    return _update(engine.upsert(name, points=request.points))


def _delete(engine: QdrantClient, name: str, body: Any) -> models.UpdateResult:
    selector: Any = (
        models.PointIdsList.model_validate(body)
        if "points" in body
        else models.FilterSelector.model_validate(body)
    )
    return _update(engine.delete(name, points_selector=selector))


def _set_payload(engine: QdrantClient, name: str, body: Any) -> models.UpdateResult:
    request = models.SetPayload.model_validate(body)
    selector: Any = request.filter if request.filter is not None else request.points
    return _update(engine.set_payload(name, request.payload, points=selector))


def _batch(engine: QdrantClient, name: str, body: Any) -> list[models.UpdateResult]:
    """``batch_update_points`` of ``set_payload`` operations (the only ones the store sends)."""
    batch = models.UpdateOperations.model_validate(body)
    return [
        _set_payload(engine, name, op.set_payload.model_dump())  # type: ignore[union-attr]
        for op in batch.operations
    ]


def _index(engine: QdrantClient, name: str, body: Any) -> models.UpdateResult:
    request = models.CreateFieldIndex.model_validate(body)
    with warnings.catch_warnings():  # the local engine has no payload indexes, and says so
        warnings.simplefilter("ignore", UserWarning)
        return _update(engine.create_payload_index(name, request.field_name, request.field_schema))


def _retrieve(engine: QdrantClient, name: str, body: Any) -> Any:
    request = models.PointRequest.model_validate(body)
    return engine.retrieve(name, request.ids, with_payload=request.with_payload or False)


def _scroll(engine: QdrantClient, name: str, body: Any) -> dict[str, Any]:
    request = models.ScrollRequest.model_validate(body)
    points, offset = engine.scroll(
        name,
        scroll_filter=request.filter,
        limit=request.limit or 10,
        offset=request.offset,
        with_payload=request.with_payload if request.with_payload is not None else True,
        with_vectors=request.with_vector or False,
    )
    return {"points": points, "next_page_offset": offset}


def _count(engine: QdrantClient, name: str, body: Any) -> models.CountResult:
    request = models.CountRequest.model_validate(body)
    return engine.count(name, count_filter=request.filter, exact=bool(request.exact))


def _query_one(engine: QdrantClient, name: str, request: models.QueryRequest) -> Any:
    return engine.query_points(
        name,
        query=request.query,
        using=request.using,
        prefetch=request.prefetch,
        query_filter=request.filter,
        search_params=request.params,
        score_threshold=request.score_threshold,
        limit=request.limit or 10,
        with_payload=request.with_payload if request.with_payload is not None else True,
    )


def _query(engine: QdrantClient, name: str, body: Any) -> Any:
    return _query_one(engine, name, models.QueryRequest.model_validate(body))


def _query_batch(engine: QdrantClient, name: str, body: Any) -> Any:
    batch = models.QueryRequestBatch.model_validate(body)
    return [_query_one(engine, name, request) for request in batch.searches]


_C = r"/collections/(?P<name>[^/]+)"
ROUTES: list[tuple[str, re.Pattern[str], Handler]] = [
    ("GET", re.compile(_C + "/exists"), lambda e, n, b: {"exists": e.collection_exists(n)}),
    ("GET", re.compile(_C), _info),
    ("PUT", re.compile(_C), _create),
    ("DELETE", re.compile(_C), lambda e, n, b: e.delete_collection(n)),
    ("PUT", re.compile(_C + "/index"), _index),
    ("PUT", re.compile(_C + "/points"), _upsert),
    ("POST", re.compile(_C + "/points/delete"), _delete),
    ("POST", re.compile(_C + "/points/payload"), _set_payload),
    ("POST", re.compile(_C + "/points/batch"), _batch),
    ("POST", re.compile(_C + "/points"), _retrieve),
    ("POST", re.compile(_C + "/points/scroll"), _scroll),
    ("POST", re.compile(_C + "/points/count"), _count),
    ("POST", re.compile(_C + "/points/query"), _query),
    ("POST", re.compile(_C + "/points/query/batch"), _query_batch),
]


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


class QdrantRest:
    """A REST front on one in-memory local engine, on a free loopback port."""

    def __init__(self) -> None:
        self.engine = QdrantClient(location=":memory:")
        self.lock = threading.Lock()  # the local engine is not thread-safe
        self.requests: list[tuple[str, str]] = []
        #: every request whole: method, path with its query string, JSON body
        self.sent: list[tuple[str, str, Any]] = []
        self.errors: list[str] = []
        front = self

        class Handle(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _serve(self, method: str) -> None:
                path = unquote(urlparse(self.path).path)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                for verb, pattern, handler in ROUTES:
                    match = pattern.fullmatch(path)
                    if verb == method and match:
                        front.requests.append((method, path))
                        front.sent.append((method, unquote(self.path), body))
                        try:
                            with front.lock:
                                result = handler(front.engine, match["name"], body)
                        except Exception as exc:  # the engine's refusal, as a server's error
                            front.errors.append(repr(exc))
                            self._reply(400, {"status": {"error": str(exc)}, "time": 0.0})
                            return
                        self._reply(200, {"result": _jsonable(result), "status": "ok", "time": 0})
                        return
                self._reply(404, {"status": {"error": f"no route {method} {path}"}, "time": 0})

            def _reply(self, code: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._serve("GET")

            def do_PUT(self) -> None:
                self._serve("PUT")

            def do_POST(self) -> None:
                self._serve("POST")

            def do_DELETE(self) -> None:
                self._serve("DELETE")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handle)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> str:
        self.thread.start()
        return self.url

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.engine.close()
