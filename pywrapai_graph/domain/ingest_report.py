"""What an ingest did with each document, and what it skipped and why."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

__all__ = ["DocumentOutcome", "IngestReport", "IngestStatus", "SkippedSource"]


class IngestStatus(StrEnum):
    """What happened to one document."""

    ADDED = "added"  # the store did not hold it
    REPLACED = "replaced"  # its previous chunks were replaced by the new ones
    UNCHANGED = "unchanged"  # the same content was already stored completely


@dataclass(frozen=True, slots=True)
class DocumentOutcome:
    """One document's result: its id, what happened and how many chunks it now has."""

    doc_id: str
    status: IngestStatus
    chunks: int


@dataclass(frozen=True, slots=True)
class SkippedSource:
    """A source that was not ingested (a file that is not text, a link out of the roots...)."""

    source: str
    reason: str


@dataclass(frozen=True, slots=True)
class IngestReport:
    """The typed result of an ingest: every document's outcome and every skip, in order."""

    documents: tuple[DocumentOutcome, ...] = ()
    skipped: tuple[SkippedSource, ...] = field(default=())

    def _with(self, status: IngestStatus) -> list[str]:
        return [d.doc_id for d in self.documents if d.status is status]

    @property
    def added(self) -> list[str]:
        """Ids of the documents that were new to the store."""
        return self._with(IngestStatus.ADDED)

    @property
    def replaced(self) -> list[str]:
        """Ids of the documents whose previous version was replaced."""
        return self._with(IngestStatus.REPLACED)

    @property
    def unchanged(self) -> list[str]:
        """Ids of the documents already stored with the same content."""
        return self._with(IngestStatus.UNCHANGED)

    @property
    def chunks_written(self) -> int:
        """Chunks written for added and replaced documents."""
        return sum(d.chunks for d in self.documents if d.status is not IngestStatus.UNCHANGED)
