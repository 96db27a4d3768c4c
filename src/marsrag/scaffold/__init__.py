"""``marsrag init``: scaffold a project folder, as ``crewai create crew`` does, that runs and tests at once.

The template ships in this package (``template/``, read with :mod:`importlib.resources`): ``config/``
(agents, narrative tasks with the canonical template, a workflow), ``knowledge/`` (two Markdown documents),
``tests/`` and ``pytest.ini`` (the Loop Contract regression tests through :mod:`marsrag.pytest_plugin`),
``.pre-commit-config.yaml`` (the contract lint hook), ``.env.example`` and a README. Files whose names start
with ``dot-`` become dotfiles and a ``.tmpl`` suffix is dropped, so packaging and linters leave them alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from marsrag.errors import InputError

__all__ = ["InitReport", "init_project"]

_PROJECT = "{project}"


@dataclass
class InitReport:
    """What :func:`init_project` wrote and left alone (paths relative to the project folder)."""

    folder: Path
    written: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """The lines ``marsrag init`` prints: what was written, what was kept, and the next steps."""
        out = [f"Created {self.folder}/ ({len(self.written)} files)"]
        if self.kept:
            out.append(f"Kept your {len(self.kept)} existing file(s): {', '.join(self.kept)}")
        out += [
            "Next steps:",
            f"  cd {self.folder}",
            "  marsrag ingest knowledge   # index knowledge/ (optional: without it, answers are ungrounded)",
            '  marsrag run "Checkout latency doubled after last night\'s cache restart"',
            "  marsrag lint config        # the contract lint (.pre-commit-config.yaml runs it on commit)",
            "  pytest                     # tests/ and the Loop Contract regression tests of config/",
        ]
        return out


def init_project(folder: str | Path, *, force: bool = False) -> InitReport:
    """Write the project template into ``folder`` (created when missing); never overwrite a file.

    Raises:
        InputError: ``folder`` is a file, or a folder that is not empty and ``force`` is not given.
    """
    target = Path(folder)
    if target.exists() and not target.is_dir():
        raise InputError(f"{target}: exists and is not a folder")
    if target.is_dir() and any(target.iterdir()) and not force:
        raise InputError(f"{target}: folder is not empty; give --force to add the missing files (yours are kept)")
    report = InitReport(target)
    name = target.resolve().name or "marsrag-project"
    for relative, source in _template_files(resources.files(__package__).joinpath("template")):
        destination = target / relative
        if destination.exists() or destination.is_symlink():
            report.kept.append(relative)
            continue
        destination.parent.mkdir(parents=True, exist_ok=True)
        text = source.read_text(encoding="utf-8")
        if relative == "README.md":
            text = text.replace(_PROJECT, name)
        # "x": never write over a file that appeared meanwhile
        with destination.open("x", encoding="utf-8") as handle:
            handle.write(text)
        report.written.append(relative)
    return report


def _template_files(root: Traversable, prefix: str = "") -> list[tuple[str, Traversable]]:
    """(path in the project, template file), in a stable order."""
    found: list[tuple[str, Traversable]] = []
    for item in sorted(root.iterdir(), key=lambda entry: entry.name):
        if item.name == "__pycache__":
            continue
        name = item.name.removesuffix(".tmpl")
        if name.startswith("dot-"):
            name = "." + name.removeprefix("dot-")
        if item.is_dir():
            found += _template_files(item, f"{prefix}{name}/")
        else:
            found.append((f"{prefix}{name}", item))
    return found
