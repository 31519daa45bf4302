"""Worked examples (commands, 'input → output' pairs, code blocks with their language) and the files a skill
ships (data, templates, configs, schemas, scripts, references), classified by path and extension only."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from skill2env_dagster.knowledge.source import Block, plain
from skill2env_dagster.models.knowledge import ArtifactRole, ShippedArtifact, WorkedExample
from skill2env_dagster.models.skill import SkillRecord

SHELL = {"bash", "sh", "shell", "console", "zsh", "terminal", "shell-session"}
MAX_CODE = 400
_ARROW = re.compile(r"`([^`\n]{1,60})`\s*(?:→|->|=>|⇒|becomes|maps to|is rewritten to)\s*`([^`\n]{1,60})`")
_SCRIPT = {".py", ".sh", ".bash", ".js", ".mjs", ".ts", ".rb", ".go", ".r", ".pl", ".ps1", ".awk", ".sql", ".php"}
_DATA = {".csv", ".tsv", ".jsonl", ".parquet", ".xlsx", ".xls", ".sqlite", ".db", ".ndjson", ".txt"}
_CONFIG = {".yaml", ".yml", ".toml", ".ini", ".conf", ".cfg", ".env", ".properties"}
_DOCS = {".md", ".markdown", ".rst", ".pdf", ".html"}


def examples_in(block: Block) -> list[WorkedExample]:
    out: list[WorkedExample] = []
    if block.kind == "fence":
        code = block.text.strip("\n")
        if not code:
            return out
        if block.lang in SHELL:
            for i, line in enumerate(code.splitlines()):
                cmd = re.sub(r"^\s*(\$|>)\s+", "", line).strip()
                if cmd and not cmd.startswith("#") and re.match(r"[A-Za-z./]", cmd):
                    out.append(WorkedExample(kind="command", language=block.lang, text=cmd[:MAX_CODE],
                                             ref=block.doc.ref(block.line + 1 + i)))
        else:
            out.append(WorkedExample(kind="code", language=block.lang, text=code[:MAX_CODE],
                                     ref=block.doc.ref(min(block.line + 1, block.end))))
        return out
    if block.kind in ("paragraph", "item"):
        for m in _ARROW.finditer(block.text):
            a, b = m.group(1).strip(), m.group(2).strip()
            out.append(WorkedExample(kind="io_pair", text=f"{a} → {b}", input=a, output=b,
                                     ref=block.doc.ref(block.line_of(plain(block.text[m.start():])))))
    return out


def role_of(path: str) -> ArtifactRole:
    p = PurePosixPath(path.lower())
    parts, ext = set(p.parts[:-1]), p.suffix
    if ext in _SCRIPT or parts & {"scripts", "bin", "tools"}:
        return "script"
    if "schema" in p.name or ext in (".xsd", ".avsc"):
        return "schema"
    if "template" in p.name or parts & {"templates", "template"}:
        return "template"
    if ext in _CONFIG:
        return "config"
    if ext == ".json":
        return "data" if parts & {"data", "assets", "fixtures", "examples", "samples"} else "config"
    if ext in _DATA:
        return "data"
    if ext in _DOCS:
        return "reference"
    if parts & {"assets", "static", "fonts", "images"}:
        return "asset"
    return "other"


def artifacts_of(skill: SkillRecord) -> list[ShippedArtifact]:
    return [ShippedArtifact(path=f.rel_path, role=role_of(f.rel_path), size=f.size, text=f.kind == "text")
            for f in skill.files if f.rel_path != skill.skill_file and f.kind != "symlink" and f.refused is None]
