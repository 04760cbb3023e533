"""The embedder identity a search read in its own request, for the retriever's check at every
query without a round trip to ``embedder_identity()``: :func:`report_identity` hands it to the
caller's :func:`identity_probe`, a context variable (it reaches the offload pool)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from pywrapai_graph.domain.manifest import EmbedderIdentity

__all__ = ["IdentityProbe", "identity_probe", "report_identity"]


@dataclass(slots=True)
class IdentityProbe:
    """What the searches inside one :func:`identity_probe` block saw (``seen``: any)."""

    seen: bool = False
    identity: EmbedderIdentity | None = None


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
