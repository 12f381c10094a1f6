"""The public API is fully annotated (issue 11, item 6).

Every public function of the package -- a module-level ``def`` whose name does
not start with an underscore, or a method of a public class (dunder methods
such as ``__init__`` included; ``self``/``cls`` excepted) -- annotates all its
parameters and its return type. The test parses each module with ``ast`` so it
needs no import of optional dependencies.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "dpdbscan"

# No exemptions: every package directory, the command line included.
EXEMPT_DIRS: set[str] = set()


def _is_public(name: str) -> bool:
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def _missing(fn: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> list[str]:
    """Names of the parts of ``fn`` that lack an annotation."""
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    is_static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)
    if method and not is_static and positional:
        positional = positional[1:]  # self / cls
    params = [*positional, *args.kwonlyargs]
    params += [a for a in (args.vararg, args.kwarg) if a is not None]
    missing = [a.arg for a in params if a.annotation is None]
    if fn.returns is None:
        missing.append("return")
    return missing


def _public_functions(
    body: list[ast.stmt], prefix: str, method: bool
) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef, bool]]:
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _is_public(node.name):
            yield prefix + node.name, node, method
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            yield from _public_functions(node.body, f"{prefix}{node.name}.", True)
        elif isinstance(node, ast.If | ast.Try):
            # definitions under ``if TYPE_CHECKING:`` / ``try: ... except ImportError``
            for block in (node.body, node.orelse, getattr(node, "finalbody", [])):
                yield from _public_functions(block, prefix, method)


def _modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if not (set(p.relative_to(SRC).parts[:-1]) & EXEMPT_DIRS))


def unannotated() -> list[str]:
    """``path:line name (missing parts)`` for every public function lacking annotations."""
    found = []
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for name, fn, method in _public_functions(tree.body, "", False):
            missing = _missing(fn, method)
            if missing:
                rel = path.relative_to(SRC.parent)
                found.append(f"{rel}:{fn.lineno} {name} ({', '.join(missing)})")
    return found


def test_modules_found() -> None:
    assert len(_modules()) > 40
    assert any("cli" in p.relative_to(SRC).parts[:-1] for p in _modules())


def test_public_functions_annotated() -> None:
    missing = unannotated()
    if missing:
        pytest.fail(f"{len(missing)} public functions lack annotations:\n" + "\n".join(missing))


if __name__ == "__main__":
    for line in unannotated():
        print(line)
