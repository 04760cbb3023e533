"""The FastAPI example under load, against a floor written with the raw SDK and driver.

Run: .venv/bin/python -m benchmarks.fastapi_load [--clients 50,100,200] [--requests 600]
     [--embedder hashing|local] [--modes dense,hybrid]
(starts the embedded PostgreSQL of the integration tests, or uses PYWRAPAI_TEST_PG_URL; the
LLM is the OpenAI wire server, answering every call at once.)

Two services, each run by uvicorn in its own process on 127.0.0.1, one after the other:

* ours: ``examples/fastapi_service.py``'s ``create_app`` over PGVectorStore (pool of 4),
  with the offline hashing embedder (or ``local``) and the OpenAI provider;
* the floor: a FastAPI app doing the same work by hand — embed the question with the same
  embedder, one ``psycopg2`` query (pool of 4, the same HNSW session settings and tenant
  filter; in hybrid mode :data:`HYBRID_FLOOR`, the same retrieval in one hand-written
  statement) in the thread pool, one ``AsyncOpenAI`` call — and returning the same JSON.

Both answer ``POST /ask`` for four tenants over the same table (ingested once, through ours).
For each number of concurrent clients (httpx async clients in this process, each sending
its share of a fixed number of requests one after another) the table gives throughput, p50
and p99 latency and the server's CPU time per request, ours as a ratio of the floor's: of the
fastest run of each, and the median of the rounds' paired ratios (the two services run one
after the other in each round, in alternating order), steadier on two shared cores.
Bounded: it stops by itself. Not part of the test suite.

``--freeze SECONDS``: the freeze scenario instead. Ours alone, 4 uvicorn workers, over a
PostgreSQL of its own (embedded: it must be frozen); ``--clients`` clients send ``/ask`` for
5 s, then the server is frozen (SIGSTOP on the postmaster and every backend) for SECONDS,
then thawed for 10 s more. The table gives, for each second in which requests were sent,
how many, their p50 and p99 latency and how many failed (by status), so the answers during
the freeze (a 503 within the store's deadline) and the recovery after show.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

TABLE, DIM, TENANTS, DOCS = "bench_service", 384, ("acme", "globex", "initech", "umbrella"), 50
QUESTIONS = ("How long do refunds take?", "Where do parcels ship from?", "Who answers calls?")
_WORDS = ("refunds", "take", "days", "parcels", "ship", "from", "where", "calls", "answers")
#: The documents' vocabulary: the questions' words among 300 others, so that every document
#: is its own text and vector (with the 9 words alone a tenant's 50 documents were at most 9
#: texts; the HNSW graph over those copies left one tenant's rows unreachable, and a dense
#: /ask for it found nothing, in both services).
_VOCABULARY = _WORDS + tuple(f"topic{n}" for n in range(300))


#: The floor's hybrid retrieval by hand, one statement over the store's tables: the 100
#: nearest tenant chunks by the HNSW index (cosine >= 0, the retriever's min_score) and the
#: 100 best by BM25 with the document field (postings ``__terms``, document lengths
#: ``__doclen``, statistics ``__bm25``), both scores for their union, each min-max scaled,
#: 0.6 / 0.4, the 3 best with their rows.
HYBRID_FLOOR = """
WITH q AS (SELECT %(terms)s::text[] AS terms, %(qtf)s::int[] AS qtf),
st AS (SELECT greatest(sum(n), 1)::float8 AS n, greatest(sum(docs), 1)::float8 AS nd,
       sum(total)::float8 / greatest(sum(n), 1) AS avg, sum(dtotal)::float8 / greatest(sum(docs), 1)
       AS davg FROM bench_service__bm25),
c AS (SELECT p.chunk_id AS id, p.doc_id, sum(q.qtf[array_position(q.terms, p.term)]
        * ln(1 + (st.n - p.df + 0.5) / (p.df + 0.5)) * p.tf * 2.2
        / (p.tf + 1.2 * (0.25 + 0.75 * p.dl / st.avg))) AS score
      FROM (SELECT term, doc_id, chunk_id, tf::float8 AS tf, dl,
              count(*) OVER (PARTITION BY term)::float8 AS df
            FROM bench_service__terms WHERE term = ANY (%(terms)s) AND tf > 0) p, st, q
      WHERE p.chunk_id IN (SELECT id FROM bench_service WHERE metadata @> %(tenant)s::jsonb)
      GROUP BY p.chunk_id, p.doc_id),
