"""The error contract is true: every raise in the package is one of ours (still also the
builtin the reference promises), and errors.py's docstring draws the whole tree."""

from __future__ import annotations

import ast
import builtins
import inspect
from pathlib import Path

import pywrapai_graph
from pywrapai_graph import errors
from pywrapai_graph.domain import agent, agent_state

PACKAGE = Path(pywrapai_graph.__file__).parent
BUILTIN_ERRORS = {
    name
    for name, value in vars(builtins).items()
    if inspect.isclass(value) and issubclass(value, BaseException)
}
# Protocol-mandated or invariant raises that never reach a caller as a failure:
# NotImplementedError in abstract stubs, AssertionError for "unreachable", the end of an
# iterator, and the AttributeError a module __getattr__ must raise (PEP 562).
ALLOWED = {"NotImplementedError", "AssertionError", "StopIteration", "StopAsyncIteration"}


def _raised_name(node: ast.Raise) -> str | None:
    """The builtin a raise names (``ValueError``, ``builtins.ValueError``), or
    ``module.Name`` for a raise of another module's exception (``json.JSONDecodeError``)."""
    exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
    if isinstance(exc, ast.Name):
        return exc.id
    if isinstance(exc, ast.Attribute) and isinstance(exc.value, ast.Name):
        if exc.value.id == "builtins":
            return exc.attr
        if exc.value.id not in ("self", "cls", "errors") and exc.attr[:1].isupper():
            return f"{exc.value.id}.{exc.attr}"
    return None


def _builtin_raises(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    in_getattr = {
        id(node)
        for func in ast.walk(tree)
        if isinstance(func, ast.FunctionDef) and func.name == "__getattr__"
        for node in ast.walk(func)
    }
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Raise) or node.exc is None:
            continue
        name = _raised_name(node)
        foreign = name is not None and "." in name  # json.JSONDecodeError, sqlite3.Error...
        if name is None or (name not in BUILTIN_ERRORS and not foreign) or name in ALLOWED:
            continue
        if name == "AttributeError" and id(node) in in_getattr:
            continue
        found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: raise {name}")
    return sorted(set(found))


def test_no_bare_builtin_raise_anywhere_in_the_package() -> None:
    offenders = [
        hit
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "errors.py"
        for hit in _builtin_raises(path)
    ]
    assert offenders == [], (
        "raise a PyWrapAIError subclass (errors.py) that also derives from the builtin:\n"
        + "\n".join(offenders)
    )


def test_the_scan_would_catch_a_new_bare_raise(tmp_path: Path) -> None:
    planted = PACKAGE / "_planted_for_test.py"
    try:
        planted.write_text(
            "import builtins, json\n"
            "def f(x):\n    raise ValueError('bad')\n"
            "def g(x):\n    raise builtins.TypeError('bad')\n"
            "def h(x):\n    raise json.JSONDecodeError('bad', '', 0)\n",
            encoding="utf-8",
        )
        assert _builtin_raises(planted) == [
            "pywrapai_graph/_planted_for_test.py:3: raise ValueError",
            "pywrapai_graph/_planted_for_test.py:5: raise TypeError",
            "pywrapai_graph/_planted_for_test.py:7: raise json.JSONDecodeError",
        ]
    finally:
        planted.unlink()


def test_every_exported_error_is_one_of_ours() -> None:
    for name in errors.__all__:
        value = getattr(errors, name)
        assert issubclass(value, errors.PyWrapAIError), name


def _classes() -> list[type[BaseException]]:
    ours = [getattr(errors, n) for n in errors.__all__]
    runs = [
        agent_state.ApprovalsError,
        agent_state.RunConflictError,
        agent_state.RunNotFoundError,
        agent_state.RunStateError,
    ]
    return [*ours, agent.AgentMaxTurnsError, agent.AgentBudgetExceededError, *runs]


def _builtins_of(cls: type) -> list[str]:
    return [
        b.__name__
        for b in cls.__mro__[1:]
        if b.__module__ == "builtins" and b not in (Exception, BaseException, object)
    ]


def _draw(cls: type, classes: list[type[BaseException]], prefix: str = "") -> list[str]:
    children = sorted((c for c in classes if c.__bases__[0] is cls), key=lambda c: c.__name__)
    lines = []
    for i, child in enumerate(children):
        last = i == len(children) - 1
        extra = [b for b in _builtins_of(child) if b not in _builtins_of(cls)]
        label = child.__name__ + (f" ({', '.join(extra)})" if extra else "")
        lines.append(prefix + ("└── " if last else "├── ") + label)
        lines += _draw(child, classes, prefix + ("    " if last else "│   "))
    return lines


def test_the_docstring_draws_the_tree_as_it_is() -> None:
    tree = "\n".join(["PyWrapAIError", *_draw(errors.PyWrapAIError, _classes())])
    assert errors.__doc__ is not None
    drawn = "\n".join(line.removeprefix("    ") for line in errors.__doc__.splitlines())
    assert tree in drawn, "update the tree in errors.py's docstring to:\n" + tree
