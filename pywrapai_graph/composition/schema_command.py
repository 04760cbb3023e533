"""``pywrapai-graph store init`` and ``store grants``: a PostgreSQL store's schema, created
once by its owner, and the rights of the application roles that use it."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, TextIO

from pywrapai_graph.composition.backends import init_pgvector_schema, pgvector_grants

if TYPE_CHECKING:
    from pywrapai_graph.composition.object_graph import ObjectGraph

__all__ = ["SCHEMA_ACTIONS", "add_schema_parsers", "run_schema_command"]

#: the ``store`` actions of this module
SCHEMA_ACTIONS = ("init", "grants")
_NEXT = (
    "application roles: `pywrapai-graph store grants --reader ROLE --writer ROLE` prints "
    "their GRANT statements (run them as the owner); the service then runs with "
    "store.create_schema: false\n"
)


def add_schema_parsers(store_sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``store init`` and ``store grants`` sub-commands."""
    store_sub.add_parser(
        "init",
        help="create the PostgreSQL schema (extension, tables, indexes, version row)",
        description=(
            "Create the pgvector extension, the store's tables and indexes and its row in "
            "pywrapai_schema, with the configured store.dsn (the owner's). Idempotent; refuses "
            "a newer schema version. Then `store grants` prints the rights of the roles the "
            "service uses (docs/least-privilege.md)."
        ),
    )
    grants = store_sub.add_parser(
        "grants",
        help="print the GRANT statements for a read-only and a read-write role",
        description=(
            "Print, for the owner to run, the GRANT statements that let ROLEs use the store: "
            "--reader searches and counts, --writer also ingests, replaces and deletes. "
            "The store's tables are read from the server (store.dsn), so run it after "
            "`store init`, and again after an upgrade that changes the schema. Changes nothing."
        ),
    )
    grants.add_argument("--reader", metavar="ROLE", help="a role that only reads")
    grants.add_argument("--writer", metavar="ROLE", help="a role that reads and writes")


def run_schema_command(container: ObjectGraph, args: argparse.Namespace, out: TextIO) -> int:
    """Run ``store init`` or ``store grants``; returns the exit code."""
    store = container.settings().store
    if args.action == "grants":
        out.write("\n".join(pgvector_grants(store, args.reader, args.writer)) + "\n")
        return 0
    created = init_pgvector_schema(store)
    state = "created" if created else "already up to date (nothing changed)"
    out.write(f"schema for {store.location()}: {state}\n{_NEXT}")
    return 0