d AS (SELECT p.doc_id, sum(q.qtf[array_position(q.terms, p.term)]
        * ln(1 + (st.nd - p.df + 0.5) / (p.df + 0.5)) * p.tf * 2.2
        / (p.tf + 1.2 * (0.25 + 0.75 * l.len / st.davg))) AS score
      FROM (SELECT term, doc_id, sum(dtf)::float8 AS tf,
              count(*) OVER (PARTITION BY term)::float8 AS df
            FROM bench_service__terms WHERE term = ANY (%(terms)s) AND dtf > 0
            GROUP BY term, doc_id) p
      JOIN bench_service__doclen l USING (doc_id), st, q
      WHERE p.doc_id IN (SELECT doc_id FROM c) GROUP BY p.doc_id),
lex AS (SELECT c.id, c.score + 2 * d.score AS score FROM c JOIN d USING (doc_id)),
lt AS (SELECT id, score FROM lex ORDER BY score DESC, id LIMIT 100),
dt AS (SELECT id, 1 - dist AS score FROM (
        SELECT id, embedding <=> %(v)s AS dist FROM bench_service
        WHERE metadata @> %(tenant)s::jsonb ORDER BY dist LIMIT 100) n WHERE 1 - dist >= 0),
u AS (SELECT id, dt.score AS cs, lt.score AS bs FROM dt FULL JOIN lt USING (id)),
us AS (SELECT id, coalesce(u.cs, 1 - (t.embedding <=> %(v)s)) AS cs,
         coalesce(u.bs, lex.score, 0) AS bs
       FROM u JOIN bench_service t USING (id) LEFT JOIN lex USING (id)),
sc AS (SELECT id,
  0.6 * coalesce((cs - min(cs) OVER ()) / nullif(max(cs) OVER () - min(cs) OVER (), 0), 1)
  + 0.4 * coalesce((bs - min(bs) OVER ()) / nullif(max(bs) OVER () - min(bs) OVER (), 0), 1)
  AS score FROM us ORDER BY score DESC, id LIMIT 3)
SELECT t.id, t.doc_id, t.text, t.metadata, sc.score FROM sc JOIN bench_service t USING (id)
ORDER BY sc.score DESC, t.id
"""


def service_config(dsn: str, llm_url: str, embedder: str, mode: str = "dense") -> dict[str, Any]:
    """The example's configuration: PostgreSQL, the chosen embedder, OpenAI at the wire,
    retrieval in ``mode`` (dense, or hybrid with the default re-scored fusion)."""
    embed: dict[str, Any] = {"provider": embedder}
    if embedder == "hashing":
        embed["dimension"] = DIM
    return {
        "store": {"backend": "pgvector", "dsn": dsn, "table": TABLE, "dimension": DIM},
        "embedder": embed,
        "llm": {"provider": "openai", "api_key": "sk-bench", "base_url": llm_url},
        "retriever": {"mode": mode},
        "rag_k": 3,
    }


def floor_app(config: dict[str, Any]) -> Any:
    """The same ``/ask`` written with the raw driver and SDK (the floor)."""
    import numpy as np
    import psycopg2.pool
    from fastapi import FastAPI, Header
    from openai import AsyncOpenAI
    from pgvector.psycopg2 import register_vector
    from starlette.concurrency import run_in_threadpool

    from pywrapai_graph import Embedder
    from pywrapai_graph.application.text_analysis import analyze

    embedder = Embedder(**config["embedder"])
    hybrid = config["retriever"]["mode"] == "hybrid"
    pool = psycopg2.pool.ThreadedConnectionPool(4, 4, config["store"]["dsn"])
    slots, ready = threading.BoundedSemaphore(4), set()
    llm = AsyncOpenAI(api_key="sk-bench", base_url=config["llm"]["base_url"], max_retries=0)
    query = (
        f"SELECT id, doc_id, text, metadata, 1 - (embedding <=> %s) FROM {TABLE} "
        "WHERE metadata @> %s::jsonb ORDER BY embedding <=> %s LIMIT 3"
    )

    def search(vector: Any, tenant: str, question: str) -> list[Any]:
        with slots:
            conn = pool.getconn()
            try:
                if id(conn) not in ready:  # the store's session settings, once per connection
                    conn.autocommit = True
                    register_vector(conn)
                    with conn.cursor() as cur:
                        cur.execute("SET hnsw.ef_search = 200")
                        cur.execute("SET hnsw.iterative_scan = relaxed_order")
                        cur.execute("SET work_mem = '32MB'")  # as the store sets it
                    ready.add(id(conn))
                with conn.cursor() as cur:
                    scope = json.dumps({"tenant": tenant})
                    if hybrid:
                        terms = Counter(analyze(question))
                        given = {"terms": list(terms), "qtf": list(terms.values())}
                        cur.execute(HYBRID_FLOOR, {**given, "v": vector, "tenant": scope})
                    else:
                        cur.execute(query, (vector, scope, vector))
                    return list(cur.fetchall())
            finally:
                pool.putconn(conn)

    app = FastAPI()

    @app.post("/ask")
    async def ask(body: dict[str, Any], x_tenant: str = Header()) -> dict[str, Any]:
        question = str(body["question"])
        vector = np.asarray(await embedder.aembed_one(question), dtype=np.float32)
        rows = await run_in_threadpool(search, vector, x_tenant, question)
        context = "\n\n".join(r[2] for r in rows)
        reply = await llm.chat.completions.create(
            model="gpt-4o-mini",
            messages=[
                {"role": "system", "content": "Answer from the context."},
                {"role": "user", "content": f"Context:\n{context}\n\nQuestion: {question}"},
            ],
        )
        usage = reply.usage
        return {
            "answer": reply.choices[0].message.content,
            "sources": [
                {"doc_id": r[1], "text": r[2], "score": float(r[4]), "metadata": r[3]} for r in rows
            ],
            "usage": {
                "input_tokens": usage.prompt_tokens if usage else 0,
                "output_tokens": usage.completion_tokens if usage else 0,
            },
        }

    return app


def ours_app() -> Any:
    """The example's app from ``BENCH_CONFIG``: uvicorn's factory in each worker process."""
    from examples.fastapi_service import create_app

    return create_app(json.loads(os.environ["BENCH_CONFIG"]))


def serve(kind: str, port: int, config: dict[str, Any], workers: int = 1) -> None:
    """Run one service with uvicorn, or the LLM's wire server, until terminated (a child)."""
    if kind == "wire":
        from pywrapai_graph.testing.wire import OpenAIWire

        with OpenAIWire(responder=lambda _: "From the context: within 14 days.") as wire:
            print(wire.base_url, flush=True)
            threading.Event().wait()
    import uvicorn

    app: Any = floor_app(config) if kind == "floor" else "benchmarks.fastapi_load:ours_app"
    uvicorn.run(
        app,
        factory=kind == "ours",
        workers=workers,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
        timeout_keep_alive=120,  # a client's pooled connection waits out a slow round
    )


