"""The docs cannot go stale: the CLI reference is what the app says, and every offline example runs.

Examples to run are fenced as ``console`` blocks; each ``$ `` line is a command, run in a fresh folder per
page that sees the repository's ``examples/`` and ``src/`` (as a reader in the repository root does), with a
fresh data directory (so a page's commands build on each other, as a reader types them). ``marsrag`` is this
checkout's CLI; ``cd DIR`` moves the following commands into DIR. A line ending in ``# exit N`` expects that
exit code, else 0.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

DOCS = REPO / "docs"
_BLOCK = re.compile(r"^```console\n(?P<body>.*?)^```", re.MULTILINE | re.DOTALL)
_EXIT = re.compile(r"\s+# exit (\d+)$")


def examples(page: Path) -> list[str]:
    """The commands of a page's console blocks, in order."""
    commands = []
    for block in _BLOCK.finditer(page.read_text(encoding="utf-8")):
        commands += [line[2:] for line in block["body"].splitlines() if line.startswith("$ ")]
    return commands


PAGES = sorted(page for page in DOCS.glob("*.md") if examples(page))


def test_the_cli_reference_is_what_the_app_says() -> None:
    """docs/cli-reference.md is generated from the Typer app: regenerate it with `make docs-cli`."""
    from marsrag.cli_reference import render

    assert (DOCS / "cli-reference.md").read_text(encoding="utf-8") == render(), "stale: run `make docs-cli`"


def test_the_formats_page_is_the_catalog() -> None:
    """docs/formats.md is generated from the format catalog: regenerate it with `make docs-cli`."""
    from marsrag.contract.catalog import render_markdown

    assert (DOCS / "formats.md").read_text(encoding="utf-8") == render_markdown(), "stale: run `make docs-cli`"


def test_some_pages_have_examples_to_run() -> None:
    """The quick start and the knowledge base page show commands that are executed here."""
    assert {"quickstart.md", "knowledge.md"} <= {page.name for page in PAGES}


@pytest.mark.crewai
@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_every_offline_example_of_a_page_runs(page: Path, tmp_path: Path) -> None:
    """Each `$` line of the page's console blocks exits as the page says, in a fresh data directory."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("MARSRAG_", "OTEL_EXPORTER"))}
    env.update(MARSRAG_HOME=str(tmp_path / "home"), NO_COLOR="1", COLUMNS="100")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    here = tmp_path / "work"
    here.mkdir()
    for name in ("examples", "src"):
        (here / name).symlink_to(REPO / name)
    for command in examples(page):
        expected = _EXIT.search(command)
        line = _EXIT.sub("", command)
        words = shlex.split(line)
        if words[0] == "cd":
            here = here / words[1]
            assert here.is_dir(), f"{page.name}: `{line}`: no such folder"
            continue
        assert words[0] == "marsrag", f"{page.name}: only marsrag commands run here: {line}"
        proc = subprocess.run(
            [sys.executable, "-m", "marsrag", *words[1:]],
            capture_output=True,
            text=True,
            cwd=here,
            env=env,
            stdin=subprocess.DEVNULL,
            timeout=600,
            check=False,
        )
        want = int(expected.group(1)) if expected else 0
        assert proc.returncode == want, f"{page.name}: `{line}` exited {proc.returncode}: {proc.stderr[-2000:]}"
