"""The composition root sits above the runtime and the queue: neither reaches up to it, nor to the terminal printer."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "marsrag"

#: Package -> the modules above it that it must never import (inside functions too; TYPE_CHECKING blocks aside).
FORBIDDEN = {
    "runtime": ("marsrag.queue", "marsrag.compose", "marsrag.render_text", "marsrag.web", "marsrag.cli"),
    "queue": ("marsrag.compose", "marsrag.render_text", "marsrag.web", "marsrag.cli"),
}
#: What the settings module (the base layer) may import from the package.
SETTINGS_MAY_IMPORT = {"marsrag.errors", "marsrag.paths"}


def imported_modules(path: Path) -> set[str]:
    """The absolute modules ``path`` imports anywhere outside ``if TYPE_CHECKING:`` blocks."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for inner in ast.walk(node)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


@pytest.mark.parametrize("part", ["runtime", "queue"])
def test_runtime_and_queue_never_import_upwards(part: str) -> None:
    """runtime imports neither the queue nor compose nor the printer; the queue imports runtime, never compose."""
    offending = [
        f"{path.relative_to(SRC)} imports {name}"
        for path in sorted((SRC / part).rglob("*.py"))
        for name in imported_modules(path)
        if name.startswith(FORBIDDEN[part])
    ]
    assert offending == []


def test_settings_is_a_base_module() -> None:
    """marsrag.settings imports only the standard library, marsrag.errors and marsrag.paths."""
    project = {name for name in imported_modules(SRC / "settings.py") if name.startswith("marsrag")}
    assert project <= SETTINGS_MAY_IMPORT, project


def test_the_check_sees_imports_inside_functions(tmp_path: Path) -> None:
    """A function-level import counts; one under TYPE_CHECKING does not (so the tests above can fail)."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from marsrag.compose import open_runner\n"
        "def f():\n    from marsrag.queue.app import celery_app\n",
        encoding="utf-8",
    )
    assert imported_modules(sample) == {"typing", "marsrag.queue.app"}