@dataclass
class Service:
    """A service in a child process; its CPU time read from /proc."""

    kind: str
    proc: subprocess.Popen[bytes]
    url: str

    @classmethod
    def start(cls, kind: str, config: dict[str, Any], workers: int = 1) -> Service:
        from pywrapai_graph.testing.servers import free_port

        port = free_port()
        env = {**os.environ, "BENCH_CONFIG": json.dumps(config)}
        command = [sys.executable, "-m", "benchmarks.fastapi_load", "--serve", kind]
        command += ["--port", str(port), "--workers", str(workers)]
        out = subprocess.PIPE if kind == "wire" else None
        proc = subprocess.Popen(command, env=env, stdout=out)
        if proc.stdout is not None:  # the wire server says where it listens
            return cls(kind, proc, proc.stdout.readline().decode().strip())
        service = cls(kind, proc, f"http://127.0.0.1:{port}")
        for _ in range(600):  # at most a minute
            if proc.poll() is not None:
                raise SystemExit(f"the {kind} service exited with {proc.returncode}")
            try:
                httpx.get(service.url + "/openapi.json", timeout=1).raise_for_status()
                return service
            except httpx.HTTPError:
                time.sleep(0.1)
        raise SystemExit(f"the {kind} service did not answer within a minute")

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


@dataclass(frozen=True)
class Run:
    requests: int
    seconds: float
    latencies: list[float]
    errors: int
    cpu: float  # the service's CPU seconds
    busy: float  # the load generator's CPU time over the run's wall time

    @property
    def per_request(self) -> float:
        """The service's CPU seconds per request."""
        return self.cpu / self.requests

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _load(url: str, clients: int, total: int) -> tuple[float, list[float], int]:
    latencies: list[float] = []
    errors = 0
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def client(number: int, http: httpx.AsyncClient) -> None:
        nonlocal errors
        for i in range(number, total, clients):
            body = {"question": QUESTIONS[i % len(QUESTIONS)]}
            start = time.perf_counter()
            try:
                r = await http.post("/ask", json=body, headers={"X-Tenant": TENANTS[i % 4]})
                failed = r.status_code != 200 or not r.json()["sources"]
            except httpx.TransportError:
                failed = True
            latencies.append(time.perf_counter() - start)
            errors += failed

    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120) as http:
        warm = {"question": QUESTIONS[0]}  # every client's connection open, one request each
        await asyncio.gather(
            *(
                http.post("/ask", json=warm, headers={"X-Tenant": t})
                for t in (TENANTS[n % 4] for n in range(clients))
            )
        )
        start = time.perf_counter()
        await asyncio.gather(*(client(n, http) for n in range(clients)))
        return time.perf_counter() - start, latencies, errors


