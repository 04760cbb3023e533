"""benchmarks/fastapi_load.py is not run by the suite (it loads two services for minutes);
its command line is, so the module imports and explains itself."""

from __future__ import annotations

import pytest

from benchmarks.fastapi_load import main


def test_the_load_benchmark_imports_and_shows_its_options(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    shown = capsys.readouterr().out
    for option in ("--clients", "--requests", "--embedder", "--rounds"):
        assert option in shown
