"""Reading the raw outputs named on the command line: files, or ``-`` for standard input."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator

from marsrag.contract.rules import MAX_INPUT_BYTES
from marsrag.errors import InputError
from marsrag.files import UnreadableFileError, read_regular_file


def read_inputs(sources: Iterable[str]) -> Iterator[tuple[str, bytes | InputError]]:
    """Yield ``(source, bytes)`` per source, or ``(source, InputError)`` naming why it cannot be read.

    Bytes are returned undecoded: validation decodes them, replacing invalid UTF-8, so every readable file
    gets a verdict whatever it holds. Only regular files are read (a FIFO or a device is refused, never
    waited on); of a file over the contract's input limit, one byte past it is read, enough for validation
    to report it too long without holding a huge input in memory.
    """
    for source in sources:
        if source == "-":
            yield source, sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
            continue
        try:
            yield source, read_regular_file(source, limit=MAX_INPUT_BYTES, cut=True)
        except UnreadableFileError as error:
            yield source, InputError(f"cannot read {source!r}: {error.reason}")
