"""PostgresBudget: one provider key's limits in one PostgreSQL row, shared by every process.

The row holds the last 60 s of admissions (times on the database's clock, their tokens and
ids) and the slots in flight (ids and lease expiries). One ``UPDATE`` decides a turn: it
drops what left the windows and the expired leases, checks the limits and appends the new
admission, all on the row it has locked, so concurrent admissions from any process queue on
that row and each sees the one before it (PostgreSQL re-evaluates an ``UPDATE`` on the
newest version of a row it waited for). A worker thread renews this process's leases every
third of the lease and sends settles and releases; a process that dies stops renewing, and
its slots come back when their leases expire.
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
import time
from typing import NamedTuple

from pywrapai_graph.adapters.shared.connection import SharedDatabase
from pywrapai_graph.application.provider_limiter import WINDOW_S, window_delay
from pywrapai_graph.domain import Limits
from pywrapai_graph.errors import InvalidArgumentError, RuntimeFailure
from pywrapai_graph.ports.shared_budget import Admission, SharedBudget

__all__ = ["DEFAULT_LEASE_S", "TABLE", "PostgresBudget"]

logger = logging.getLogger(__name__)

TABLE = "pywrapai_shared_limits"
#: how long a slot in flight outlives the last renewal of a holder that stopped renewing
DEFAULT_LEASE_S = 30.0
#: the shortest wait before asking again (a refusal whose window has just moved on)
_RETRY_S = 0.001

_CREATE = f"""
DO $$ BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('{TABLE}'));  -- concurrent first uses: one creates
  IF to_regclass('{TABLE}') IS NULL THEN
    -- unlogged: a budget needs no WAL (after a database crash it starts empty)
    CREATE UNLOGGED TABLE {TABLE} (
      key text PRIMARY KEY,
      at float8[] NOT NULL DEFAULT '{{}}',  -- admissions of the last 60 s (epoch s, db clock)
      tok int8[] NOT NULL DEFAULT '{{}}',  -- their tokens
      used int8 NOT NULL DEFAULT 0,  -- the sum of tok
      ids int8[] NOT NULL DEFAULT '{{}}',  -- their ids
      lease_ids int8[] NOT NULL DEFAULT '{{}}',  -- the slots in flight
      lease_until float8[] NOT NULL DEFAULT '{{}}'  -- when each lease expires
    );
    -- rewritten on every admission: not compressed (pglz would cost more than it saves)
    ALTER TABLE {TABLE} ALTER at SET STORAGE EXTERNAL, ALTER tok SET STORAGE EXTERNAL,
      ALTER ids SET STORAGE EXTERNAL;
  END IF;
END $$;
INSERT INTO {TABLE} (key) VALUES (%(key)s) ON CONFLICT DO NOTHING
"""

#: ``at`` stays sorted (an admission is stamped no earlier than the one before it), so the
#: admissions that left the window are found by binary search (``width_bucket``) and cut
#: off by slicing: no per-element work but the token sum, and only with a token budget.
_ADMIT = f"""
PREPARE pywrapai_admit(text, int8, int8, int8, int8, int8, float8) AS
UPDATE {TABLE} AS b SET (at, tok, used, ids, lease_ids, lease_until) = (
  SELECT
    CASE WHEN d.ok THEN w.at || greatest(c.now, w.at[cardinality(w.at)]) ELSE w.at END,
    CASE WHEN d.ok THEN w.tok || $3 ELSE w.tok END,
    CASE WHEN d.ok THEN w.used + $3 ELSE w.used END,
    CASE WHEN d.ok THEN w.ids || $2 ELSE w.ids END,
    CASE WHEN d.ok AND $6 IS NOT NULL THEN l.ids || $2 ELSE l.ids END,
    CASE WHEN d.ok AND $6 IS NOT NULL THEN l.until || (c.now + $7)
         ELSE l.until END
  FROM (SELECT extract(epoch FROM clock_timestamp())::float8 AS now) AS c
  CROSS JOIN LATERAL (SELECT width_bucket(c.now - {WINDOW_S}, b.at) AS gone) AS x
  CROSS JOIN LATERAL (
    SELECT b.at[x.gone + 1:] AS at, b.tok[x.gone + 1:] AS tok, b.ids[x.gone + 1:] AS ids,
           b.used - (SELECT coalesce(sum(t), 0) FROM unnest(b.tok[:x.gone]) AS t) AS used) AS w
  CROSS JOIN LATERAL (
    SELECT coalesce(array_agg(v.id ORDER BY v.i), '{{}}') AS ids,
           coalesce(array_agg(v.u ORDER BY v.i), '{{}}') AS until, count(*) AS n
    FROM unnest(b.lease_ids, b.lease_until) WITH ORDINALITY AS v(id, u, i)
    WHERE v.u > c.now) AS l
  CROSS JOIN LATERAL (
    SELECT ($4 IS NULL OR cardinality(w.at) < $4)
       AND ($5 IS NULL OR w.used + $3 <= $5)
       AND ($6 IS NULL OR l.n < $6) AS ok) AS d)
