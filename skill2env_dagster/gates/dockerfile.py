"""Dockerfile policy: parse FROM (multi-stage, --platform, aliases), check registries and pins, pin tags.

The build context is environment/ only, and every base must come from an approved registry pinned by digest, so
an image is reproducible and cannot pull anything we did not vet. `pin_dockerfile` turns tag references into
digest references by asking the approved registry and records them in task.toml `[metadata] base_image_pins`.
"""

from __future__ import annotations

import io
import json
import shlex
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from dockerfile_parse import DockerfileParser

from skill2env_dagster.atomic import atomic_write_text
from skill2env_dagster.gates.freeze import compute_freeze_hash
from skill2env_dagster.gates.registry import DIGEST_RE, LOCAL_REGISTRY, resolve_digest, split_ref
from skill2env_dagster.models.task_dir import TaskDir
from skill2env_dagster.models.task_toml import TaskToml
from skill2env_dagster.reasons import InputError, ReasonCode

DEFAULT_APPROVED = (LOCAL_REGISTRY,)
# Names a COPY/ADD source may not mention: the grading and solution must never be baked into the image.
FORBIDDEN_SOURCES = ("instruction.md", "rubric.md", "task.toml", "tests", "solution")


@dataclass(frozen=True)
class FromLine:
    """One FROM instruction: `FROM [--platform=…] image [AS alias]`, with its 0-based line number."""

    line: int
    image: str
    alias: str | None
    flags: tuple[str, ...]
    raw: str


@dataclass(frozen=True)
class Instruction:
    name: str
    value: str
    line: int
    raw: str


def parse_instructions(text: str) -> list[Instruction]:
    """Instructions with continuations joined and comments dropped (dockerfile-parse does the lexing)."""
    parser = DockerfileParser(fileobj=io.BytesIO(text.encode()))
    return [
        Instruction(d["instruction"].upper(), d["value"], d["startline"], d["content"])
        for d in parser.structure
        if d["instruction"].upper() != "COMMENT"
    ]


def parse_from(inst: Instruction) -> FromLine:
    """Split flags, image and alias; ValueError when the line has the wrong shape."""
    words = inst.value.split()
    flags = tuple(w for w in words if w.startswith("--"))
    rest = [w for w in words if not w.startswith("--")]
    if len(rest) == 3 and rest[1].lower() == "as":
        return FromLine(inst.line, rest[0], rest[2], flags, inst.raw)
    if len(rest) == 1:
        return FromLine(inst.line, rest[0], None, flags, inst.raw)
    raise ValueError(f"line {inst.line + 1}: cannot parse FROM {inst.value!r}")


def from_lines(text: str) -> list[FromLine]:
    return [parse_from(i) for i in parse_instructions(text) if i.name == "FROM"]


def external_bases(froms: list[FromLine]) -> list[FromLine]:
    """FROMs naming a real image: not `scratch` and not an earlier stage's alias."""
    aliases: set[str] = set()
    out = []
    for f in froms:
        if f.image.lower() != "scratch" and f.image.lower() not in aliases:
            out.append(f)
        if f.alias:
            aliases.add(f.alias.lower())
    return out


def from_problems(text: str, approved: tuple[str, ...] | list[str] = DEFAULT_APPROVED) -> list[str]:
    """Every reason the FROM lines break the base-image policy; empty means compliant."""
    try:
        froms = from_lines(text)
    except ValueError as e:
        return [str(e)]
    if not froms:
        return ["no FROM instruction"]
    problems = [f"line {f.line + 1}: variable in FROM ({f.raw.strip()})" for f in froms if "$" in f.raw]
    bases = external_bases(froms)
    if not bases:
        problems.append("no external base image (only scratch or stage aliases)")
    for f in bases:
        if "$" in f.raw:
            continue
        registry, _, _, digest = split_ref(f.image)
        if registry not in approved:
            problems.append(f"line {f.line + 1}: registry {registry} of {f.image} is not approved ({list(approved)})")
        elif digest is None or not DIGEST_RE.match(digest):
            problems.append(f"line {f.line + 1}: {f.image} is not pinned by sha256 digest")
    return problems


