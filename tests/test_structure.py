"""The layers of docs/architecture.md, read from the source with ``ast`` (function-level and TYPE_CHECKING imports
included): sizing (``optimizer/sizing/``) sits below planning and above the kernel, so it never imports the planner
nor ``gpuopt`` outside ``gpuopt.kernel`` (issue 25)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SIZING = ROOT / "optimizer" / "sizing"

#: The planning modules (request resolution, candidates, model, solve, explain: ``optimizer.planning``) and the
#: commands' modules above them, which sizing must not import.
PLANNER = ("optimizer.planning", "optimizer.review", "optimizer.explain", "optimizer.diagnose",
           # the planner's old module paths, should one come back
           "optimizer.model", "optimizer.fleet", "optimizer.exact", "optimizer.shared", "optimizer.fleet_explain",
           "optimizer.solve", "optimizer.horizon", "optimizer.demand")


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in ``path``, anywhere in the file; ``from X import a`` gives ``X.a`` (the name
    may be a module), relative imports resolved against the file's package."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = package.split(".")
                pkg = pkg[: len(pkg) - (node.level - 1)]
                base = ".".join(pkg + ([base] if base else []))
            out += [(node.lineno, f"{base}.{a.name}") for a in node.names]
    return out


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def sizing_layer_violations() -> list[str]:
    """``file:line module`` for each import of the sizing sub-package that reaches the planner or ``gpuopt`` outside
    ``gpuopt.kernel``."""
    bad = []
    for path in sorted(SIZING.rglob("*.py")):
        for line, mod in imported_modules(path):
            planner = any(_under(mod, p) for p in PLANNER)
            upper = _under(mod, "gpuopt") and not _under(mod, "gpuopt.kernel")
            if planner or upper:
                bad.append(f"{path.relative_to(ROOT)}:{line} {mod}")
    return bad


def test_sizing_is_a_sub_package_of_the_modules_it_had():
    names = {p.stem for p in SIZING.glob("*.py")}
    assert {"__init__", "specs", "serving", "training", "goodput", "workload", "network", "estimate"} <= names
    for old in ("sizing", "specs", "serving", "training", "goodput"):  # no module left at the old paths
        assert not (ROOT / "optimizer" / f"{old}.py").exists(), old


def test_sizing_never_imports_the_planner_nor_gpuopt_outside_the_kernel():
    assert sizing_layer_violations() == []


def test_the_check_sees_function_level_imports(tmp_path, monkeypatch):
    """The reader finds an import inside a function and a relative one: a planner import there is caught."""
    pkg = tmp_path / "optimizer" / "sizing"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "bad.py").write_text("def f():\n    from optimizer.fleet import plan\n    from .. import model\n"
                                "    import gpuopt.api\n    from gpuopt.kernel.errors import InputError\n")
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    monkeypatch.setitem(globals(), "SIZING", pkg)
    assert sizing_layer_violations() == ["optimizer/sizing/bad.py:2 optimizer.fleet.plan",
                                         "optimizer/sizing/bad.py:3 optimizer.model",
                                         "optimizer/sizing/bad.py:4 gpuopt.api"]


@pytest.mark.parametrize("path", sorted(SIZING.glob("*.py")), ids=lambda p: p.name)
def test_sizing_modules_import_no_private_name_of_another_module(path):
    """No ``from X import _y`` between modules (a helper two files need is public in the lower one)."""
    private = [f"{mod} (line {line})" for line, mod in imported_modules(path)
               if mod.rpartition(".")[2].startswith("_") and not mod.rpartition(".")[2].startswith("__")]
    assert private == []


def test_no_import_circle_inside_sizing():
    """The sub-package's modules import each other one way (none imports ``optimizer.sizing`` itself, which
    re-exports them all): a depth-first search finds no cycle."""
    modules = {_module_name(p): p for p in SIZING.glob("*.py")}
    edges = {}
    for name, path in modules.items():
        for _line, mod in imported_modules(path):
            while mod and mod not in modules:
                mod = mod.rpartition(".")[0]
            if mod and mod != name:
                edges.setdefault(name, set()).add(mod)
    state: dict[str, int] = {}

    def visit(m: str, trail: list[str]) -> None:
        state[m] = 1
        for n in sorted(edges.get(m, ())):
            assert state.get(n) != 1, " -> ".join(trail + [m, n])
            if n not in state:
                visit(n, trail + [m])
        state[m] = 2

    for m in sorted(modules):
        if m not in state:
            visit(m, [])
