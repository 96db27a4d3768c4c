"""Released contract versions, snapshotted, and the version bump a change requires.

Each released version has ``versions/<version>.json`` holding its JSON Schema and validation rules. The
snapshot of the running version must equal what the code produces, and a snapshot, once released, is never
rewritten: changing LoopOutput's schema or rules means bumping ``LOOP_CONTRACT_VERSION`` by at least the
kind of change (:func:`required_bump`) and writing a new snapshot with ``make contract-snapshot``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from marsrag.contract.rules import rules_snapshot
from marsrag.contract.schema import loop_output_json_schema
from marsrag.contract.version import LOOP_CONTRACT_VERSION, Version, parse_version
from marsrag.errors import ContractVersionError

Bump = Literal["none", "patch", "minor", "major"]
BUMP_ORDER: tuple[Bump, ...] = ("none", "patch", "minor", "major")
SNAPSHOT_DIR = Path(__file__).with_name("versions")

# Keys that identify a version or only explain it; changing them alone is a patch.
_WORDING_KEYS = frozenset({"$id", "x-loop-contract-version", "description", "title", "template"})

# Rules that reject what never was an answer's content: a field cut off before it ended (reject_truncated), a
# value that is only a template placeholder, only a field's name, or has no letter or digit (the placeholder_*
# and reject_no_letter_or_digit rules, 1.1.0); a value that is only a source reference, only bracketed
# placeholders, a reworded template instruction or a copy of the prompt's example (1.2.0); a field quoting a
# template instruction word for word (1.3.0); a field described in the template's words, a field repeating an earlier
# one word for word, a bracketed placeholder in full-width brackets (1.4.0); a stub among sentences, one word that
# asks nothing or two that end no sentence (1.5.0). Adding one fails no
# answer whose fields a model finished with content, so it is an addition (minor); dropping or changing one is major.
_ADDITIVE_REJECTIONS = frozenset(
    {
        "reject_truncated",
        "placeholder_template",
        "placeholder_field_name",
        "reject_no_letter_or_digit",
        "reject_reference_only",
        "placeholder_bracketed_spans",
        "reject_template_reworded",
        "reject_example_echo",
        "reject_instruction_quoted",
        "reject_field_description",
        "reject_repeated_field",
        "placeholder_bracketed_any_width",
        "reject_stub_among_sentences",
    }
)


def current_snapshot() -> dict[str, Any]:
    """The running contract's version, JSON Schema and rules, as stored in a snapshot file."""
    return {"version": LOOP_CONTRACT_VERSION, "schema": loop_output_json_schema(), "rules": rules_snapshot()}


def snapshot_path(version: str, directory: Path = SNAPSHOT_DIR) -> Path:
    """Where the snapshot of ``version`` lives."""
    return directory / f"{parse_version(version)}.json"


def load_snapshots(directory: Path = SNAPSHOT_DIR) -> dict[Version, dict[str, Any]]:
    """Every released snapshot, keyed and ordered by version."""
    snapshots = {}
    for path in directory.glob("*.json"):
        snapshots[parse_version(path.stem)] = json.loads(path.read_text(encoding="utf-8"))
    return dict(sorted(snapshots.items()))


def _strip_wording(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _strip_wording(item) for key, item in value.items() if key not in _WORDING_KEYS}
    if isinstance(value, list):
        return [_strip_wording(item) for item in value]
    return value


def _max(*bumps: Bump) -> Bump:
    return max(bumps, key=BUMP_ORDER.index)


def _rule_bump(key: str, old: Any, new: Any) -> Bump:
    """The bump one changed rule needs: loosening what is accepted is minor, tightening is major."""
    if key in _ADDITIVE_REJECTIONS:
        return "minor" if old is None and new not in (None, False) else "major"
    if key in ("max_chars",) and isinstance(old, int) and isinstance(new, int):
        return "minor" if new > old else "major"
    if key in ("min_chars",) and isinstance(old, int) and isinstance(new, int):
        return "minor" if new < old else "major"
    if key in ("placeholders", "reject_template_echo") and isinstance(old, list) and isinstance(new, list):
        return "minor" if set(new) <= set(old) else "major"
    if key == "soft_sentences":
        return "minor"  # only changes warnings
    if key == "fields" and isinstance(old, list) and isinstance(new, list):
        return "minor" if set(old) <= set(new) else "major"
    if key == "required" and isinstance(old, list) and isinstance(new, list):
        return "minor" if set(new) <= set(old) else "major"
    return "major"


def required_bump(old: dict[str, Any], new: dict[str, Any]) -> Bump:
    """The smallest version bump the policy allows between two snapshots' schema and rules."""
    old_rules, new_rules = old.get("rules", {}), new.get("rules", {})
    bump: Bump = "none"
    for key in sorted(set(old_rules) | set(new_rules)):
        if old_rules.get(key) != new_rules.get(key):
            bump = _max(
                bump,
                "patch" if key in _WORDING_KEYS else _rule_bump(key, old_rules.get(key), new_rules.get(key)),
            )
    old_schema, new_schema = _strip_wording(old.get("schema")), _strip_wording(new.get("schema"))
    if old_schema != new_schema:
        old_props = set(old_schema.get("properties", {})) if isinstance(old_schema, dict) else set()
        new_props = set(new_schema.get("properties", {})) if isinstance(new_schema, dict) else set()
        # New optional properties with nothing else changed are an addition; anything else breaks readers.
        same_otherwise = (
            isinstance(old_schema, dict)
            and isinstance(new_schema, dict)
            and {key: value for key, value in new_schema.items() if key != "properties"}
            == {key: value for key, value in old_schema.items() if key != "properties"}
            and all(new_schema["properties"][name] == old_schema["properties"][name] for name in old_props & new_props)
        )
        bump = _max(bump, "minor" if old_props < new_props and same_otherwise else "major")
    elif old.get("schema") != new.get("schema"):
        bump = _max(bump, "patch")
    return bump


def bump_between(old: Version, new: Version) -> Bump:
    """What kind of bump separates two versions."""
    if new.major != old.major:
        return "major"
    if new.minor != old.minor:
        return "minor"
    if new.patch != old.patch:
        return "patch"
    return "none"


def write_snapshot(directory: Path = SNAPSHOT_DIR, snapshot: dict[str, Any] | None = None) -> Path:
    """Write the running version's snapshot; refuse to change an already released one.

    Raises:
        ContractVersionError: the running version's snapshot exists and differs from the code.
    """
    snapshot = current_snapshot() if snapshot is None else snapshot
    path = snapshot_path(str(snapshot["version"]), directory)
    if path.exists():
        stored = json.loads(path.read_text(encoding="utf-8"))
        if stored != snapshot:
            bump = required_bump(stored, snapshot)
            raise ContractVersionError(
                f"contract {snapshot['version']} is released and its snapshot differs from the code; this "
                f"change needs a {bump} version bump of LOOP_CONTRACT_VERSION"
            )
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(snapshot, indent=2, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    return path


if __name__ == "__main__":
    print(write_snapshot())
