"""``marsrag ingest`` as a process: same-named folders stay apart, ``--collection`` groups, replacements say why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from marsrag.rag import knowledge_base
from marsrag.rag.identity import MAX_COLLECTION_CHARS
from tests.rag.conftest import marsrag, write

#: The summary's end when the default embedder embedded one chunk.
EMBEDDED_ONE = ", 1 embedded with wordllama/l2_supercat-256"


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    """``one/kb/doc.md`` and ``two/kb/doc.md``: two folders of the same name with different documents."""
    write(tmp_path / "one" / "kb", "doc.md", "# Scrubber\n\nRestart the scrubber heater after the alarm.\n")
    write(tmp_path / "two" / "kb", "doc.md", "# Airlock\n\nCycle the airlock twice before the heater check.\n")
    return tmp_path


def searched(db: str, query: str) -> list[str]:
    """The sources of the hits for ``query``, sorted."""
    with knowledge_base(db) as kb:
        return sorted(hit["source"] for hit in kb.search(query))


def test_ingesting_a_same_named_folder_adds_it_beside_the_first(layout: Path, db_url: str) -> None:
    """``ingest one/kb`` then ``ingest two/kb``: 1 added each, both found; ``ingest one/kb`` again: 1 unchanged."""
    first = marsrag("ingest", "one/kb", "--db", db_url, cwd=layout)
    assert first.returncode == 0, first.stderr
    second = marsrag("ingest", "two/kb", "--db", db_url, cwd=layout)
    assert second.stdout == f"ingested: 1 added, 0 updated, 0 unchanged, 0 skipped; 1 chunks written{EMBEDDED_ONE}\n"
    assert searched(db_url, "heater") == ["kb/doc.md#Airlock", "kb/doc.md#Scrubber"]
    again = marsrag("ingest", "one/kb", "--db", db_url, "--format", "json", cwd=layout)
    report = json.loads(again.stdout)
    assert (report["added"], report["updated"], report["unchanged"]) == (0, 0, 1)
    assert report["collections"] == [str((layout / "one").resolve())] and report["replaced"] == []


def test_a_replacement_in_a_named_collection_is_printed_with_why(layout: Path, db_url: str) -> None:
    """With ``--collection handbook`` the second folder replaces the first's document, and says which it replaced."""
    assert marsrag("ingest", "one/kb", "--collection", "handbook", "--db", db_url, cwd=layout).returncode == 0
    proc = marsrag("ingest", "two/kb", "--collection", "handbook", "--db", db_url, cwd=layout)
    assert proc.returncode == 0, proc.stderr
    old = (layout / "one" / "kb" / "doc.md").resolve()
    assert proc.stdout.splitlines() == [
        f"updated kb/doc.md in handbook: content changed; the version replaced was read from {old}",
        f"ingested: 0 added, 1 updated, 0 unchanged, 0 skipped; 1 chunks written{EMBEDDED_ONE}",
    ]
    assert searched(db_url, "heater") == ["kb/doc.md#Airlock"]
    as_json = json.loads(
        marsrag("ingest", "one/kb", "--collection", "handbook", "--db", db_url, "--format", "json", cwd=layout).stdout
    )
    assert as_json["replaced"] == [
        {
            "path": "kb/doc.md",
            "collection": "handbook",
            "reason": f"content changed; the version replaced was read from {layout.resolve() / 'two/kb/doc.md'}",
        }
    ]


@pytest.mark.parametrize("name", ["", "hand\nbook", "x" * (MAX_COLLECTION_CHARS + 1)], ids=["empty", "newline", "long"])
def test_a_bad_collection_name_is_one_line_and_exit_2(layout: Path, name: str) -> None:
    """No traceback, nothing on stdout, and no database made for nothing."""
    proc = marsrag("ingest", "one/kb", "--collection", name, "--db", f"sqlite:///{layout}/kb.db", cwd=layout)
    assert proc.returncode == 2
    assert proc.stderr.startswith("marsrag: error: the collection name") and proc.stderr.count("\n") == 1
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert not (layout / "kb.db").exists()


def test_the_help_names_the_collection_option(layout: Path) -> None:
    """``ingest --help`` documents ``--collection`` and its default."""
    help_text = " ".join(marsrag("ingest", "--help", cwd=layout).stdout.split())
    assert "--collection" in help_text and "default: the resolved folder each path is in" in help_text


def test_an_embedder_that_is_wrong_or_down_is_one_line_and_exit_2(layout: Path, db_url: str) -> None:
    from tests._net import free_port

    unknown = marsrag("ingest", "one/kb", "--db", db_url, "--embedder", "bge", cwd=layout)
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert unknown.stderr.startswith("marsrag: error: embedder 'bge' is not one") and unknown.stderr.count("\n") == 1
    url = f"http://127.0.0.1:{free_port()}/v1"
    down = marsrag("ingest", "one/kb", "--db", db_url, "--embedder", "custom/m", "--embedder-url", url, cwd=layout)
    assert down.returncode == 2 and "Traceback" not in down.stderr and down.stderr.count("\n") == 1
    assert down.stderr.startswith(f"marsrag: error: cannot reach the embeddings endpoint {url}/embeddings")
    keyword_only = marsrag("ingest", "one/kb", "--db", db_url, "--embedder", "none", cwd=layout)
    assert keyword_only.returncode == 0, keyword_only.stderr
    assert keyword_only.stdout.endswith("chunks written\n")  # nothing embedded, nothing said about it
