"""An import-linter contract type the built-in ones cannot express: an allow-list of externals.

``forbidden`` contracts name what may not be imported, so a package nobody thought to list
(``requests`` in ``domain/``) passes. This contract names what *may* be imported: the standard
library (less the modules listed in ``forbidden_stdlib``) and the ``allowed`` third-party
packages. Registered in pyproject.toml as ``external_imports``; lint-imports puts the working
directory on ``sys.path``, which is how it finds this module.
"""

from __future__ import annotations

import sys
from typing import Any

from grimp import ImportGraph
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck
from importlinter.domain.helpers import module_expressions_to_modules

__all__ = ["ExternalImportsContract"]


class ExternalImportsContract(Contract):
    """The source packages import only the standard library and the ``allowed`` packages.

    Options:
        source_modules: the packages checked (with their descendants).
        allowed: third-party top-level packages they may import (optional).
        forbidden_stdlib: standard-library top-level modules they may not import (optional).
    """

    type_name = "external_imports"

    source_modules = fields.SetField(subfield=fields.ModuleExpressionField())
    allowed = fields.SetField(subfield=fields.StringField(), required=False)
    forbidden_stdlib = fields.SetField(subfield=fields.StringField(), required=False)

    def _option(self, name: str) -> set[Any]:
        # The fields are descriptors on the class; the parsed values live on the instance.
        value: Any = vars(self).get(name)
        return set(value or ())

    def _is_allowed(self, top: str) -> bool:
        if top in self._option("allowed"):
            return True
        return top in sys.stdlib_module_names and top not in self._option("forbidden_stdlib")

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        roots = set(self.session_options["root_packages"])
        sources = module_expressions_to_modules(graph, self._option("source_modules"))
        importers: set[str] = set()
        for source in sources:
            importers.add(source.name)
            importers |= graph.find_descendants(source.name)
        illegal: list[dict[str, Any]] = []
        for importer in sorted(importers):
            for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                top = imported.split(".")[0]
                if top in roots or self._is_allowed(top):
                    continue
                details = graph.get_import_details(importer=importer, imported=imported)
                lines = tuple(d["line_number"] for d in details)
                illegal.append({"importer": importer, "imported": imported, "lines": lines})
        return ContractCheck(kept=not illegal, metadata={"illegal": illegal})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for item in check.metadata["illegal"]:
            lines = ", ".join(f"l.{n}" for n in item["lines"])
            output.print_error(
                f"{item['importer']} is not allowed to import {item['imported']} ({lines})",
                bold=False,
            )
            output.new_line()
