"""The layout rules docs/architecture.md states, checked on the tree as it is."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("service", "training")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def python_files(*roots: str) -> list[Path]:
    return sorted(p for root in roots for p in (REPO / root).rglob("*.py") if "__pycache__" not in p.parts)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_imports(path: Path) -> list[tuple[list[str], bool, int]]:
    """(names it may import, whether inside a function, line) for each import statement of project modules."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found: list[tuple[list[str], bool, int]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            names: list[str] = []
            if isinstance(child, ast.Import):
                names = [alias.name for alias in child.names]
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (child.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                names = [base] + [f"{base}.{alias.name}" for alias in child.names]
            project = [name for name in names if name.split(".")[0] in PACKAGES]
            if project:
                found.append((project, in_function, child.lineno))
            visit(child, nested)

    visit(tree, False)
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports, at module level or inside a function."""
    modules = {module_name(p): p for p in python_files(*PACKAGES)}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for names, _, _ in project_imports(path):
            # `from a.b import c` imports module a.b, and a.b.c too where c is a module.
            graph[name].update(n for n in names if n in modules and n != name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


def code_lines_with_a_date() -> list[str]:
    hits = []
    for path in python_files(*PACKAGES, "tests", "scripts"):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if DATE.search(line) and path != Path(__file__):
                hits.append(f"{path.relative_to(REPO)}:{number}")
    return hits


def test_service_top_level_has_at_most_ten_modules() -> None:
    top = sorted(p.name for p in (REPO / "service").glob("*.py"))
    assert len(top) <= 10, top


def test_no_import_cycle_among_project_modules() -> None:
    assert cycles(import_graph()) == []


def subpackage_graph(package: str) -> dict[str, set[str]]:
    """`package`'s subpackages (and top-level modules) -> those they import, function-local imports included."""
    def unit(module: str) -> str | None:
        parts = module.split(".")
        return ".".join(parts[:2]) if parts[0] == package and len(parts) > 1 else None

    graph: dict[str, set[str]] = {}
    for module, imported in import_graph().items():
        source = unit(module)
        if source is None:
            continue
        graph.setdefault(source, set())
        for target in imported:
            destination = unit(target)
            if destination is not None and destination != source:
                graph[source].add(destination)
                graph.setdefault(destination, set())
    return graph


@pytest.mark.parametrize("package", ["service", "training"])
def test_no_import_cycle_among_subpackages(package: str) -> None:
    assert cycles(subpackage_graph(package)) == []


def imports_of(package: str) -> set[str]:
    """Every module that a module of `package` imports (project or not), function-local imports included."""
    found: set[str] = set()
    for path in python_files(package.replace(".", "/")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module)
    return found


@pytest.mark.parametrize("package", ["service.scorers", "service.components", "service.artifacts"])
def test_implementations_import_neither_what_assembles_them_nor_the_server(package: str) -> None:
    """The store (model_store, registry) builds scorers and components; the server wraps the app."""
    assembling = ("service.store", "service.server", "service.api", "service.app")
    assert sorted(m for m in imports_of(package) if m.startswith(assembling)) == []


def test_the_data_plane_has_no_http() -> None:
    path = REPO / "service" / "api" / "dataplane.py"
    tree = ast.parse(path.read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert sorted(m for m in imported if m.split(".")[0] in ("flask", "werkzeug")) == []


def test_training_has_at_most_ten_function_local_project_imports() -> None:
    local = [f"{p.relative_to(REPO)}:{line}" for p in python_files("training")
             for _, in_function, line in project_imports(p) if in_function]
    assert len(local) <= 10, local


def test_at_most_ten_code_lines_carry_a_date() -> None:
    hits = code_lines_with_a_date()
    assert len(hits) <= 10, hits
