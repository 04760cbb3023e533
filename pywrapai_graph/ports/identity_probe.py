"""The embedder identity a search saw, handed back to the caller of that very search.

A retriever checks, at every query, that the store still holds vectors of its embedder:
another process may have cleared the store and filled it with another model of the same
dimension. Asking the store (``embedder_identity()``) would cost a round trip per query on a
server, so the built-in stores read the identity *in the search itself* (PostgreSQL: in the
search statement; Chroma and Qdrant: in the record lookup every search makes anyway; SQLite
and FAISS: from a copy re-read only when ``data_version`` or the generation moved) and
:func:`report_identity` hands it to the caller's :func:`identity_probe`.

The probe lives in a context variable holding a mutable object, so it reaches a search run
in the offload pool (the caller's context travels with the call) and is private to each
thread and each asyncio task: concurrent searches never see each other's identity.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from pywrapai_graph.domain.manifest import EmbedderIdentity

__all__ = ["IdentityProbe", "identity_probe", "report_identity"]


class IdentityProbe:
    """What the searches inside one :func:`identity_probe` block saw (``seen``: any)."""

    __slots__ = ("identity", "seen")

    def __init__(self) -> None:
        self.seen = False
        self.identity: EmbedderIdentity | None = None


_PROBE: ContextVar[IdentityProbe | None] = ContextVar("pywrapai_identity_probe", default=None)


@contextmanager
def identity_probe() -> Iterator[IdentityProbe]:
    """Collect the embedder identity the searches run inside the block read."""
    probe = IdentityProbe()
    token = _PROBE.set(probe)
    try:
        yield probe
    finally:
        _PROBE.reset(token)


def report_identity(identity: EmbedderIdentity | None) -> None:
    """A store's search tells the identity it read in the same snapshot as its hits
    (None: no embedder recorded); nothing happens outside an :func:`identity_probe`."""
    probe = _PROBE.get()
    if probe is not None:
        probe.seen = True
        probe.identity = identity
