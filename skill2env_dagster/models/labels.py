"""The label rule shared by axis values, workflow names and task-name parts."""

from __future__ import annotations

import re

LABEL_RE = re.compile(r"^[a-z][a-z0-9_-]{0,47}$")


def check_label(value: str) -> str:
    if not LABEL_RE.match(value):
        raise ValueError(f"label {value!r} must match {LABEL_RE.pattern}")
    return value


def to_label(text: str, fallback: str = "x") -> str:
    """Best-effort conversion of free text into a valid label (lower-case, dashes, ≤ 48 chars)."""
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-_")
    if not s or not s[0].isalpha():
        s = f"{fallback}-{s}".strip("-")
    return s[:48].rstrip("-_") or fallback
