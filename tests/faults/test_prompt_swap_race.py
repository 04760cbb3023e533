"""A prompt file swapped for a link to an outside file, while it is loaded, leaks nothing.

Another process flips one prompt name between a regular file of the prompts folder and a
symbolic link to a file outside it (each flip an atomic rename), while this one loads that
name at least 16,000 times: every load returns the inside text or is refused; none returns
the outside text. (Loading checked the path and then read it by name until issue 24: 141
of 17,925 loads read the outside file.)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pywrapai_graph import PromptRegistry
from pywrapai_graph.errors import UnsafePromptNameError

LOADS = 16_000

_SWAPPER = """
import os, sys
folder, outside = sys.argv[1], sys.argv[2]
name, spare, inside = (os.path.join(folder, n) for n in ("agent-v1.txt", ".swap", "inside-v1.txt"))
print("ready", flush=True)
while True:
    os.symlink(outside, spare)
    os.replace(spare, name)
    os.link(inside, spare)
    os.replace(spare, name)
"""


def test_loads_during_a_symlink_swap_never_read_outside(tmp_path: Path) -> None:
    folder = tmp_path / "prompts"
    folder.mkdir()
    (folder / "inside-v1.txt").write_text("INSIDE prompt")
    (folder / "agent-v1.txt").write_text("INSIDE prompt")
    outside = tmp_path / "secret.txt"
    outside.write_text("OUTSIDE secret")
    registry = PromptRegistry(folder)
    outcomes = {"inside": 0, "refused": 0, "leaked": 0}
    swapper = subprocess.Popen(
        [sys.executable, "-c", _SWAPPER, str(folder), str(outside)], stdout=subprocess.PIPE
    )
    try:
        assert swapper.stdout is not None and swapper.stdout.readline() == b"ready\n"
        loads = 0
        # at least LOADS, and on until both states were seen (a busy machine may starve one)
        while loads < LOADS or (
            min(outcomes["inside"], outcomes["refused"]) == 0 and loads < 50 * LOADS
        ):
            loads += 1
            try:
                text = registry.load("agent-v1.txt")
            except UnsafePromptNameError as exc:
                outcomes["leaked" if "OUTSIDE" in str(exc) else "refused"] += 1
                continue
            outcomes["leaked" if "OUTSIDE" in text else "inside"] += 1
            assert text in ("INSIDE prompt", "OUTSIDE secret")
    finally:
        swapper.kill()
        swapper.wait()
        if swapper.stdout is not None:
            swapper.stdout.close()
    assert outcomes["leaked"] == 0, outcomes
    assert outcomes["inside"] > 0 and outcomes["refused"] > 0, outcomes
