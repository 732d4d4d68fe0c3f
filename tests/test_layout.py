"""The layout's rules (docs/internals.md): no import circle, rooms that keep to themselves, no shims."""
from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

PACKAGES = ("engine", "scheduler", "cuda_kernels")


def _modules() -> dict[str, Path]:
    mods = {"cli": REPO / "cli.py"}
    for pkg in PACKAGES:
        for path in (REPO / pkg).rglob("*.py"):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = path
    return mods


def _imports(tree: ast.AST):
    """Every import statement, lazy ones inside functions included; `if TYPE_CHECKING:` blocks skipped."""
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            node.body = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        for node in _imports(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert node.level == 0, f"{path}: relative import (the project uses absolute imports)"
                if node.module is None or node.module.split(".")[0] not in (*PACKAGES, "cli"):
                    continue
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    target = sub if sub in mods else node.module
                    assert target in mods, f"{path}: imports {node.module}, which does not exist"
                    edges[name].add(target)
            else:
                for alias in node.names:
                    if alias.name in mods:
                        edges[name].add(alias.name)
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), and self-imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in edges[v]:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle_among_the_projects_modules():
    assert _cycles(_graph()) == []


def test_the_circle_finder_finds_a_planted_circle():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(edges) == [["a", "b", "c"]]


def test_rooms_keep_to_themselves():
    """engine.errors is every room's vocabulary (one error type a problem, whoever finds it)."""
    edges = _graph()
    for name, targets in edges.items():
        if name.startswith("engine.algebra"):
            # the one way out: the CPU MSM fans large sums out over the shared process pool
            allowed = {"engine.errors", "scheduler.cpu_pool"}
            bad = {t for t in targets if not t.startswith("engine.algebra") and t not in allowed}
            assert not bad, f"{name} (the CPU reference math) imports {sorted(bad)}"
        if name.startswith("cuda_kernels"):
            bad = {t for t in targets if not t.startswith("cuda_kernels") and t not in ("engine", "engine.errors")}
            assert not bad, f"{name} imports {sorted(bad)}: cuda_kernels/ knows nothing of the engine"
        if name.startswith("scheduler"):
            curve_math = {t for t in targets if t.startswith(("engine.algebra", "engine.groth16", "engine.backends"))}
            assert not curve_math, f"{name} imports {sorted(curve_math)}: scheduler/ knows nothing of curves"


def test_the_moved_modules_are_gone_from_the_flat_room():
    flat = {p.stem for p in (REPO / "engine").glob("*.py")}
    gone = {"gpu_backend", "gpu_params", "backend", "cpu_backend", "jsonio", "wasm_witness", "cpu_pool",
            "setup_pool", "setup_math", "setup_ops", "field", "curves", "ec", "pairing", "msm", "ntt",
            "limbs", "prover", "verifier", "proof", "setup", "r1cs_check", "bench_circuit"}
    assert not flat & gone, sorted(flat & gone)
    assert not (REPO / "engine" / "gpu").exists()
    for room in ("algebra", "groth16", "backends", "backends/gpu", "formats", "witness", "commands"):
        assert (REPO / "engine" / room / "__init__.py").exists(), room
