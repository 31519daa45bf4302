"""The label rule shared by axis values, workflow names and task-name parts."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import StringConstraints

LABEL_RE = re.compile(r"^[a-z][a-z0-9_-]{0,47}$")
# A label as a field type: pydantic checks the pattern and the JSON schema carries it, so a model answering in
# a reply schema that contains labels is told the rule instead of learning it from a rejection.
Label = Annotated[str, StringConstraints(pattern=LABEL_RE.pattern)]


def check_label(value: str) -> str:
    if not LABEL_RE.fullmatch(value):
        raise ValueError(f"label {value!r} must match {LABEL_RE.pattern}")
    return value


def to_label(text: str, fallback: str = "x") -> str:
    """Best-effort conversion of free text into a valid label (lower-case, dashes, ≤ 48 chars)."""
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-_")
    if not s or not s[0].isalpha():
        s = f"{fallback}-{s}".strip("-")
    return s[:48].rstrip("-_") or fallback
