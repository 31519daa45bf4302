"""Wire schemas for the model-backed task generator: one reply model per creation step.

The JSON schema of each reply model is the whole contract with the server: every rule we check is in it (path
patterns, the areas a step may not write into, required entry files and their shebangs, file counts and sizes,
the Dockerfile instruction allowlist, metric-name patterns and uniqueness, one-line rubric items), so a server
with constrained decoding can only produce replies we accept. A rule JSON Schema cannot express would be listed
in the model's `SEMANTIC_RULES` and sent with the schema and with every repair request; the only one is that a
cheat must parse under `bash -n`
(tests/unit/test_reply_schemas.py draws random schema-valid replies and checks that every one validates), apart
from CheatsReply's bash syntax, which is listed there.

Validation runs before anything is written: a reply that breaks a rule is a schema violation, the client asks
once for a repair and then fails the call with `llm_schema_violation`, so a bad reply never writes outside its
step.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, field_validator

from skill2env_dagster.llm.schema import ReplyModel

MAX_FILES = 40
MAX_FILE_CHARS = 200_000
# One path segment: starts with a letter, digit, `_` or `-` (or one dot and then one of those, for dot-files),
# so `..`, absolute paths, `~`, backslashes and spaces cannot be expressed at all.
_SEGMENT = r"\.?[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}"
PATH_PATTERN = rf"^{_SEGMENT}(/{_SEGMENT}){{0,15}}$"
# Top-level names a step may not write into: the other areas of the task (each step writes only its own folder).
OTHER_AREAS = ("environment", "tests", "solution", "instruction.md", "task.toml")
DOCKERFILE_INSTRUCTIONS = ("RUN", "COPY", "ENV", "WORKDIR", "USER", "ARG", "LABEL", "EXPOSE", "CMD", "ENTRYPOINT",
                           "SHELL", "HEALTHCHECK", "STOPSIGNAL")
DOCKERFILE_LINE = rf"^({'|'.join(DOCKERFILE_INSTRUCTIONS)}) [^\n\r]*$"
METRIC_PATTERN = r"^[a-z][a-z0-9_]{0,47}$"
# Entry scripts are executed directly, so the gates require a shebang: the schema says so up front.
SCRIPTS = ("test.sh", "solve.sh", "wrong.sh")
SHEBANG_PATTERN = "^#!"
# A rubric item becomes one Markdown bullet: one line (no line break of any kind str.splitlines knows) with text.
_NO_BREAK = r"[^\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]"
RUBRIC_ITEM = rf"^{_NO_BREAK}*\S{_NO_BREAK}*$"

Metric = Annotated[str, StringConstraints(pattern=METRIC_PATTERN)]
RubricItem = Annotated[str, StringConstraints(pattern=RUBRIC_ITEM, max_length=500)]
DockerfileLine = Annotated[str, StringConstraints(pattern=DOCKERFILE_LINE)]


def _areas_pattern(forbidden: tuple[str, ...]) -> str:
    return "^(" + "|".join(re.escape(a) for a in forbidden) + ")(/|$)"


def file_map_schema(own: str, required: tuple[str, ...] = (), forbidden: tuple[str, ...] = OTHER_AREAS,
                    scripts: tuple[str, ...] = (), description: str = "") -> dict[str, Any]:
    """The JSON schema of a step's file map (path relative to `own`/ -> text), exactly what `check_files` checks."""
    text = {"type": "string", "maxLength": MAX_FILE_CHARS}
    script = {**text, "pattern": SHEBANG_PATTERN}
    schema: dict[str, Any] = {
        "type": "object",
        "description": description,
        "maxProperties": MAX_FILES,
        "propertyNames": {"pattern": PATH_PATTERN, "not": {"pattern": _areas_pattern(forbidden)}},
        "additionalProperties": text,
    }
    named = {name: script if name in SCRIPTS else text for name in required}
    named.update(dict.fromkeys(scripts, script))
    if named:
        schema["properties"] = named
    if required:
        schema["required"] = list(required)
    return schema


def check_files(files: dict[str, str], own: str, required: tuple[str, ...] = (),
                forbidden: tuple[str, ...] = OTHER_AREAS, scripts: tuple[str, ...] = ()) -> dict[str, str]:
    """Validate a step's file map (paths relative to its folder `own`); raise ValueError naming the problem."""
    if len(files) > MAX_FILES:
        raise ValueError(f"{len(files)} files; at most {MAX_FILES}")
    areas = re.compile(_areas_pattern(forbidden))
    executed = set(scripts) | {r for r in required if r in SCRIPTS}
    for rel, text in files.items():
        if not re.fullmatch(PATH_PATTERN, rel):
            raise ValueError(f"unsafe path {rel!r}: use a relative path inside {own}/ whose parts match "
                             f"{_SEGMENT} (no '..', no leading '/', no spaces)")
        if areas.match(rel):
            raise ValueError(f"path {rel!r} reaches into {rel.split('/')[0]!r}; this step writes only inside {own}/")
        if len(text) > MAX_FILE_CHARS:
            raise ValueError(f"{rel!r} is longer than {MAX_FILE_CHARS} characters")
        if rel in executed and not text.startswith("#!"):
            raise ValueError(f"{own}/{rel} must start with a shebang line (#!/bin/bash): it is executed directly")
    missing = [r for r in required if r not in files]
    if missing:
        raise ValueError(f"missing required file(s) {missing} in {own}/")
    return files


