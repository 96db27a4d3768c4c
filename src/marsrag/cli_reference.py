"""The CLI reference page, generated from the Typer app: every command, its help, arguments and options.

``python -m marsrag.cli_reference`` prints it; ``make docs-cli`` writes it to ``docs/cli-reference.md``, and a
test fails when the page differs from what the app says, so the reference cannot go stale.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import typer

from marsrag._cli_help import STATIC_HELP
from marsrag.cli import app

_HEAD = """\
# CLI reference

Part of the [MarsRAG documentation](index.md). Generated from the command line itself
(`python -m marsrag.cli_reference`, written by `make docs-cli`): every command with its help, arguments and
options, exactly as `--help` prints them (at 100 columns). Guides to the commands are in
[Running workflows](running.md),
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
    context = command.context_class(command, info_name=info_name, terminal_width=100, max_content_width=100)
    context.meta[STATIC_HELP] = True  # the page is the same wherever it is generated: no "Here:" line
    return context


def _commands(command: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    yield path, command
    if hasattr(command, "list_commands"):
        context = _context(command, path[-1])
        for name in command.list_commands(context):
            sub = command.get_command(context, name)
            if sub is not None and not sub.hidden:
                yield from _commands(sub, [*path, name])


def _command(path: list[str], command: Any) -> str:
    # A fixed width, so the page is the same whatever terminal generates it.
    context = _context(command, " ".join(path))
    return "\n".join(
        [f"{'#' * min(len(path) + 1, 4)} `{' '.join(path)}`", "", "```text", command.get_help(context), "```", ""]
    )


if __name__ == "__main__":
    print(render(), end="")
