"""SIGKILL during `ingest` into a milvus-lite folder at random instants: reopened, every
document is whole (version A, version B, or absent), and a re-ingest repairs the rest."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.harness import kill_folder_store

pytest.importorskip("milvus_lite")

# Each kill lands in the ingest command, after the imports (see ``kill_runs``): 16 kills
# drawn over the whole process put about 11 there (the imports took 30% of it on 2 cores).
KILLS = 12
FILES = 12


def test_sigkill_at_random_instants_leaves_whole_documents(tmp_path: Path) -> None:
    lines = "  backend: milvus\n  path: {kb}/milvus.db\n"
    report = kill_folder_store(tmp_path, lines, files=FILES, kills=KILLS, seed=39)
    assert report.kills == KILLS
    # the kills landed while documents were being written, not only before or after
    assert report.mixed_states >= KILLS // 4, report
