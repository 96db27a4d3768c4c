"""Reading the raw outputs named on the command line: files, or ``-`` for standard input."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator

from marsrag.contract.rules import MAX_INPUT_BYTES
from marsrag.errors import InputError

# One byte past the limit is enough for validation to report the input as too long without holding a
# huge (or endless) input in memory.
_READ_LIMIT = MAX_INPUT_BYTES + 1


def read_inputs(sources: Iterable[str]) -> Iterator[tuple[str, bytes | InputError]]:
    """Yield ``(source, bytes)`` per source, or ``(source, InputError)`` naming why it cannot be read.

    Bytes are returned undecoded: validation decodes them, replacing invalid UTF-8, so every readable file
    gets a verdict whatever it holds.
    """
    for source in sources:
        if source == "-":
            yield source, sys.stdin.buffer.read(_READ_LIMIT)
            continue
        try:
            with open(source, "rb") as handle:
                yield source, handle.read(_READ_LIMIT)
        except IsADirectoryError:
            yield source, InputError(f"cannot read {source!r}: it is a directory")
        except OSError as error:
            yield source, InputError(f"cannot read {source!r}: {error.strerror or error}")
