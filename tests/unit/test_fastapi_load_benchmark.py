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


def test_the_freeze_scenario_is_offered(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    shown = capsys.readouterr().out
    assert "--freeze" in shown and "--statement-timeout-ms" in shown


def test_the_freeze_table_has_a_row_per_second_by_phase(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from benchmarks.fastapi_load import BEFORE_S, report_freeze

    records = [  # (sent at, latency, status): one second before, two frozen, one after
        (BEFORE_S - 0.5, 0.1, 200),
        (BEFORE_S + 0.2, 3.0, 503),
        (BEFORE_S + 0.7, 5.0, 503),
        (BEFORE_S + 1.5, 2.0, 0),
        (BEFORE_S + 2.1, 0.2, 200),
    ]
    report_freeze(records, 2, 4, 3000)
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    table = {row[0]: row[1:] for row in rows if row and row[0].lstrip("-").isdigit()}
    assert table["-1"][:5] == ["before", "1", "100", "100", "0"]
    assert table["0"] == ["frozen", "2", "5000", "5000", "2", "503:2"]
    assert table["1"] == ["frozen", "1", "2000", "2000", "1", "none:1"]
    assert table["2"][:5] == ["after", "1", "200", "200", "0"]
