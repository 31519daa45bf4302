"""Wire schemas for the model-backed task generator: one reply model per creation step.

Every file map is validated before anything is written: paths are relative POSIX paths inside the step's own
folder (no absolute path, no `..`, no backslash, no reaching into another area of the task), and sizes are bounded.
A reply that breaks these rules is a schema violation: the LLM client asks once for a repair and then fails the
call with `llm_schema_violation`, so a bad reply can never write outside its step.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

MAX_FILES = 40
MAX_FILE_CHARS = 200_000
_OTHER_AREAS = {"environment", "tests", "solution", "instruction.md", "task.toml"}
_METRIC = re.compile(r"^[a-z][a-z0-9_]{0,47}$")


def check_files(files: dict[str, str], own: str, required: tuple[str, ...] = ()) -> dict[str, str]:
    """Validate a step's file map (paths relative to its folder `own`); raise ValueError naming the problem."""
    if len(files) > MAX_FILES:
        raise ValueError(f"{len(files)} files; at most {MAX_FILES}")
    for rel, text in files.items():
        path = PurePosixPath(rel)
        if not rel or "\\" in rel or path.is_absolute() or ".." in path.parts or rel.startswith("~"):
            raise ValueError(f"unsafe path {rel!r}: use a relative path inside {own}/")
        if path.parts[0] in _OTHER_AREAS:
            raise ValueError(f"path {rel!r} reaches into {path.parts[0]!r}; this step writes only inside {own}/")
        if len(text) > MAX_FILE_CHARS:
            raise ValueError(f"{rel!r} is longer than {MAX_FILE_CHARS} characters")
    missing = [r for r in required if r not in files]
    if missing:
        raise ValueError(f"missing required file(s) {missing} in {own}/")
    return files


class EnvironmentReply(BaseModel):
    """environment/: fixtures and stand-ins; the Dockerfile's FROM is ours (the pinned base image)."""

    model_config = ConfigDict(extra="forbid")

    image: Literal["minimal", "python"] = Field(description="minimal: bash, coreutils, grep, sed, mawk; python: +python3.")
    dockerfile_lines: list[str] = Field(max_length=30, description="Lines after FROM and WORKDIR /app, e.g. COPY app/ /app/.")
    files: dict[str, str] = Field(description="Path relative to environment/ -> file text (no Dockerfile).")

    @field_validator("dockerfile_lines")
    @classmethod
    def _no_from(cls, lines: list[str]) -> list[str]:
        for line in lines:
            word = line.strip().split(" ", 1)[0].upper()
            if word in ("FROM", "ADD") or "\n" in line:
                raise ValueError(f"dockerfile line {line[:60]!r} not allowed (no FROM/ADD, one instruction per line)")
        return lines

    @field_validator("files")
    @classmethod
    def _files(cls, files: dict[str, str]) -> dict[str, str]:
        if "Dockerfile" in files:
            raise ValueError("do not write environment/Dockerfile; give dockerfile_lines instead")
        return check_files(files, "environment")


class InstructionReply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    instruction: str = Field(min_length=80, max_length=6000, description="instruction.md: 2-3 short paragraphs.")


class VerifierReply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    files: dict[str, str] = Field(description="Path relative to tests/ -> text; must include test.sh.")
    metrics: list[str] = Field(min_length=2, max_length=6, description="Metric names test.sh writes to reward.json.")

    @field_validator("files")
    @classmethod
    def _files(cls, files: dict[str, str]) -> dict[str, str]:
        return check_files(files, "tests", required=("test.sh",))

    @field_validator("metrics")
    @classmethod
    def _metrics(cls, metrics: list[str]) -> list[str]:
        bad = [m for m in metrics if not _METRIC.match(m)]
        if bad or len(set(metrics)) != len(metrics):
            raise ValueError(f"metric names must be unique snake_case labels (bad: {bad})")
        return metrics


class RubricReply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    must_do: list[str] = Field(min_length=1, max_length=3)
    must_avoid: list[str] = Field(min_length=1, max_length=3)
    best_practice: list[str] = Field(min_length=1, max_length=3)


class SolutionReply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    files: dict[str, str] = Field(description="Path relative to solution/ -> text; solve.sh, optional wrong.sh.")

    @field_validator("files")
    @classmethod
    def _files(cls, files: dict[str, str]) -> dict[str, str]:
        return check_files(files, "solution", required=("solve.sh",))
