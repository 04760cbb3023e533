"""Message assembly cost for a 20-turn history, against a bare list build in the same run.

Run: .venv/bin/python -m benchmarks.assembly
"""

from __future__ import annotations

import subprocess
import sys

from benchmarks._table import best_of, print_table
from pywrapai_graph import LLM, AssembleMessages, GraphLLM, Message, Role
from pywrapai_graph.testing import ScriptedChatModel


def main() -> None:
    history = [
        Message(Role.USER if i % 2 == 0 else Role.ASSISTANT, f"turn {i} " + "x" * 200)
        for i in range(40)  # 20 turns = 20 user + 20 assistant messages
    ]
    system = Message(Role.SYSTEM, "You are a helpful support agent.")
    assemble = AssembleMessages("You are a helpful support agent.", versioning=True)
    graph = GraphLLM(LLM(provider=ScriptedChatModel())).with_system_prompt("You are helpful.")

    def bare() -> list[Message]:
        return [system, *history, Message(Role.USER, "What's my name?")]

    n = 20_000
    t_bare = best_of(bare, number=n)
    t_use_case = best_of(lambda: assemble("What's my name?", history), number=n)
    t_graph = best_of(lambda: graph.assemble("What's my name?", history), number=n)
    print_table(
        "Assemble a 20-turn history (best of 5 rounds)",
        [
            ("bare list build [system, *history, current] (anchor)", t_bare, 1.0),
            ("AssembleMessages (validation + versioning)", t_use_case, t_use_case / t_bare),
            ("GraphLLM.assemble (no retriever)", t_graph, t_graph / t_bare),
        ],
    )

    def run_import(stmt: str) -> float:
        code = f"import time; s=time.perf_counter(); {stmt}; print(time.perf_counter()-s)"
        runs = [
            float(
                subprocess.run(
                    [sys.executable, "-c", code], capture_output=True, text=True, check=True
                ).stdout
            )
            for _ in range(5)
        ]
        return min(runs)

    t_json = run_import("import json")
    t_pkg = run_import("import pywrapai_graph, pywrapai")
    t_graph_import = run_import("from pywrapai_graph import GraphLLM, ToolRegistry")
    print_table(
        "Import time in a fresh interpreter (best of 5)",
        [
            ("import json (anchor)", t_json, 1.0),
            ("import pywrapai_graph, pywrapai (lazy)", t_pkg, t_pkg / t_json),
            (
                "from pywrapai_graph import GraphLLM, ToolRegistry",
                t_graph_import,
                t_graph_import / t_json,
            ),
        ],
        unit="ms",
    )


if __name__ == "__main__":
    main()
