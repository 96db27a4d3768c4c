"""The package's layers, checked on its source: who may import whom, no cycles, no hidden edges.

Every import counts, including those inside functions (only ``if TYPE_CHECKING:`` blocks are exempt), so
an edge cannot hide in a function. docs/architecture.md draws the same layers.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.contract.samples import CONTENT, labelled

SRC = Path(__file__).resolve().parents[1] / "src"

#: Top to bottom: a module may import its own layer's packages' modules and those of any layer below.
#: Packages in one layer are independent of each other (none imports another).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("marsrag.__main__", "marsrag.cli_reference"),
    ("marsrag.cli", "marsrag.pytest_plugin"),
    ("marsrag._cli_help",),
    ("marsrag.render_runs", "marsrag.render_knowledge", "marsrag.render_live"),
    ("marsrag.render_text",),
    ("marsrag.web",),
    ("marsrag.compose", "marsrag.regression"),
    ("marsrag.queue", "marsrag.flows"),
    ("marsrag.runtime",),
    ("marsrag.views",),
    ("marsrag.metrics", "marsrag.rag", "marsrag.llm"),
    ("marsrag.experiments",),
    ("marsrag.integrations",),
    ("marsrag.store",),
    ("marsrag.chain", "marsrag.events"),
    ("marsrag.tracing",),
    ("marsrag.tasks",),
    ("marsrag.inputs", "marsrag.goals", "marsrag.scaffold"),
    ("marsrag.liveness",),
    ("marsrag.state",),
    ("marsrag.contract",),
    ("marsrag.settings", "marsrag.files"),
    ("marsrag.project", "marsrag.urls"),
    ("marsrag.errors", "marsrag.text", "marsrag.tokens", "marsrag.paths", "marsrag.faults", "marsrag.terminal"),
    ("marsrag",),
    ("marsrag._version",),
)

#: Third-party parts imported inside functions on purpose: too heavy (or optional) to load for every command.
#: A project module is imported lazily only when it loads one of them at its top (directly or not), or from
#: the CLI, whose commands each load only their own library. Any other import inside a function is an edge
#: in hiding.
LAZY_ON_PURPOSE = (
    "crewai",
    "sqlalchemy",
    "alembic",
    "celery",
    "kombu",
    "redis",
    "uvicorn",
    "fastapi",
    "playwright",
    "rich",
    "opentelemetry",
    "json_repair",
    "numpy",
    "scipy",
    "statsmodels",
    "snowballstemmer",
    "lemminflect",
    "wordllama",
    "httpx",
)
#: Light enough to import at the top elsewhere (``tasks`` reads YAML configs), but imported inside a function
#: by the contract, whose ``validate`` must start fast and parses YAML only for an answer written in it (checked
#: statically and by running ``marsrag validate``, at the end of this module). A project module loading it at its
#: top may be imported lazily too: ``metrics`` reads the config folder only for a workflow the store does not know.
LAZY_FOR_FAST_START = ("yaml",)
#: The entry points: each command imports its own library inside the command, so ``validate`` starts fast; the
#: pytest plugin, loaded by every pytest run where MarsRAG is installed, imports its library only when asked to.
ENTRIES = ("marsrag.cli", "marsrag.pytest_plugin")
#: What ``marsrag validate`` imports: the entry point, then (inside the command) the contract, its validator (which
#: the contract package loads on first use) and the input reader.
VALIDATE_IMPORTS = ("marsrag.cli", "marsrag.contract", "marsrag.contract.validate", "marsrag.inputs")
#: What the read-only store commands (``metrics``, ``review``, ``runs list``, ``runs show``) import: the entry point,
#: then (inside the command) their library, the store's SQL implementation (``open_store`` loads it) and the printers.
READ_ONLY_IMPORTS = (
    "marsrag.cli",
    "marsrag.metrics.service",
    "marsrag.metrics.review_service",
    "marsrag.views.document",
    "marsrag.views.viewmodel",
    "marsrag.store.sql",
    "marsrag.render_runs",
    "marsrag.render_text",
)


@dataclass(frozen=True)
class Edge:
    """One import: from module ``source`` (line ``line``) of module ``target``; ``inner`` inside a function."""

    source: str
    target: str
    line: int
    inner: bool


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted((SRC / "marsrag").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str | None:
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    exempt: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            exempt.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    return exempt


def _function_nodes(tree: ast.AST) -> set[int]:
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            inside.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    return inside


def _imported(module: str, path: Path, node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    # ``from package import submodule`` is an edge to the submodule, as ``import package.submodule`` is.
    names = [f"{base}.{alias.name}" for alias in node.names]
    submodules = [name for name in names if name in MODULES]
    return submodules if len(submodules) == len(names) else [base, *names]


def _reasoned_lines(tree: ast.AST, lines: list[str]) -> set[int]:
    """Lines of imports that say why they are lazy: a ``# lazy:`` comment on the line, or above their group.

    A group is a run of consecutive import statements in one block; the comment above it covers them all.
    """
    reasoned: set[int] = set()
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            group: list[ast.stmt] = []
            for stmt in [*block, None]:
                if isinstance(stmt, ast.Import | ast.ImportFrom):
                    group.append(stmt)
                    continue
                if group:
                    first = group[0].lineno
                    covered = first >= 2 and lines[first - 2].strip().startswith("# lazy:")
                    for member in group:
                        if covered or "# lazy:" in lines[member.lineno - 1]:
                            reasoned.add(member.lineno)
                group = []
    return reasoned


REASONED: dict[str, set[int]] = {}


def _all_imports() -> list[tuple[str, str, int, bool]]:
    """Every import statement: (module, imported name, line, inside a function), TYPE_CHECKING blocks left out."""
    found: list[tuple[str, str, int, bool]] = []
    for module, path in MODULES.items():
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        REASONED[module] = _reasoned_lines(tree, source.splitlines())
        exempt, inside = _type_checking_nodes(tree), _function_nodes(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in exempt:
                for name in _imported(module, path, node):
                    found.append((module, name, node.lineno, id(node) in inside))
    return found


IMPORTS = _all_imports()


def _edges() -> list[Edge]:
    edges: set[Edge] = set()
    for module, name, line, inner in IMPORTS:
        target = _resolve(name) if name.startswith("marsrag") else None
        # The root package is a namespace (and the version): importing through it is no edge.
        if target is not None and target not in (module, "marsrag"):
            edges.add(Edge(module, target, line, inner))
    return sorted(edges, key=lambda edge: (edge.source, edge.line, edge.target))


EDGES = _edges()


def _package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def _layer_of(module: str) -> int:
    package = _package(module)
    for index, layer in enumerate(LAYERS):
        if package in layer:
            return index
    raise AssertionError(f"{module} is in no layer: add its package to LAYERS (and to docs/architecture.md)")


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_every_module_is_in_a_layer() -> None:
    """Each module's package is placed in the layer table (a new package is placed on purpose)."""
    for module in MODULES:
        _layer_of(module)


