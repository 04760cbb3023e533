"""The one compiled module: the chunker's cutting loop (optional, with a pure-Python twin).

Everything else about the package is in pyproject.toml. Without a C compiler (or Python's
headers) the build of the extension fails softly and the chunker runs its Python loop,
which gives the same chunks.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "pywrapai_graph.application._chunker_ext",
            sources=["pywrapai_graph/application/_chunker_ext.c"],
            depends=["pywrapai_graph/application/_chunker_ext_kind.h"],
            optional=True,
        )
    ]
)
