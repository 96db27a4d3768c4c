"""Calibrating an embedder's similarity scale (``marsrag kb calibrate``) and the ``similarity_scale`` setting.

The rule (:func:`marsrag.rag.support.calibrate`) on numbers; the measure on a real knowledge base of each backend
with the embedded embedder; a user's scale reaching a run's support signal; the command as a process.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from marsrag.errors import InputError
from marsrag.rag.calibration import measure, read_goals
from marsrag.rag.embedders.wordllama import WordLlamaEmbedder
from marsrag.rag.knowledge import VECTOR, KnowledgeBase
from marsrag.rag.support import SIMILARITY_SCALES, SimilarityScale, calibrate
from marsrag.runtime.retrieval import retrieve
from tests.rag.conftest import marsrag

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "knowledge_base"
INSIDE = [
    "How do we rotate the payments TLS certificate?",
    "How do we roll back a bad deploy?",
    "How do we drain a node before maintenance?",
    "Why do latency averages mislead us?",
]
OUTSIDE = [
    "How do I bake sourdough bread at home?",
    "What is our parental leave policy?",
    "How do we negotiate a contract with a new payment provider?",
]
#: Answered by the runbook on draining nodes, in none of its words: no similarity evidence at the default scale.
PARAPHRASE = "Taking a machine out of rotation without dropping work"


@pytest.fixture
def sample_kb(db_url: str) -> Iterator[KnowledgeBase]:
    with KnowledgeBase.open(db_url, embedder=WordLlamaEmbedder()) as kb:
        kb.ingest([SAMPLE])
        yield kb


def test_weak_is_just_above_every_goal_outside_and_strong_the_upper_quartile_inside() -> None:
    scale = calibrate([0.50, 0.55, 0.60, 0.70, 0.80], [0.20, 0.31, 0.452])
    assert scale == SimilarityScale(weak=0.48, strong=0.70)
    assert all(scale.score(cosine) < 0.40 for cosine in (0.20, 0.31, 0.452))  # below the support's WEAK
    # Inside goals no higher than the outside ones: strong is still kept above weak.
    close = calibrate([0.30, 0.31], [0.40])
    assert close.weak == 0.42 and math.isclose(close.strong, 0.47)


@pytest.mark.parametrize(
    ("inside", "outside"), [([], [0.2]), ([0.5], []), ([math.nan], [0.2]), ([0.5], [1.5]), ([0.5], [math.inf])]
)
def test_calibration_needs_cosines_on_both_sides(inside: list[float], outside: list[float]) -> None:
    with pytest.raises(ValueError):
        calibrate(inside, outside)


def test_a_scale_is_two_cosines_weak_below_strong() -> None:
    for weak, strong in ((0.6, 0.5), (0.5, 0.5), (-2.0, 0.5), (0.5, math.nan)):
        with pytest.raises(ValueError, match="weak < strong"):
            SimilarityScale(weak=weak, strong=strong)


def test_measured_on_a_knowledge_base_each_goal_has_its_best_passage_cosine(sample_kb: KnowledgeBase) -> None:
    calibration = measure(sample_kb, INSIDE, OUTSIDE)
    assert calibration.embedder == "wordllama/l2_supercat-256"
    for goal, cosine in [*calibration.inside, *calibration.outside]:
        best = max(hit["similarity"] for hit in sample_kb.find(goal, 5, retrievers=[VECTOR]).results)
        assert cosine == pytest.approx(best)
    assert calibration.scale.weak > max(cosine for _, cosine in calibration.outside)
    assert calibration.setting == f"{calibration.scale.weak:.2f},{calibration.scale.strong:.2f}"
    assert calibration.to_dict()["similarity_scale"] == calibration.setting


def test_a_calibrated_scale_makes_a_paraphrase_the_knowledge_base_answers_supported(db_url: str) -> None:
    """At the known scale the paraphrase is ``none``; at one the user calibrated lower, its similarity counts."""
    with KnowledgeBase.open(db_url, embedder=WordLlamaEmbedder()) as kb:
        kb.ingest([SAMPLE])
        assert kb.similarity_scale == SIMILARITY_SCALES["wordllama/l2_supercat-256"]
        default = retrieve(kb, None, PARAPHRASE, 5).support
    assert default is not None and default.level == "none"
    scale = SimilarityScale(weak=0.25, strong=0.45)
    with KnowledgeBase.open(db_url, embedder=WordLlamaEmbedder(), scale=scale) as kb:
        assert kb.similarity_scale == scale
        calibrated = retrieve(kb, None, PARAPHRASE, 5).support
    assert calibrated is not None and calibrated.level != "none" and calibrated.similarity is not None
    with KnowledgeBase.open(db_url, scale=scale) as keyword_only:
        assert keyword_only.similarity_scale is None  # no embedder: no similarity to weigh


def test_an_empty_or_keyword_only_knowledge_base_cannot_be_calibrated(db_url: str) -> None:
    with KnowledgeBase.open(db_url, embedder=WordLlamaEmbedder()) as kb:
        with pytest.raises(InputError, match="the knowledge base is empty"):
            measure(kb, INSIDE, OUTSIDE)
    with KnowledgeBase.open(db_url) as kb, pytest.raises(InputError, match="calibration needs an embedder"):
        measure(kb, INSIDE, OUTSIDE)


def test_a_goals_file_is_one_goal_per_line_and_a_bad_one_is_named(tmp_path: Path) -> None:
    path = tmp_path / "goals.txt"
    path.write_text("# answered\nFirst goal\n\n  Second goal  \n", encoding="utf-8")
    assert read_goals(path) == ["First goal", "Second goal"]
    path.write_text("# nothing\n\n", encoding="utf-8")
    with pytest.raises(InputError, match="no goal in it"):
        read_goals(path)
    path.write_text("fine\nbad\x07bell\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"goals\.txt, line 2: "):
        read_goals(path)
    path.write_bytes(b"\xff\xfe goal\n")
    with pytest.raises(InputError, match="not UTF-8"):
        read_goals(path)


def test_the_command_prints_the_setting_and_bad_input_is_one_line_exit_2(tmp_path: Path, db_url: str) -> None:
    inside, outside = tmp_path / "inside.txt", tmp_path / "outside.txt"
    inside.write_text("\n".join(INSIDE) + "\n", encoding="utf-8")
    outside.write_text("\n".join(OUTSIDE) + "\n", encoding="utf-8")
    ingested = marsrag("ingest", str(SAMPLE), "--db", db_url, cwd=tmp_path)
    assert ingested.returncode == 0, ingested.stderr
    args = ("kb", "calibrate", "--inside", str(inside), "--outside", str(outside), "--db", db_url)
    text = marsrag(*args, cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert text.stdout.count("\ninside ") + text.stdout.startswith("inside ") == len(INSIDE)
    assert "set it: similarity_scale = " in text.stdout
    document = json.loads(marsrag(*args, "--format", "json", cwd=tmp_path).stdout)
    assert f"MARSRAG_SIMILARITY_SCALE={document['similarity_scale']}\n" in text.stdout
    assert [item["goal"] for item in document["outside"]] == OUTSIDE
    for problem in (
        ("kb", "calibrate", "--inside", str(tmp_path / "missing.txt"), "--outside", str(outside), "--db", db_url),
        (*args, "--embedder", "none"),
    ):
        failed = marsrag(*problem, cwd=tmp_path)
        assert failed.returncode == 2 and failed.stdout == "" and "Traceback" not in failed.stderr
        assert failed.stderr.startswith("marsrag: error: ") and failed.stderr.count("\n") == 1
