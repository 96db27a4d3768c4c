"""The versioning policy is enforced: schema and rule changes need the version bump they imply."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from marsrag.contract import LOOP_CONTRACT_VERSION
from marsrag.contract.snapshots import (
    BUMP_ORDER,
    bump_between,
    current_snapshot,
    load_snapshots,
    required_bump,
    snapshot_path,
    write_snapshot,
)
from marsrag.contract.version import parse_version
from marsrag.errors import ContractVersionError


def test_running_version_is_snapshotted_and_unchanged() -> None:
    """LoopOutput's schema and rules equal the released snapshot of the running version.

    When this fails you changed the contract: bump LOOP_CONTRACT_VERSION by the kind of change named in
    the assertion message, then run `make contract-snapshot`.
    """
    path = snapshot_path(LOOP_CONTRACT_VERSION)
    assert path.exists(), f"no snapshot for {LOOP_CONTRACT_VERSION}: run `make contract-snapshot`"
    stored = json.loads(path.read_text(encoding="utf-8"))
    live = current_snapshot()
    assert stored == live, f"contract changed without a version bump; it needs a {required_bump(stored, live)} bump"


def test_every_release_bumped_enough() -> None:
    """Between consecutive released snapshots, the version bump is at least the one the change requires."""
    releases = list(load_snapshots().items())
    assert releases and releases[-1][0] == parse_version(LOOP_CONTRACT_VERSION)
    for (old_version, old), (new_version, new) in zip(releases, releases[1:], strict=False):
        needed = required_bump(old, new)
        made = bump_between(old_version, new_version)
        assert BUMP_ORDER.index(made) >= BUMP_ORDER.index(needed), f"{old_version} -> {new_version} needs {needed}"


def _changed(edit: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    old = current_snapshot()
    new = copy.deepcopy(old)
    edit(new)
    return old, new


@pytest.mark.parametrize(
    ("edit", "bump"),
    [
        (lambda s: None, "none"),
        (lambda s: s["rules"].update(max_chars=600), "major"),
        (lambda s: s["rules"].update(max_chars=1200), "minor"),
        (lambda s: s["rules"].update(min_chars=5), "major"),
        (lambda s: s["rules"]["placeholders"].append("n.a."), "major"),
        (lambda s: s["rules"]["placeholders"].remove("tbd"), "minor"),
        (lambda s: s["rules"].update(soft_sentences=[1, 5]), "minor"),
        (lambda s: s["rules"].pop("reject_truncated"), "major"),
        (lambda s: s["rules"].update(reject_truncated=False), "major"),
        (lambda s: s["rules"].pop("placeholder_field_name"), "major"),
        (lambda s: s["rules"].update(placeholder_template=r"\{\{[^{}]+\}\}"), "major"),
        (lambda s: s["rules"].update(reject_no_letter_or_digit=False), "major"),
        (lambda s: s["rules"].update(partial_min_fields=4), "major"),
        (lambda s: s["rules"]["fields"].remove("grip"), "major"),
        (lambda s: s["rules"]["required"].append("summary"), "major"),
        (lambda s: s["rules"]["template"].__setitem__(0, "HOOK: Open with a tension."), "patch"),
        (lambda s: s["schema"]["properties"]["hook"].update(description="Reworded."), "patch"),
        (lambda s: s["schema"].update({"$id": "urn:other"}), "patch"),
        (lambda s: s["schema"]["properties"].update(summary={"type": "string"}), "minor"),
        (lambda s: s["schema"]["properties"]["loop"].update(maxLength=400), "major"),
        (lambda s: s["schema"]["properties"].pop("reinforce"), "major"),
        (lambda s: s["schema"]["required"].append("summary"), "major"),
    ],
)
def test_required_bump_classifies_changes(edit: Any, bump: str) -> None:
    """Tightening or removing is major, loosening or adding optional is minor, wording is patch."""
    assert required_bump(*_changed(edit)) == bump


def test_released_snapshots_are_never_rewritten(tmp_path: Path) -> None:
    """Writing a snapshot is idempotent, and a changed contract under a released version is refused."""
    first = write_snapshot(tmp_path)
    assert write_snapshot(tmp_path) == first
    _, changed = _changed(lambda s: s["rules"].update(max_chars=600))
    with pytest.raises(ContractVersionError, match="major version bump"):
        write_snapshot(tmp_path, changed)
    bumped = {**changed, "version": "2.0.0"}
    assert write_snapshot(tmp_path, bumped).name == "2.0.0.json"
    assert [str(v) for v in load_snapshots(tmp_path)] == [LOOP_CONTRACT_VERSION, "2.0.0"]


NON_ANSWER_REJECTIONS = (
    "reject_truncated",
    "placeholder_template",
    "placeholder_field_name",
    "reject_no_letter_or_digit",
)


def test_1_1_0_adds_only_rejections_of_non_answers_which_is_minor() -> None:
    """1.0.0 -> 1.1.0 adds only rules rejecting what never was an answer's content, and changes nothing else.

    ``reject_truncated`` (a field cut off before it ended), then the values with no content at all: only a
    template placeholder, only a field's name, no letter or digit.
    """
    snapshots = {str(version): snapshot for version, snapshot in load_snapshots().items()}
    old, new = snapshots["1.0.0"], snapshots["1.1.0"]
    assert set(new["rules"]) - set(old["rules"]) == set(NON_ANSWER_REJECTIONS)
    assert new["rules"]["reject_truncated"] is True and new["rules"]["reject_no_letter_or_digit"] is True
    assert {key: value for key, value in new["rules"].items() if key in old["rules"]} == old["rules"]
    assert required_bump(old, new) == "minor"
    assert bump_between(parse_version("1.0.0"), parse_version("1.1.0")) == "minor"
    for key in NON_ANSWER_REJECTIONS:
        with_rule = copy.deepcopy(old)
        with_rule["rules"][key] = new["rules"][key]
        assert required_bump(old, with_rule) == "minor" and required_bump(with_rule, old) == "major"


STAND_IN_REJECTIONS = (
    "reject_reference_only",
    "placeholder_bracketed_spans",
    "reject_template_reworded",
    "reject_example_echo",
)


def test_1_2_0_adds_only_rejections_of_stand_ins_which_is_minor() -> None:
    """1.1.0 -> 1.2.0 adds only rules rejecting stand-ins for content, and keeps every 1.1.0 rule as it was.

    A bare source reference, bracketed placeholders, a reworded template instruction, the prompt's example
    copied: none is an answer's content, so adding them is minor and dropping or changing one is major.
    """
    snapshots = {str(version): snapshot for version, snapshot in load_snapshots().items()}
    old, new = snapshots["1.1.0"], snapshots["1.2.0"]
    assert set(new["rules"]) - set(old["rules"]) == set(STAND_IN_REJECTIONS)
    assert {key: value for key, value in new["rules"].items() if key in old["rules"]} == old["rules"]
    assert required_bump(old, new) == "minor"
    for key in STAND_IN_REJECTIONS:
        with_rule = copy.deepcopy(old)
        with_rule["rules"][key] = new["rules"][key]
        assert required_bump(old, with_rule) == "minor" and required_bump(with_rule, old) == "major"
        changed = copy.deepcopy(new)
        changed["rules"][key] = {**new["rules"][key], "changed": True}
        assert required_bump(new, changed) == "major"


def test_1_3_0_adds_only_the_quoted_instruction_rejection_which_is_minor() -> None:
    """1.2.0 -> 1.3.0 adds one rule (a template instruction quoted word for word inside a field) and keeps every
    1.2.0 rule as it was: minor; dropping or changing it later is major."""
    snapshots = {str(version): snapshot for version, snapshot in load_snapshots().items()}
    old, new = snapshots["1.2.0"], snapshots["1.3.0"]
    assert set(new["rules"]) - set(old["rules"]) == {"reject_instruction_quoted"}
    assert {key: value for key, value in new["rules"].items() if key in old["rules"]} == old["rules"]
    assert required_bump(old, new) == "minor"
    changed = copy.deepcopy(new)
    changed["rules"]["reject_instruction_quoted"] = {**new["rules"]["reject_instruction_quoted"], "changed": True}
    assert required_bump(new, changed) == "major"


ISSUE_40_REJECTIONS = ("reject_field_description", "reject_repeated_field", "placeholder_bracketed_any_width")


def test_1_4_0_adds_only_rejections_of_non_answers_which_is_minor() -> None:
    """1.3.0 -> 1.4.0 adds three rules rejecting what is no section's content (a field described in the template's
    words, a field repeating another, a bracketed placeholder in full-width brackets) and keeps every 1.3.0 rule as
    it was: minor; dropping or changing one later is major."""
    snapshots = {str(version): snapshot for version, snapshot in load_snapshots().items()}
    old, new = snapshots["1.3.0"], snapshots["1.4.0"]
    assert set(new["rules"]) - set(old["rules"]) == set(ISSUE_40_REJECTIONS)
    assert {key: value for key, value in new["rules"].items() if key in old["rules"]} == old["rules"]
    assert required_bump(old, new) == "minor"
    for key in ISSUE_40_REJECTIONS:
        changed = copy.deepcopy(new)
        changed["rules"][key] = {**new["rules"][key], "changed": True}
        assert required_bump(new, changed) == "major"


def test_1_5_0_adds_only_the_stub_rejection_which_is_minor() -> None:
    """1.4.0 -> 1.5.0 adds one rule rejecting what is no section's content (a stub among sentences) and keeps every
    1.4.0 rule as it was: minor; changing it later is major."""
    snapshots = {str(version): snapshot for version, snapshot in load_snapshots().items()}
    old, new = snapshots["1.4.0"], snapshots["1.5.0"]
    assert set(new["rules"]) - set(old["rules"]) == {"reject_stub_among_sentences"}
    assert {key: value for key, value in new["rules"].items() if key in old["rules"]} == old["rules"]
    assert required_bump(old, new) == "minor"
    changed = copy.deepcopy(new)
    changed["rules"]["reject_stub_among_sentences"]["fragment_max_words"] = 5
    assert required_bump(new, changed) == "major"


def test_released_1_0_0_snapshot_is_kept() -> None:
    """The 1.0.0 snapshot stays as released: no truncation rule, its own schema $id."""
    old = load_snapshots()[parse_version("1.0.0")]
    assert "reject_truncated" not in old["rules"] and old["schema"]["$id"] == "urn:marsrag:loop-output:1.0.0"
