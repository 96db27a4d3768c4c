"""How the ``marsrag`` commands present themselves: help and usage in the words of a command line, not Python's.

Typer writes an argument as ``{goal}`` in the usage line and types as ``<str>``, ``<list[Path]>``; these classes
write ``GOAL``, ``[PATHS]...``, ``TEXT``, ``PATH`` and ``[text|json]`` instead (the notation of Click and most
CLIs), and :func:`usage_message` takes the validation library's wording (``Value error, ...``, ``Input should
be ...``) out of a parameter error.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup

__all__ = ["STATIC_HELP", "HelpCommand", "HelpTyper", "usage_message", "where_group"]

#: Set in a help context's ``meta`` for help that must not depend on where it is printed (the CLI reference).
STATIC_HELP = "marsrag.static_help"

#: Typer's type labels, as the help shows them.
_TYPE_NAMES = {"str": "TEXT", "int": "INTEGER", "float": "NUMBER", "path": "PATH", "Path": "PATH", "bool": "BOOLEAN"}
_TYPE = re.compile(r"<([^<>]+)>")


def _type_label(inner: str) -> str:
    inner = inner.removeprefix("list[").removesuffix("]").removesuffix(" range").strip()
    if "|" in inner:
        return f"[{inner}]"
    return _TYPE_NAMES.get(inner, inner.upper())


def _argument_name(param: Any) -> str:
    return str(param.metavar or param.name or "ARG").upper()


class HelpCommand(TyperCommand):
    """A Typer command whose usage line and help write arguments and types as a command line does."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if isinstance(param, TyperArgument) and param.metavar is None:
                # Errors name an argument by its metavar: "Missing argument 'GOAL'", as the usage line writes it.
                param.metavar = _argument_name(param)

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                name = _argument_name(param)
                name = name if param.required else f"[{name}]"
                pieces.append(name + ("..." if param.nargs != 1 else ""))
        return pieces

    def format_options(self, ctx: Any, formatter: Any) -> None:
        arguments: list[tuple[str, str]] = []
        options: list[tuple[str, str]] = []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            name, text = record
            if isinstance(param, TyperArgument):
                arguments.append((_argument_name(param) + ("..." if param.nargs != 1 else ""), text))
            else:
                options.append((_TYPE.sub(lambda match: _type_label(match.group(1)), name), text))
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


def where_group(where: Callable[[], str]) -> type[TyperGroup]:
    """The root command group's class: its help ends with ``Here: {where()}.``, which project and store a command
    run here would use (computed when the help is shown; not in :data:`STATIC_HELP` contexts)."""

    class WhereGroup(TyperGroup):
        def format_epilog(self, ctx: Any, formatter: Any) -> None:
            super().format_epilog(ctx, formatter)
            if not ctx.meta.get(STATIC_HELP):
                formatter.write_paragraph()
                # Not wrapped: a path or URL broken at a hyphen cannot be copied whole.
                formatter.write(f"{' ' * formatter.current_indent}Here: {where()}.\n")

    return WhereGroup


class HelpTyper(typer.Typer):
    """A Typer app whose commands are :class:`HelpCommand` unless they ask for another class."""

    def command(self, *args: Any, cls: type[TyperCommand] | None = None, **kwargs: Any) -> Callable[..., Any]:
        return super().command(*args, cls=cls or HelpCommand, **kwargs)


_PYDANTIC = (
    (re.compile(r"Value error, "), ""),
    (re.compile(r"Input should be a valid integer, unable to parse string as an integer"), "not a whole number"),
    (re.compile(r"Input should be a valid number, unable to parse string as a number"), "not a number"),
    (re.compile(r"Input should be "), "must be "),
)


def usage_message(message: str) -> str:
    """A usage error's message in one line, without the validation library's wording."""
    for pattern, replacement in _PYDANTIC:
        message = pattern.sub(replacement, message)
    return " ".join(message.split())
