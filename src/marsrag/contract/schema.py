"""The JSON Schema of LoopOutput, for UIs and non-Python consumers (``marsrag schema``)."""

from __future__ import annotations

from typing import Any

from marsrag.contract.model import LoopOutput
from marsrag.contract.version import LOOP_CONTRACT_VERSION

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def loop_output_json_schema() -> dict[str, Any]:
    """LoopOutput's JSON Schema (draft 2020-12), identified by the contract version it describes."""
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "$id": f"urn:marsrag:loop-output:{LOOP_CONTRACT_VERSION}",
        **LoopOutput.model_json_schema(),
    }
