"""The contract's verdict and loop-mode types: what stored records are typed with, without the validator."""

from __future__ import annotations

from typing import Literal, get_args

Status = Literal["valid", "partial", "failed"]
Mode = Literal["hard", "soft", "none"]
MODES: tuple[str, ...] = get_args(Mode)