_ENV_FORBIDDEN = (*OTHER_AREAS, "Dockerfile")


class EnvironmentReply(ReplyModel):
    """environment/: fixtures and stand-ins; the Dockerfile's FROM is ours (the pinned base image)."""

    image: Literal["minimal", "python"] = Field(
        description="minimal: bash, coreutils, grep, sed, mawk; python: +python3.")
    dockerfile_lines: list[DockerfileLine] = Field(
        max_length=30, description="Lines after FROM and WORKDIR /app, one instruction each with its upper-case "
        "keyword, e.g. COPY app/ /app/ (no FROM, no ADD).")
    files: dict[str, str] = Field(json_schema_extra=file_map_schema(
        "environment", forbidden=_ENV_FORBIDDEN,
        description="Path relative to environment/ -> file text (no Dockerfile)."))

    @field_validator("files")
    @classmethod
    def _files(cls, files: dict[str, str]) -> dict[str, str]:
        return check_files(files, "environment", forbidden=_ENV_FORBIDDEN)


class InstructionReply(ReplyModel):
    instruction: str = Field(min_length=80, max_length=6000, description="instruction.md: 2-3 short paragraphs.")


class VerifierReply(ReplyModel):
    files: dict[str, str] = Field(json_schema_extra=file_map_schema(
        "tests", required=("test.sh",), description="Path relative to tests/ -> text; must include test.sh."))
    metrics: list[Metric] = Field(min_length=2, max_length=6, json_schema_extra={"uniqueItems": True},
                                  description="Unique snake_case metric names test.sh writes to reward.json.")

    @field_validator("files")
    @classmethod
    def _files(cls, files: dict[str, str]) -> dict[str, str]:
        return check_files(files, "tests", required=("test.sh",))

    @field_validator("metrics")
    @classmethod
    def _metrics(cls, metrics: list[str]) -> list[str]:
        if len(set(metrics)) != len(metrics):
            raise ValueError(f"metric names must be unique (got {metrics})")
        return metrics


class RubricReply(ReplyModel):
    must_do: list[RubricItem] = Field(min_length=1, max_length=3, description="One line each.")
    must_avoid: list[RubricItem] = Field(min_length=1, max_length=3, description="One line each.")
    best_practice: list[RubricItem] = Field(min_length=1, max_length=3, description="One line each.")


class SolutionReply(ReplyModel):
    files: dict[str, str] = Field(json_schema_extra=file_map_schema(
        "solution", required=("solve.sh",), scripts=("wrong.sh",),
        description="Path relative to solution/ -> text; solve.sh, optional wrong.sh."))

    @field_validator("files")
    @classmethod
    def _files(cls, files: dict[str, str]) -> dict[str, str]:
        return check_files(files, "solution", required=("solve.sh",), scripts=("wrong.sh",))


CHEAT_NAME = r"^[a-z][a-z0-9_]{0,39}$"
MAX_CHEAT_CHARS = 8_000


def bash_syntax_error(script: str) -> str:
    """bash -n's complaint about a script ('' when it parses); the text is parsed, never run."""
    bash = shutil.which("bash")
    if bash is None:
        raise RuntimeError("bash not found on this machine")
    done = subprocess.run([bash, "-n"], input=script, capture_output=True, text=True, timeout=30)
    return "" if done.returncode == 0 else (done.stderr.strip() or f"bash -n exited {done.returncode}")[:300]


class CheatsReply(ReplyModel):
    """solution/cheats/<name>.sh: shortcut scripts that must NOT earn the reward (the gates run each one)."""

    SEMANTIC_RULES = ("Every script must parse under `bash -n` (the gates reject a task whose scripts do not).",)

    cheats: dict[str, str] = Field(json_schema_extra={
        "minProperties": 2, "maxProperties": 4, "propertyNames": {"pattern": CHEAT_NAME},
        "additionalProperties": {"type": "string", "pattern": SHEBANG_PATTERN, "maxLength": MAX_CHEAT_CHARS},
        "description": "Cheat name (snake_case, no extension) -> bash script starting with #!/bin/bash."})

    @field_validator("cheats")
    @classmethod
    def _cheats(cls, cheats: dict[str, str]) -> dict[str, str]:
        if not 2 <= len(cheats) <= 4:
            raise ValueError(f"give 2 to 4 cheats (got {len(cheats)})")
        problems = [f"{name!r}: not a snake_case name" for name in cheats if not re.match(CHEAT_NAME, name)]
        problems += [f"{name!r}: must start with #!" for name, text in cheats.items() if not text.startswith("#!")]
        problems += [f"{name!r}: longer than {MAX_CHEAT_CHARS} characters" for name, text in cheats.items()
                     if len(text) > MAX_CHEAT_CHARS]
        if problems:
            raise ValueError("; ".join(problems))
        broken = [f"{name}: {err}" for name, text in cheats.items() if (err := bash_syntax_error(text))]
        if broken:
            raise ValueError("bash syntax: " + "; ".join(broken))
        return cheats

    def files(self) -> dict[str, str]:
        """The builder's view: `<name>.sh` under solution/cheats/."""
        return {f"{name}.sh": text for name, text in self.cheats.items()}