def _copy_sources(inst: Instruction) -> list[str] | None:
    """Source operands of COPY/ADD; None when copying from another stage (sources are not in the context)."""
    value = inst.value.strip()
    if value.startswith("["):
        try:
            words = [str(w) for w in json.loads(value)]
        except json.JSONDecodeError:
            words = shlex.split(value)
    else:
        words = shlex.split(value)
    if any(w.startswith("--from") for w in words):
        return None
    operands = [w for w in words if not w.startswith("--")]
    return operands[:-1]


def copy_problems(text: str) -> list[str]:
    """COPY/ADD may not leave the context, fetch URLs, or name instruction/tests/solution files."""
    problems = []
    for inst in parse_instructions(text):
        if inst.name not in {"COPY", "ADD"}:
            continue
        sources = _copy_sources(inst)
        for src in sources or []:
            where = f"line {inst.line + 1}: {inst.name} {src}"
            parts = PurePosixPath(src).parts
            if ".." in parts or src.startswith("/"):
                problems.append(f"{where} leaves the build context")
            elif "://" in src or src.startswith("git@"):
                problems.append(f"{where} fetches from the network")
            elif any(name in part for part in parts for name in FORBIDDEN_SOURCES):
                problems.append(f"{where} names grading or solution files")
    return problems


def _pin_ref(image: str, approved: tuple[str, ...] | list[str]) -> tuple[str, str]:
    """(pinned reference, digest) for one base; raises InputError/InfraError with a reason code."""
    registry, path, tag, digest = split_ref(image)
    if registry not in approved:
        raise InputError(ReasonCode.BASE_IMAGE_POLICY, f"{image}: registry {registry} is not approved")
    if digest is None:
        digest = resolve_digest(registry, path, tag or "latest")
    elif not DIGEST_RE.match(digest):
        raise InputError(ReasonCode.BASE_IMAGE_POLICY, f"{image}: malformed digest")
    return f"{registry}/{path}@{digest}", digest


def pin_dockerfile(
    task_dir: Path | str, approved_registries: tuple[str, ...] | list[str] = DEFAULT_APPROVED
) -> dict[str, str]:
    """Rewrite every base FROM to `registry/name@sha256:…` and record `{original ref: digest}` in task.toml
    (replacing what was recorded, so the record matches the FROM lines).

    If task.toml carried a freeze_hash that matched before the rewrite, it is refreshed after it (pinning is
    not a change to the world); a freeze_hash that was already stale is left stale for the gate to catch.
    """
    task = TaskDir(Path(task_dir))
    text = task.dockerfile.read_text()
    if any("$" in f.raw for f in from_lines(text)):
        raise InputError(ReasonCode.BASE_IMAGE_POLICY, f"{task.dockerfile}: variables in FROM cannot be pinned")
    lines = text.splitlines(keepends=True)
    pins: dict[str, str] = {}
    for f in external_bases(from_lines(text)):
        pinned, digest = _pin_ref(f.image, approved_registries)
        pins[f.image] = digest
        if f.raw.count("\n") > 1 or f.image not in lines[f.line]:
            raise InputError(ReasonCode.BASE_IMAGE_POLICY, f"line {f.line + 1}: put FROM on one line to pin it")
        lines[f.line] = lines[f.line].replace(f.image, pinned, 1)
    config = TaskToml.from_toml(task.config.read_text())
    fresh = config.metadata.get("freeze_hash") == compute_freeze_hash(task.root)
    atomic_write_text(task.dockerfile, "".join(lines))
    old = config.metadata.get("base_image_pins") or {}
    # Exactly the FROM lines' digests (no stale ones), under the reference they were first pinned from.
    updates: dict[str, object] = {"base_image_pins": {
        next((k for k, v in old.items() if v == d), image): d for image, d in pins.items()}}
    if fresh:
        updates["freeze_hash"] = compute_freeze_hash(task.root)
    atomic_write_text(task.config, config.with_metadata(**updates).to_toml())
    return pins