def test_no_module_imports_a_layer_above_it_or_a_sibling_package() -> None:
    """Imports only point down the table; packages sharing a layer stay independent of each other."""
    wrong = [
        f"{edge.source}:{edge.line} imports {edge.target}"
        for edge in EDGES
        if _package(edge.source) != _package(edge.target) and _layer_of(edge.target) <= _layer_of(edge.source)
    ]
    assert wrong == []


def test_no_two_modules_import_each_other() -> None:
    """The module graph (imports inside functions included) has no cycle."""
    graph: dict[str, set[str]] = defaultdict(set)
    for edge in EDGES:
        graph[edge.source].add(edge.target)
    assert _cycles(graph) == []


def test_no_two_packages_import_each_other() -> None:
    """The graph of the ``marsrag.X`` packages has no cycle."""
    graph: dict[str, set[str]] = defaultdict(set)
    for edge in EDGES:
        if _package(edge.source) != _package(edge.target):
            graph[_package(edge.source)].add(_package(edge.target))
    assert _cycles(graph) == []


def test_imports_inside_functions_are_lazy_on_purpose_and_say_why() -> None:
    """An import inside a function loads a heavy part (or a module that does), with a ``# lazy:`` reason."""
    heavy = _heavy_modules(LAZY_ON_PURPOSE + LAZY_FOR_FAST_START)
    problems = []
    for module, name, line, inner in IMPORTS:
        if not inner:
            continue
        if name.startswith("marsrag"):
            target = _resolve(name)
            lazy = module in ENTRIES or target in heavy
        else:
            lazy = name.split(".")[0] in (*LAZY_ON_PURPOSE, *LAZY_FOR_FAST_START)
        if not lazy:
            problems.append(f"{module}:{line} imports {name} inside a function: import it at the top")
        elif line not in REASONED[module]:
            problems.append(f"{module}:{line} imports {name} lazily without a '# lazy: reason' comment")
    assert sorted(set(problems)) == []


