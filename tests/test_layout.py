"""The layout rules docs/architecture.md states, checked on the tree as it is."""
from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("service", "training")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
DOCSTRING_WORDS = 120
# A measured figure: a correlation (a decimal beside Pearson, Spearman, r, rho, cosine, dev, agreement), a
# timing (12 ms, 3.2 s, 5 min), a throughput (433 texts/s) or a speed-up (2x faster). Docs and cards hold them.
NUMBER = r"(?<![\w.])[-−]?\d*\.\d{2,}(?![\w.])"
CORRELATION = r"(?i:pearson|spearman|correlat\w*|ρ|rho|cosine|agreement|pairwise|\bdev\b)"
MEASURED = re.compile("|".join([
    rf"{CORRELATION}[^\n]{{0,60}}?{NUMBER}",
    rf"{NUMBER}[^\n]{{0,40}}?{CORRELATION}",
    rf"(?<![\w^])(?:r|ρ|rho)\s?(?:=|≈|~)?\s?{NUMBER}",
    r"(?<![\w.])(?<!, )\d+(?:[.,]\d+)?(?:-\d+(?:\.\d+)?)?(?:\s?(?:ms|seconds|min|minutes|hours?)|\s(?:s|h))\b(?![/-])",
    r"(?<![\w.])\d[\d,.]*\s?(?i:texts|items|requests|tokens|pairs|it)/s\b",
    r"(?<![\w.])\d+(?:\.\d+)?\s?[x×%]\s(?i:faster|slower|quicker)",
    r"(?i:\b(?:faster|slower)\b)[^\n]{0,30}?(?<![\w.])\d+(?:\.\d+)?\s?[x×](?!\w)",
]))


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


def docstrings(path: Path) -> list[tuple[int, str]]:
    """(line, docstring) of the module and of every class and function in it."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)))]
    return [(getattr(n, "lineno", 1), ast.get_docstring(n, clean=False)) for n in nodes if ast.get_docstring(n)]


def prose(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every comment and string constant (docstrings included) of a module."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    comments = [(t.start[0], t.string) for t in tokenize.generate_tokens(io.StringIO(source).readline)
                if t.type == tokenize.COMMENT]
    specs = {id(c) for n in ast.walk(tree) if isinstance(n, ast.FormattedValue) and n.format_spec
             for c in ast.walk(n.format_spec)}  # `{x:42s}`: code, not prose
    return comments + [(n.lineno, n.value) for n in ast.walk(tree)
                       if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in specs]


@pytest.mark.parametrize("package", ["training", "service"])
def test_no_docstring_over_120_words(package: str) -> None:
    """A docstring states what holds in a few lines; the story of how it was found goes to docs/notes/."""
    long = [f"{p.relative_to(REPO)}:{line} ({len(doc.split())} words)" for p in python_files(package)
            for line, doc in docstrings(p) if len(doc.split()) > DOCSTRING_WORDS]
    assert long == []


def test_the_figure_pattern_tells_measurements_from_code() -> None:
    measured = ["12 ms", "took 3.2 s", "433 texts/s", "2x faster", "40% faster", "Pearson r .374", "0.374 Spearman",
                "r = 0.55", "dev r .26-.28", "faster (1.9x)"]
    not_measured = ["texts/s", "%.3f s", "2026.11.2", "section 5.1", "gamma 40", "1-5 scale", "cos >= 0.75",
                    "lr 1e-3", "in %.1f min", "f'{seconds:.0f} s'", "401s carry a request ID", "(0.2 + .1) / 3, Spearman"]
    assert [text for text in measured if not MEASURED.search(text)] == []
    assert [text for text in not_measured if MEASURED.search(text)] == []


@pytest.mark.parametrize("package", ["training", "service"])
def test_no_measured_figure_in_code(package: str) -> None:
    """Measured correlations and timings live in docs/ and the model cards, never in a .py file's prose."""
    found = [f"{p.relative_to(REPO)}:{line}: {m.group(0)!r}" for p in python_files(package)
             for line, text in prose(p) for m in MEASURED.finditer(text)]
    assert found == []


def test_every_dated_note_is_listed_in_the_notes_index() -> None:
    """docs/notes/README.md is how a reader finds a note: one left off it is as good as lost."""
    index = (REPO / "docs" / "notes" / "README.md").read_text(encoding="utf-8")
    unlisted = [p.name for p in sorted((REPO / "docs" / "notes").glob("20*.md")) if f"]({p.name})" not in index]
    assert not unlisted, f"add to docs/notes/README.md: {unlisted}"
