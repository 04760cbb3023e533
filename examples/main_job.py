"""The main job: ingest the bundled documents into the embedded SQLite store, then answer.

    python examples/main_job.py "How long do refunds take?"

With a provider configured (``PYWRAPAI_PROVIDER`` and that provider's API key) the question
is answered through it; otherwise the exact message list that would be sent is printed.
Re-running is idempotent: chunk ids derive from the document, so nothing is duplicated.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pywrapai_graph import (
    LLM,
    Chunker,
    Document,
    FeatureHashingEmbedder,
    GraphLLM,
    SQLiteVectorStore,
    VectorRetriever,
)
from pywrapai_graph.errors import UnknownProviderError
from pywrapai_graph.testing import ScriptedChatModel

HERE = Path(__file__).resolve().parent


def load_documents(folder: Path) -> list[Document]:
    """One Document per Markdown file; the id is the file name, so re-ingesting replaces."""
    return [
        Document(path.read_text(encoding="utf-8"), metadata={"source": path.name}, id=path.name)
        for path in sorted(folder.glob("*.md"))
    ]


def main(argv: list[str]) -> int:
    question = " ".join(argv) or "How long do refunds take?"
    store_path = Path(os.environ.get("PYWRAPAI_STORE", HERE.parent / ".pywrapai" / "kb.db"))
    store_path.parent.mkdir(parents=True, exist_ok=True)
    retriever = VectorRetriever(FeatureHashingEmbedder(), SQLiteVectorStore(store_path), k=3)
    n = retriever.add_documents(load_documents(HERE / "data"), chunker=Chunker(400, 40))
    print(f"ingested {n} chunks into {store_path} ({len(retriever.store)} stored)")

    provider = os.environ.get("PYWRAPAI_PROVIDER")
    llm: LLM | None = None
    if provider:
        try:
            llm = LLM(provider=provider, model=os.environ.get("PYWRAPAI_MODEL"))
        except UnknownProviderError as exc:
            print(f"cannot use PYWRAPAI_PROVIDER={provider!r}: {exc}")
    graph = GraphLLM(
        llm=llm or LLM(provider=ScriptedChatModel()),
        enable_system_prompt_versioning=True,
        prompt_file="support-agent-v2.txt",
        prompts_dir=HERE / "system_prompts_registry",
        retriever=retriever,
        rag_k=3,
    )
    if llm is None:
        messages, hits = graph.assemble(question)
        print("\nNo provider configured: these are the messages that would be sent.\n")
        for m in messages:
            print(f"[{m.role.value.upper()}]\n{m.content}\n")
        print(
            "retrieved: " + ", ".join(f"{h.chunk.metadata['source']} ({h.score:.2f})" for h in hits)
        )
        print("\nTo get an answer, set PYWRAPAI_PROVIDER (and the provider's API key).")
        return 0
    response = graph.chat(question)
    print(response.content)
    print(f"\n[{graph.provider}/{graph.model}] cost ${response.cost_usd:.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
