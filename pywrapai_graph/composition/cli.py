"""The ``pywrapai-graph`` command: ingest, ask, eval, inspect prompts and the store.

Configuration comes from ``--config FILE`` (default ``./pywrapai.yaml`` when present) and
``PYWRAPAI_*`` environment variables. Exit codes: 0 success, 1 a runtime failure (provider,
store, missing file), 2 a usage or configuration error, 3 ``ingest`` finished but skipped
some files (each is listed with its reason), 130 interrupted. ``store compact`` on a store
with nothing to compact (every backend but FAISS) says so and exits 0. A failure is one line
on stderr (with a hint for runtime failures), never a traceback; ``--debug`` adds the
traceback.
"""

from __future__ import annotations

import argparse
import functools
import gc
import os
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

#: What sizes the BLAS thread pool numpy starts when it is imported (OpenBLAS, OpenMP, MKL).
BLAS_THREAD_VARIABLES = (
    "OPENBLAS_NUM_THREADS",
    "GOTO_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
)


def _one_blas_thread() -> bool:
    """Run as the program (``pywrapai-graph``, ``python -m ...cli``) before numpy is loaded
    and with no pool size chosen by the user: numpy's BLAS gets one thread.

    A command makes a few matrix-vector products; starting the pool's threads, which spin
    while they wait, costs more than they save (measured on 2 cores, `ask` on an 85k-chunk
    store: CPU 503 -> 381 ms, wall 437 -> 385 ms, medians of 11). Imported by other code,
    this module changes nothing.
    """
    as_program = __name__ == "__main__" or os.path.basename(sys.argv[0]).startswith(
        "pywrapai-graph"
    )
    return (
        as_program
        and "numpy" not in sys.modules
        and not any(name in os.environ for name in BLAS_THREAD_VARIABLES)
    )


_ONE_BLAS_THREAD = _one_blas_thread()
if _ONE_BLAS_THREAD:  # read once, when numpy loads its BLAS during the imports below
    os.environ["OPENBLAS_NUM_THREADS"] = "1"

# Importing what the commands use creates a few hundred thousand objects and no garbage:
# the cycle collector would walk them again and again (measured ~30 ms of an `ask`), so it
# pauses for these imports only and resumes as it was.
_COLLECTING = gc.isenabled()
gc.disable()
try:
    from pywrapai_graph.composition.eval_command import ProgressBar, add_eval_parser, run_eval
    from pywrapai_graph.composition.object_graph import ObjectGraph
    from pywrapai_graph.composition.schema_command import (
        SCHEMA_ACTIONS,
        add_schema_parsers,
        run_schema_command,
    )
    from pywrapai_graph.composition.settings import DEFAULT_CONFIG_FILE, load_settings
    from pywrapai_graph.domain.ingest_report import DocumentOutcome, IngestStatus
    from pywrapai_graph.errors import (
        AuthenticationError,
        ProviderError,
        PyWrapAIError,
        RateLimitError,
        ResponseFormatError,
        UsageError,
        VectorStoreError,
    )
    from pywrapai_graph.redaction import redact
finally:
    if _COLLECTING:
        gc.enable()
    if _ONE_BLAS_THREAD:  # the variable was for numpy only: commands' children get the
        os.environ.pop("OPENBLAS_NUM_THREADS", None)  # user's environment as it was

if TYPE_CHECKING:
    from pywrapai_graph.composition.graph_llm import GraphLLM
    from pywrapai_graph.composition.llm import LLM

__all__ = ["main"]

#: ``ingest`` stored everything it could but skipped some files (listed in its output).
EXIT_SKIPPED = 3
#: ``ingest`` output that is not a terminal is flushed at least this often (seconds).
_FLUSH_EVERY = 0.5
NO_PROVIDER = """\
No LLM provider is configured, so nothing was sent. To get answers, configure one, e.g.:
  export PYWRAPAI_LLM__PROVIDER=openai OPENAI_API_KEY=sk-...
or in pywrapai.yaml:
  llm:
    provider: anthropic        # openai | anthropic | gemini | ollama
    model: claude-haiku-4-5-20251001
(the provider's own key variable, e.g. ANTHROPIC_API_KEY, is read as usual)"""


