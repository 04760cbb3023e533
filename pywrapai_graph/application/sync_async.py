"""Where :mod:`pywrapai_graph.ports.sync_async` (``drive`` / ``adrive``) used to live."""

from pywrapai_graph.ports.sync_async import Core, adrive, drive

__all__ = ["Core", "adrive", "drive"]