def _heavy_modules(parts: tuple[str, ...] = LAZY_ON_PURPOSE) -> set[str]:
    """Project modules that import one of ``parts`` at their top, directly or through another one."""
    heavy = {module for module, name, _line, inner in IMPORTS if not inner and name.split(".")[0] in parts}
    top = [edge for edge in EDGES if not edge.inner]
    changed = True
    while changed:
        changed = False
        for edge in top:
            if edge.target in heavy and edge.source not in heavy:
                heavy.add(edge.source)
                changed = True
    return heavy


@pytest.mark.parametrize("package", ["marsrag.contract", "marsrag.tasks"])
def test_the_fast_commands_load_nothing_heavy(package: str) -> None:
    """What ``validate``, ``schema`` and ``lint`` import at the top never pulls in CrewAI or SQLAlchemy."""
    assert not {module for module in _heavy_modules() if _package(module) == package}


def test_the_read_only_commands_load_no_runtime_at_the_top() -> None:
    """What metrics, review and runs import at the top loads no runtime, config loader or heavy part but the store's."""
    loaded = _loaded_at_top(READ_ONLY_IMPORTS)
    assert "marsrag.store.sql" in loaded and "marsrag.contract" in loaded
    heavy = [part for part in (*LAZY_ON_PURPOSE, *LAZY_FOR_FAST_START) if part not in ("sqlalchemy", "rich")]
    eager = [
        f"{module}:{line} imports {name} at the top"
        for module, name, line, inner in IMPORTS
        if not inner and module in loaded and name.split(".")[0] in heavy
    ]
    assert eager == []
    unneeded = ("marsrag.compose", "marsrag.runtime", "marsrag.tasks", "marsrag.rag", "marsrag.llm", "marsrag.queue")
    assert sorted(module for module in loaded if _package(module) in unneeded) == []
    # The contract's model and validator load on first use of their names, never to read stored records.
    assert not {"marsrag.contract.model", "marsrag.contract.validate"} & loaded


def _loaded_at_top(starts: tuple[str, ...]) -> set[str]:
    """The project modules importing ``starts`` loads: top-level imports followed, with every parent package."""
    loaded: set[str] = set()
    todo = list(starts)
    while todo:
        module = todo.pop()
        parts = module.split(".")
        for parent in (".".join(parts[:end]) for end in range(1, len(parts) + 1)):
            if parent in MODULES and parent not in loaded:
                loaded.add(parent)
                todo += [edge.target for edge in EDGES if edge.source == parent and not edge.inner]
    return loaded


def test_validate_imports_no_fast_start_part_at_the_top() -> None:
    """No module ``marsrag validate`` loads imports PyYAML at its top: the contract imports it when reading YAML."""
    loaded = _loaded_at_top(VALIDATE_IMPORTS)
    assert "marsrag.contract._yaml_answers" in loaded  # the module reading YAML answers is loaded, not PyYAML
    eager = [
        f"{module}:{line} imports {name} at the top"
        for module, name, line, inner in IMPORTS
        if not inner and module in loaded and name.split(".")[0] in LAZY_FOR_FAST_START
    ]
    assert eager == []


# The same answer as a YAML document the label grammar cannot read (block and quoted scalars).
_YAML_ANSWER = "\n".join(
    f"{key}: >\n  {value}" if key != "grip" else f"{key}: {json.dumps(value)}" for key, value in CONTENT.items()
)


@pytest.mark.parametrize(
    ("answer", "yaml_loaded"),
    [
        (json.dumps(CONTENT), False),
        (labelled("{L}: {v}"), False),
        (_YAML_ANSWER, True),
    ],
    ids=["clean JSON", "labels", "YAML answer"],
)
def test_validate_imports_yaml_only_to_read_a_yaml_answer(answer: str, yaml_loaded: bool) -> None:
    """``marsrag validate`` on clean JSON or labels never imports PyYAML; on a YAML answer it does, to read it."""
    probe = (
        "import sys\n"
        "from marsrag.cli import main\n"
        "try:\n"
        "    main(['validate', '--format', 'json', '-'])\n"
        "except SystemExit as exit:\n"
        "    code = exit.code\n"
        "sys.stderr.write(f'EXIT={code} YAML={\"yaml\" in sys.modules}')\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], input=answer.encode(), capture_output=True, check=False)
    assert json.loads(proc.stdout)["status"] == "valid", proc.stdout
    assert proc.stderr.decode().strip().endswith(f"EXIT=0 YAML={yaml_loaded}"), proc.stderr.decode()