class CLIError(PyWrapAIError):
    """A failure reported to the shell user with an exit code."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pywrapai-graph",
        description="Ingest documents into a vector store and ask questions with RAG.",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        action="append",
        help=f"YAML configuration (default: ./{DEFAULT_CONFIG_FILE} when it exists); "
        "repeat it to stack layers, later files on top",
    )
    parser.add_argument(
        "--debug", action="store_true", help="on failure, also print the Python traceback"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    ingest = sub.add_parser(
        "ingest",
        help="chunk, embed and store text/Markdown files",
        description="Ingest text and Markdown files (directories are "
        "searched recursively). Unchanged files are skipped; changed files "
        "replace their previous chunks, all or nothing per file. Symbolic links "
        "out of the given paths, devices, FIFOs, /proc files, non-UTF-8 files and "
        "files whose name is not UTF-8 are "
        "skipped with a reason; the exit code is 3 when anything was skipped.",
    )
    ingest.add_argument("paths", nargs="+", metavar="PATH", help="files or directories")
    ingest.add_argument(
        "--follow-symlinks",
        action="store_true",
        help="also read symbolic links that lead out of the given paths",
    )

    ask = sub.add_parser(
        "ask",
        help="answer a question with retrieved context",
        description="Retrieve context for QUESTION and answer it through the "
        "configured provider; without one, print the assembled messages.",
    )
    ask.add_argument("question", help="the question")
    ask.add_argument(
        "--show-messages",
        action="store_true",
        help="print the exact message list sent to the model",
    )
    ask.add_argument("--no-rag", action="store_true", help="do not retrieve context")

    prompts = sub.add_parser(
        "prompts", help="versioned system prompts", description="Inspect the prompts directory."
    )
    prompts_sub = prompts.add_subparsers(dest="action", required=True, metavar="ACTION")
    prompts_sub.add_parser(
        "list",
        help="list the prompt files",
        description="List the prompt files in the prompts directory.",
    )

    add_eval_parser(sub)

    store = sub.add_parser("store", help="the vector store", description="Inspect the store.")
    store_sub = store.add_subparsers(dest="action", required=True, metavar="ACTION")
    store_sub.add_parser(
        "stats",
        help="backend, location and size",
        description="Show the configured backend, where it lives and its size.",
    )
    clear = store_sub.add_parser(
        "clear",
        help="remove every chunk, manifest and the recorded embedder",
        description="Empty the store, e.g. before re-ingesting with another embedding model.",
    )
    clear.add_argument("--yes", action="store_true", help="really clear it (required)")
    repair = store_sub.add_parser(
        "repair",
        help="remove the chunks of replaces a crashed writer left unfinished",
        description=(
            "Remove the chunks of document versions whose writer stopped mid-replace (a "
            "Chroma or Qdrant server; other stores clean up when they open, or need nothing)."
        ),
    )
    repair.add_argument(
        "--older-than",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="leave a version to a writer that may still be running until repairs have seen "
        "it pending this long (the first run marks it; default 600; 0 when nothing else "
        "writes the store)",
    )
    store_sub.add_parser(
        "compact",
        help="give the FAISS store's file back the space of deleted rows (SQLite VACUUM)",
        description=(
            "Rewrite the store's file as small as its data: FAISS vacuums its SQLite file "
            "(vectors and chunks), giving back the space of deleted rows. Other backends "
            "have nothing to compact: the command says so and exits 0."
        ),
    )
    store_sub.add_parser(
        "migrate",
        help="bring a store written by an earlier release up to this one",
        description=(
            "Upgrade the store in place, once, for a backend that has something to upgrade. "
            "Other stores need nothing: the command says so and exits 0."
        ),
    )
    add_schema_parsers(store_sub)
    return parser


def _ingest(
    container: ObjectGraph, paths: Sequence[str], follow: bool, out: TextIO, err: TextIO
) -> int:
    from pywrapai_graph.adapters.sources.text_files import TextFiles

    try:
        files = TextFiles(paths, follow_symlinks=follow)
    except FileNotFoundError as exc:
        raise CLIError(str(exc)) from None
    retriever = container.retriever()

    live = out.isatty()  # a terminal sees each line at once; a pipe or file gets blocks
    last_flush = time.monotonic()

    def report(outcome: DocumentOutcome) -> None:
        nonlocal last_flush
        shown = files.shown.get(outcome.doc_id, outcome.doc_id)
        if outcome.status is IngestStatus.UNCHANGED:
            out.write(f"unchanged  {shown}\n")
        else:
            out.write(f"ingested   {shown} ({outcome.chunks} chunks)\n")
        if live or time.monotonic() - last_flush > _FLUSH_EVERY:
            out.flush()
            last_flush = time.monotonic()

    with retriever.store as store:
        result = retriever.ingest(
            files.documents(),
            container.chunker(),
            progress=functools.partial(ProgressBar(err), "ingest"),
            on_document=report,
        )
        for skip in files.skipped:
            out.write(f"skipped    {skip.source}: {skip.reason}\n")
        out.write(
            f"{result.chunks_written} chunks added, {len(result.unchanged)} files unchanged, "
            f"{len(result.replaced)} files replaced, {len(files.skipped)} files skipped; "
            f"{len(store)} chunks in the store\n"
        )
    return EXIT_SKIPPED if files.skipped else 0


def _ask(container: ObjectGraph, question: str, show: bool, rag: bool, out: TextIO) -> int:
    graph = container.graph()
    with container.vector_store():
        return _answer(graph, container.llm(), question, show, rag, out)


def _answer(
    graph: GraphLLM, llm: LLM | None, question: str, show: bool, rag: bool, out: TextIO
) -> int:
    messages, hits = graph.assemble(question, rag=rag)
    if show or llm is None:
        for m in messages:
            out.write(f"[{m.role.value.upper()}]\n{m.content}\n\n")
        if hits:
            out.write(
                "retrieved: "
                + ", ".join(
                    f"{h.chunk.metadata.get('source', h.chunk.doc_id)} ({h.score:.3f})"
                    for h in hits
                )
                + "\n\n"
            )
    if llm is None:
        out.write(NO_PROVIDER + "\n")
        return 0
    try:
        response = graph.chat(question, rag=rag)
    finally:
        llm.close()
    out.write(response.content + "\n")
    out.write(
        f"\n[{response.provider}/{response.model}] tokens in/out "
        f"{response.usage.input_tokens}/{response.usage.output_tokens}, "
        f"cost ${response.cost_usd:.6f}\n"
    )
    return 0


def _clear(container: ObjectGraph, yes: bool, out: TextIO) -> int:
    if not yes:
        raise CLIError("store clear removes everything in the store: add --yes to confirm", 2)
    with container.vector_store() as store:
        before = len(store)
        store.clear()
    out.write(f"cleared: {before} chunks removed\n")
    return 0


def _repair(container: ObjectGraph, older_than_s: float, out: TextIO) -> int:
    if not older_than_s >= 0:  # also NaN
        raise CLIError("store repair --older-than takes a number of seconds >= 0", 2)
    with container.vector_store() as store:
        repaired = store.repair(older_than_s=older_than_s)
    out.write(f"repaired: {repaired} document{'' if repaired == 1 else 's'}\n")
    return 0


def _compact(container: ObjectGraph, out: TextIO) -> int:
    settings = container.settings()
    with container.vector_store() as store:
        compact = getattr(store, "compact", None)
        if not callable(compact):
            out.write(
                f"nothing to compact for the {settings.store.backend} backend (only FAISS "
                "compacts its file)\n"
            )
            return 0
        compact()
    out.write(f"compacted: {settings.store.location()}\n")
    return 0


def _migrate(container: ObjectGraph, out: TextIO) -> int:
    settings = container.settings()
    with container.vector_store() as store:
        migrate = getattr(store, "migrate", None)
        if not callable(migrate):
            out.write(f"nothing to migrate for the {settings.store.backend} backend\n")
            return 0
        rewritten = migrate()
    out.write(f"migrated: {rewritten} document{'' if rewritten == 1 else 's'} rewritten\n")
    return 0


def _stats(container: ObjectGraph, out: TextIO) -> int:
    settings = container.settings()
    with container.vector_store() as store:
        dimension = getattr(store, "dimension", None)
        out.write(f"backend:   {settings.store.backend}\n")
        out.write(f"location:  {settings.store.location()}\n")
        out.write(f"chunks:    {len(store)}\n")
        out.write(f"dimension: {dimension if dimension is not None else '-'}\n")
        out.write(f"embedder:  {settings.embedder.provider}\n")
    return 0


def _prompts(container: ObjectGraph, out: TextIO) -> int:
    settings = container.settings()
    files = container.prompts().list_files()
    if not files:
        raise CLIError(f"no prompt files in {settings.prompts.dir!r}")
    for name in files:
        marker = "  (in use)" if name == settings.prompts.file else ""
        out.write(f"{name}{marker}\n")
    return 0


#: What to try next after a runtime failure, by its kind (the first that matches).
_HINTS: tuple[tuple[type[BaseException], str], ...] = (
    (AuthenticationError, "check the API key (llm.api_key or the provider's own variable)"),
    (RateLimitError, "wait and retry, or raise llm.max_retries"),
    (
        ResponseFormatError,
        "the provider answered something unexpected; check llm.base_url and llm.model",
    ),
    (ProviderError, "check llm.provider, llm.base_url and that the service is reachable"),
    (VectorStoreError, "check the store.* settings and that the store is reachable and writable"),
    (OSError, "check the path, its permissions and the free disk space"),
)


def _hint(exc: BaseException) -> str:
    """What to try next after a runtime failure."""
    return next(
        (hint for kind, hint in _HINTS if isinstance(exc, kind)),
        "run again with --debug for the traceback, and report it if it looks like a bug",
    )


def _one_line(exc: BaseException) -> str:
    text = " ".join(part.strip() for part in str(exc).splitlines() if part.strip())
    return redact(text or type(exc).__name__)


def _run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    config: list[str] = args.config or []
    if not config and Path(DEFAULT_CONFIG_FILE).is_file():
        config = [DEFAULT_CONFIG_FILE]
    # the object graph the container is derived from, without dependency-injector: its
    # import alone (~0.25 s) costs most of an `ask` (~0.33 s)
    container = ObjectGraph(load_settings(config))
    commands: dict[str, Callable[[], int]] = {
        "ingest": lambda: _ingest(container, args.paths, args.follow_symlinks, out, err),
        "ask": lambda: _ask(container, args.question, args.show_messages, not args.no_rag, out),
        "prompts": lambda: _prompts(container, out),
        "eval": lambda: run_eval(container, args, out, err),
    }
    if args.command in commands:
        return commands[args.command]()
    actions: dict[str, Callable[[], int]] = {
        "clear": lambda: _clear(container, args.yes, out),
        "repair": lambda: _repair(container, args.older_than, out),
        "compact": lambda: _compact(container, out),
        "migrate": lambda: _migrate(container, out),
        **{name: lambda: run_schema_command(container, args, out) for name in SCHEMA_ACTIONS},
    }
    return actions.get(args.action, lambda: _stats(container, out))()


def main(
    argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Run the command line; returns the exit code (see the module docstring)."""
    out = out or sys.stdout
    err = err or sys.stderr
    args = _parser().parse_args(argv)
    try:
        return _run(args, out, err)
    except KeyboardInterrupt:
        err.write("interrupted\n")
        return 130
    except Exception as exc:  # the one place that turns any failure into an exit code
        if args.debug:
            err.write(redact("".join(traceback.format_exception(exc))))
        if isinstance(exc, CLIError):
            err.write(f"error: {_one_line(exc)}\n")
            return exc.code
        if isinstance(exc, UsageError):
            err.write(f"error: {_one_line(exc)}\n")
            return 2
        kind = "" if isinstance(exc, PyWrapAIError | OSError) else f"{type(exc).__name__}: "
        err.write(f"error: {kind}{_one_line(exc)}\nhint: {_hint(exc)}\n")
        return 1
    finally:
        if argv is None:
            # Run as the program: the interpreter exits next, and its last collection would
            # walk every imported object once more (~35 ms of an `ask`); the command closed
            # what it built, so nothing is left there to finalize.
            gc.freeze()


if __name__ == "__main__":
    sys.exit(main())