WHERE b.key = $1
RETURNING b.ids[cardinality(b.ids)] IS NOT DISTINCT FROM $2 AS admitted,
  extract(epoch FROM clock_timestamp())::float8,
  CASE WHEN b.ids[cardinality(b.ids)] IS DISTINCT FROM $2 THEN b.at END,
  CASE WHEN b.ids[cardinality(b.ids)] IS DISTINCT FROM $2 THEN b.tok END,
  cardinality(b.lease_ids)
"""

_EXECUTE_ADMIT = "EXECUTE pywrapai_admit(%s, %s, %s, %s, %s, %s, %s)"

_SETTLE = f"""
UPDATE {TABLE} SET used = used + %(tokens)s::int8 - tok[array_position(ids, %(id)s::int8)],
  tok[array_position(ids, %(id)s::int8)] = %(tokens)s::int8
WHERE key = %(key)s AND %(id)s::int8 = ANY(ids)
"""

_RELEASE = f"""
UPDATE {TABLE} AS b SET (lease_ids, lease_until) = (
  SELECT coalesce(array_agg(v.id ORDER BY v.i), '{{}}'),
         coalesce(array_agg(v.u ORDER BY v.i), '{{}}')
  FROM unnest(b.lease_ids, b.lease_until) WITH ORDINALITY AS v(id, u, i)
  WHERE v.id <> ALL(%(ids)s::int8[]))
WHERE b.key = %(key)s AND b.lease_ids && %(ids)s::int8[]
"""

_RENEW = f"""
UPDATE {TABLE} AS b SET lease_until = (
  SELECT array_agg(CASE WHEN v.id = ANY(%(ids)s::int8[])
                        THEN extract(epoch FROM clock_timestamp()) + %(lease)s ELSE v.u END
                   ORDER BY v.i)
  FROM unnest(b.lease_ids, b.lease_until) WITH ORDINALITY AS v(id, u, i))
