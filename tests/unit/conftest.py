"""Fixtures shared by unit-test modules."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pywrapai_graph.application import chunker as chunker_module


@pytest.fixture(scope="module", params=["compiled", "python"])
def chunker_path(request: pytest.FixtureRequest) -> Iterator[str]:
    """Runs a module's tests on the compiled chunker loops, then on their Python twins.

    ``pytestmark = pytest.mark.usefixtures("chunker_path")`` opts a module in. The
    compiled run is skipped where the extension was not built (never in CI: see
    ``test_chunker_compiled.py``).
    """
    if request.param == "compiled" and chunker_module._NATIVE_CUTTER is None:
        pytest.skip("the compiled chunker (_chunker_ext) is not built here")
    with pytest.MonkeyPatch.context() as patch:
        if request.param == "python":
            patch.setattr(chunker_module, "_NATIVE_CUTTER", None)
            patch.setattr(chunker_module, "_NATIVE_IDS", None)
            patch.setattr(chunker_module, "_NATIVE_CHUNKS", None)
        yield request.param