def measure(service: Service, clients: int, total: int) -> Run:
    before = service.cpu_seconds()
    used = time.process_time()
    seconds, latencies, errors = asyncio.run(_load(service.url, clients, total))
    busy = (time.process_time() - used) / seconds
    return Run(total, seconds, latencies, errors, service.cpu_seconds() - before, busy)


def ingest(url: str) -> None:
    """Each tenant's documents, through the example's ``/ingest`` (idempotent)."""
    for tenant in TENANTS:
        docs = [
            {
                "id": f"doc{d}",
                "text": " ".join(random.Random(f"{tenant}/{d}").choices(_VOCABULARY, k=80)),
            }
            for d in range(DOCS)
        ]
        r = httpx.post(
            url + "/ingest", json={"documents": docs}, headers={"X-Tenant": tenant}, timeout=600
        )
        r.raise_for_status()


def run(dsn: str, levels: list[int], total: int, embedder: str, rounds: int, mode: str) -> None:
    wire = Service.start("wire", {})
    config = service_config(dsn, wire.url, embedder, mode)
    services = [Service.start(kind, config) for kind in ("floor", "ours")]
    results: dict[tuple[str, int], Run] = {}
    pairs: dict[int, list[float]] = {}  # per level: each round's CPU/req, ours over the floor's
    try:
        ingest(services[1].url)
        for clients in levels:  # the best run of each counts; the order alternates by round
            for i in range(rounds):
                runs: dict[str, Run] = {}
                for service in services if i % 2 == 0 else services[::-1]:
                    run = runs[service.kind] = measure(service, clients, total)
                    best = results.get((service.kind, clients))
                    if best is None or run.seconds < best.seconds:
                        results[service.kind, clients] = run
                pairs.setdefault(clients, []).append(
                    runs["ours"].per_request / runs["floor"].per_request
                )
    finally:
        for service in [*services, wire]:
            service.stop()
    report(results, pairs, levels, total, f"{mode} retrieval, {embedder}")


def report(
    results: dict[tuple[str, int], Run],
    pairs: dict[int, list[float]],
    levels: list[int],
    total: int,
    emb: str,
) -> None:
    print(f"\nFastAPI example over PostgreSQL ({emb} embedder, wire-server LLM), {total} /ask")
    print("per run; ours as a ratio of the floor (raw psycopg2 + AsyncOpenAI, same work)")
    head = f"{'clients':>7} {'floor req/s':>12} {'ours req/s':>11} {'ratio':>6}"
    head += f" {'p50 ms f/o':>14} {'ratio':>6} {'p99 ms f/o':>16} {'ratio':>6} {'CPU/req':>8}"
    print(head + f" {'median':>7} {'errors':>7} {'load gen busy':>14}")
    for c in levels:
        f, o = results["floor", c], results["ours", c]
        rate_f, rate_o = f.requests / f.seconds, o.requests / o.seconds
        p50 = (f.percentile(0.5) * 1e3, o.percentile(0.5) * 1e3)
        p99 = (f.percentile(0.99) * 1e3, o.percentile(0.99) * 1e3)
        cpu = o.per_request / f.per_request
        print(
            f"{c:>7} {rate_f:>12.1f} {rate_o:>11.1f} {rate_o / rate_f:>5.2f}x"
            f" {p50[0]:>6.0f}/{p50[1]:<7.0f} {p50[1] / p50[0]:>5.2f}x"
            f" {p99[0]:>7.0f}/{p99[1]:<8.0f} {p99[1] / p99[0]:>5.2f}x {cpu:>7.2f}x"
            f" {statistics.median(pairs[c]):>6.2f}x"
            f" {f.errors:>3}/{o.errors:<3} {f.busy:>6.0%}/{o.busy:<6.0%}"
        )
    print("(CPU/req: of the best runs; median: of each round's pair, ours over the floor's;")
    print(" errors: floor/ours; load gen busy: this process's CPU over the run, near 100% means")
    print(" the clients, not the services, set the pace)")


#: seconds of load before the freeze and after the thaw
BEFORE_S, AFTER_S = 5, 10


