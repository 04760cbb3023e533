"""The identity probe hands each search's identity to its own caller: through the offload
pool, and never to a concurrent task's probe."""

from __future__ import annotations

import asyncio

from pywrapai_graph.domain.manifest import EmbedderIdentity
from pywrapai_graph.ports.identity_probe import identity_probe, report_identity
from pywrapai_graph.ports.offload import offload


def _model(name: str) -> EmbedderIdentity:
    return EmbedderIdentity("p", name, 8)


def test_a_report_outside_a_probe_goes_nowhere_and_inside_reaches_it() -> None:
    report_identity(_model("lost"))
    with identity_probe() as probe:
        before = (probe.seen, probe.identity)
        report_identity(None)
    assert before == (False, None)
    assert (probe.seen, probe.identity) == (True, None)
    with identity_probe() as again:
        pass
    assert (again.seen, again.identity) == (False, None)  # a new probe per block


def test_concurrent_tasks_each_see_their_own_search_through_the_pool() -> None:
    async def search(name: str, turn: asyncio.Event, other: asyncio.Event) -> str | None:
        with identity_probe() as probe:
            await offload(report_identity, _model(name))  # a sync store's search, offloaded
            other.set()
            await turn.wait()  # both probes are open at once
        return None if probe.identity is None else probe.identity.model

    async def both() -> list[str | None]:
        first, second = asyncio.Event(), asyncio.Event()
        return list(await asyncio.gather(search("a", first, second), search("b", second, first)))

    assert asyncio.run(both()) == ["a", "b"]