WHERE b.key = %(key)s AND b.lease_ids && %(ids)s::int8[]
"""


class _Admitted(NamedTuple):
    at: float
    tokens: int


class PostgresBudget(SharedBudget):
    """``limits`` for the provider key ``key``, held by the database at ``dsn``.

    Every process that uses the same database and key is admitted from the same row. Each
    process applies the limits it was given: give every process the same ones.

    Args:
        dsn: the PostgreSQL database (libpq URL or key=value; its password is never shown).
        key: the budget's row (a provider and a key digest, never a key).
        limits: the budget.
        lease_s: how long a dead holder's slot in flight stays taken at most.

    Raises:
        InvalidArgumentError: ``lease_s`` is not positive.
        ConfigurationError: a DSN whose password holds an unencoded reserved character.
    """

    def __init__(
        self, dsn: str, key: str, limits: Limits, *, lease_s: float = DEFAULT_LEASE_S
    ) -> None:
        if not lease_s > 0:
            raise InvalidArgumentError(f"lease_s must be > 0, got {lease_s!r}")
        self._db = SharedDatabase(dsn, "shared limits")
        self.key = key
        self.limits = limits
        self.lease_s = float(lease_s)
        self._created = False
        self._cond = threading.Condition()
        self._held: set[int] = set()
        self._settles: dict[int, int] = {}
        self._releases: list[int] = []
        self._closed = False
        self._worker: threading.Thread | None = None
        self._pid = os.getpid()

    def _params(self, permit: int, tokens: int) -> tuple[object, ...]:
        lim = self.limits
        rpm, tpm, cap = lim.requests_per_minute, lim.tokens_per_minute, lim.max_in_flight
        return self.key, permit, tokens, rpm, tpm, cap, self.lease_s

    def admit(self, tokens: int) -> Admission:
        """One statement: admitted now, or the wait the windows need (None: slots full).

        Raises:
            RuntimeFailure: the database cannot be reached or failed.
        """
        if self._pid != os.getpid():  # forked: the parent's slots and worker are not ours
            self._pid, self._worker, self._cond = os.getpid(), None, threading.Condition()
            self._held, self._settles, self._releases = set(), {}, []
        permit = secrets.randbits(63) or 1
        admitted, now, at, tok, leases = self._admit(permit, tokens)
        if admitted:
            if self.limits.max_in_flight is not None:
                with self._cond:
                    self._held.add(permit)
                    self._start()
            return Admission(permit)
        at, tok = at or [], tok or []
        window = [_Admitted(a, t) for a, t in zip(at, tok, strict=True)]
        wait = window_delay(self.limits, window, sum(tok), tokens, now)
        cap = self.limits.max_in_flight
        slots_full = cap is not None and leases >= cap
        return Admission(None, None if slots_full and wait <= 0 else max(wait, _RETRY_S))

    def _admit(
        self, permit: int, tokens: int
    ) -> tuple[bool, float, list[float] | None, list[int] | None, int]:
        """The row's answer: admitted, the database's time, the window (when refused) and
        the slots in flight."""
        if not self._created:
            self._db.run(_CREATE, {"key": self.key})
            self._created = True
        rows = self._db.run(_EXECUTE_ADMIT, self._params(permit, tokens), prepare=_ADMIT)
        if not rows:  # the row was deleted under us: make it again
            self._db.run(_CREATE, {"key": self.key})
            rows = self._db.run(_EXECUTE_ADMIT, self._params(permit, tokens), prepare=_ADMIT)
        admitted, now, at, tok, leases = rows[0]
        return bool(admitted), float(now), at, tok, int(leases)

    def settle(self, permit: int, tokens: int) -> None:
        """Queue the correction (only a tokens-per-minute budget needs it)."""
        if self.limits.tokens_per_minute is None:
            return
        with self._cond:
            self._settles[permit] = tokens
            self._start()
            self._cond.notify()

    def release(self, permit: int) -> None:
        """Queue the release of ``permit``'s slot (sent within milliseconds)."""
        with self._cond:
            if permit in self._held:
                self._held.discard(permit)
                self._releases.append(permit)
                self._cond.notify()

    def _start(self) -> None:
        """Under the condition: the worker, unless it runs."""
        if self._worker is None and not self._closed:
            name = f"pywrapai-shared-limits-{self.key}"
            self._worker = threading.Thread(target=self._work, name=name, daemon=True)
            self._worker.start()

    def _work(self) -> None:
        renewed = time.monotonic()
        while True:
            with self._cond:
                self._cond.wait_for(
                    lambda: bool(self._settles or self._releases or self._closed),
                    timeout=max(0.0, renewed + self.lease_s / 3 - time.monotonic()),
                )
                settles, self._settles = self._settles, {}
                releases, self._releases = self._releases, []
                held, closed = sorted(self._held), self._closed
            renew = bool(held) and time.monotonic() >= renewed + self.lease_s / 3
            self._send(settles, releases, held if renew else [])
            if renew:
                renewed = time.monotonic()
            if closed:
                return

    def _send(self, settles: dict[int, int], releases: list[int], renew: list[int]) -> None:
        """The queued writes; a failure is logged (a lease not renewed expires)."""
        try:
            for permit, tokens in settles.items():
                self._db.run(_SETTLE, {"key": self.key, "id": permit, "tokens": tokens})
            if releases:
                self._db.run(_RELEASE, {"key": self.key, "ids": releases})
            if renew:
                self._db.run(_RENEW, {"key": self.key, "ids": renew, "lease": self.lease_s})
        except RuntimeFailure as exc:  # its message names host and port only
            logger.warning("shared limits %s: %s", self.key, exc)

    def close(self) -> None:
        """Send what is queued, give back this process's slots, close the connection."""
        with self._cond:
            self._closed = True
            self._releases.extend(self._held)
            self._held.clear()
            worker = self._worker
            self._cond.notify()
        if worker is not None:
            worker.join()
        self._db.close()

    def __repr__(self) -> str:
        return f"PostgresBudget({self.key}, {self._db!r}, lease_s={self.lease_s:g})"