async def _timeline(url: str, clients: int, seconds: float) -> list[tuple[float, float, int]]:
    """``(sent at, latency, HTTP status or 0 for no answer)`` of every request that
    ``clients`` clients sent, one after another each, for ``seconds``."""
    records: list[tuple[float, float, int]] = []
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    begin = time.monotonic()

    async def client(n: int, http: httpx.AsyncClient) -> None:
        i = n
        while (sent := time.monotonic()) - begin < seconds:
            body, tenant = {"question": QUESTIONS[i % len(QUESTIONS)]}, TENANTS[i % 4]
            try:
                status = (
                    await http.post("/ask", json=body, headers={"X-Tenant": tenant})
                ).status_code
            except httpx.TransportError:
                status = 0
            records.append((sent - begin, time.monotonic() - sent, status))
            i += clients

    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120) as http:
        await asyncio.gather(*(client(n, http) for n in range(clients)))
    return records


def freeze(clients: int, seconds: float, statement_ms: int) -> None:
    """The freeze scenario (see the module docstring)."""
    from tests.integration.servers import EmbeddedPostgres
    from tests.integration.test_pg_frozen import frozen

    pg = EmbeddedPostgres()
    dsn = pg.start()
    wire = Service.start("wire", {})
    config = service_config(dsn, wire.url, "hashing")
    config["store"]["statement_timeout_ms"] = statement_ms
    service = Service.start("ours", config, workers=4)
    try:
        ingest(service.url)
        asyncio.run(_timeline(service.url, clients, 1))  # every worker warm

        def freezer() -> None:
            time.sleep(BEFORE_S)
            with frozen(pg):
                time.sleep(seconds)

        thread = threading.Thread(target=freezer)
        thread.start()
        records = asyncio.run(_timeline(service.url, clients, BEFORE_S + seconds + AFTER_S))
        thread.join()
    finally:
        for s in (service, wire):
            s.stop()
        pg.stop()
    report_freeze(records, seconds, clients, statement_ms)


def report_freeze(
    records: list[tuple[float, float, int]], seconds: float, clients: int, statement_ms: int
) -> None:
    print(f"\nFastAPI example, 4 workers, {clients} clients; PostgreSQL frozen for {seconds:g} s")
    print(f"from second 0 (store.statement_timeout_ms = {statement_ms}, pool 4 per worker)")
    print(
        f"{'second':>6} {'phase':>6} {'sent':>5} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7}  status"
    )
    rows: dict[int, list[tuple[float, int]]] = {}
    for sent, latency, status in records:  # by the second the request was sent in
        rows.setdefault(math.floor(sent - BEFORE_S), []).append((latency, status))
    for second, row in sorted(rows.items()):
        latencies = sorted(latency for latency, _ in row)
        failed = Counter(status for _, status in row if status != 200)
        phase = "before" if second < 0 else "frozen" if second < seconds else "after"
        p50 = latencies[len(latencies) // 2] * 1e3
        p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))] * 1e3
        statuses = " ".join(f"{code or 'none'}:{n}" for code, n in sorted(failed.items()))
        print(
            f"{second:>6} {phase:>6} {len(row):>5} {p50:>8.0f} {p99:>8.0f}"
            f" {failed.total():>7}  {statuses}"
        )
    print("(second: when the requests were sent, from the freeze; latency: until their answer)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", default="50,100,200", help="concurrent clients per run")
    parser.add_argument("--requests", type=int, default=600, help="requests per run")
    parser.add_argument("--embedder", choices=["hashing", "local"], default="hashing")
    parser.add_argument("--modes", default="dense,hybrid", help="retrieval modes, in turn")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each service per level")
    parser.add_argument(
        "--freeze", type=float, metavar="SECONDS", help="the freeze scenario instead (10)"
    )
    parser.add_argument(
        "--statement-timeout-ms", type=int, default=3000, help="the store's, in --freeze"
    )
    parser.add_argument("--serve", choices=["ours", "floor", "wire"], help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--workers", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve, args.port, json.loads(os.environ["BENCH_CONFIG"]), args.workers)
        return
    if args.freeze:
        freeze(int(args.clients.split(",")[0]), args.freeze, args.statement_timeout_ms)
        return
    from pywrapai_graph.testing.servers import server_url

    levels = [int(c) for c in args.clients.split(",")]
    with server_url("postgres") as dsn:
        for mode in args.modes.split(","):
            run(dsn, levels, args.requests, args.embedder, args.rounds, mode)


if __name__ == "__main__":
    main()
