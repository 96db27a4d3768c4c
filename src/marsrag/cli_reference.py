"""The CLI reference page, generated from the Typer app: every command, its help, arguments and options.

``python -m marsrag.cli_reference`` prints it; ``make docs`` writes it to ``docs/cli-reference.md``, and a
test fails when the page differs from what the app says, so the reference cannot go stale.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import typer

from marsrag.cli import app

_HEAD = """\
# CLI reference

Part of the [MarsRAG documentation](index.md). Generated from the command line itself
(`python -m marsrag.cli_reference`, run by `make docs`): every command with its help, arguments and
options, exactly as `--help` prints them. Guides to the commands are in [Running workflows](running.md),
[Loop metrics](metrics.md), [Contract lint](lint.md), [Web UI and JSON API](web.md) and
[Scaling out](scaling.md).
"""


def render() -> str:
    """The whole reference page (Markdown)."""
    root = typer.main.get_command(app)
    parts = [_HEAD]
    for path, command in _commands(root, ["marsrag"]):
        parts.append(_command(path, command))
    return "\n".join(parts).rstrip() + "\n"


# Typer carries its own copy of Click: its commands are read by what they have, not by Click's classes.
def _context(command: Any, info_name: str) -> Any:
    return command.context_class(command, info_name=info_name)


def _commands(command: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    yield path, command
    if hasattr(command, "list_commands"):
        context = _context(command, path[-1])
        for name in command.list_commands(context):
            sub = command.get_command(context, name)
            if sub is not None and not sub.hidden:
                yield from _commands(sub, [*path, name])


def _command(path: list[str], command: Any) -> str:
    context = _context(command, " ".join(path))
    usage = " ".join(command.collect_usage_pieces(context))
    lines = [f"{'#' * min(len(path) + 1, 4)} `{' '.join(path)}`", ""]
    if command.help:
        lines += [inspect.cleandoc(command.help).replace("\b\n", ""), ""]
    lines += ["```text", f"{' '.join(path)} {usage}".rstrip(), "```", ""]
    if hasattr(command, "list_commands"):
        rows = [
            (name, (sub.get_short_help_str(limit=120) if sub else ""))
            for name in command.list_commands(context)
            if (sub := command.get_command(context, name)) is not None and not sub.hidden
        ]
        if rows:
            lines += ["| command | what it does |", "| --- | --- |"]
            lines += [f"| `{name}` | {_cell(text)} |" for name, text in rows]
            lines.append("")
    params = [param for param in command.get_params(context) if not getattr(param, "hidden", False)]
    if params:
        lines += ["| argument or option | help |", "| --- | --- |"]
        for param in params:
            record = param.get_help_record(context) if hasattr(param, "get_help_record") else None
            if param.param_type_name == "argument" and record is None:
                name = (param.metavar or param.name or "").upper()
                text = getattr(param, "help", None) or ""
            elif record is not None:
                name, text = record
            else:
                continue
            lines.append(f"| `{name}` | {_cell(text)} |")
        lines.append("")
    return "\n".join(lines)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|").replace("<", "&lt;")


if __name__ == "__main__":
    print(render(), end="")
