"""Lenient SKILL.md parsing: read what real skills contain, report spec violations as warnings, reject little.

Real skills break the spec in many ways (see shared/notes/agent-skills-in-the-wild.md); agents load most of them
anyway, so only a file with no usable description, or YAML that does not parse, makes a skill `invalid`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from skill2env_dagster.models.skill import FrontmatterStatus
from skill2env_dagster.reasons import ReasonCode

SPEC_KEYS = frozenset({"name", "description", "license", "compatibility", "metadata", "allowed-tools"})
ALT_DESCRIPTION_KEYS = ("summary", "desc", "about")
ALT_NAME_KEYS = ("displayName", "display_name", "title")
RESERVED_WORDS = ("anthropic", "claude")
NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_FENCE = re.compile(r"^[ \t]*---[ \t]*$")
_XML_TAG = re.compile(r"</?[A-Za-z][\w:-]*(\s[^<>]*)?/?>")
_DESC_LINE = re.compile(r"^\s*(?:\*\*)?description(?:\*\*)?\s*:\s*(?:\*\*)?\s*(.+)$", re.IGNORECASE)
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: same rules, 10x faster
_H1 = re.compile(r"^#\s+(.+?)\s*#*\s*$")


@dataclass
class ParsedSkill:
    frontmatter: dict[str, Any]
    status: FrontmatterStatus
    name: str | None
    description: str | None
    license: str | None
    body: str
    body_start_line: int  # 1-based line where the body starts in SKILL.md
    warnings: list[str] = field(default_factory=list)
    errors: list[tuple[ReasonCode, str]] = field(default_factory=list)


def normalise_text(text: str) -> str:
    """Strip a BOM, unify line endings and drop stray control bytes (tabs and newlines kept)."""
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    return re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", "", text)


def split_frontmatter(text: str) -> tuple[str | None, str, int]:
    """(frontmatter text or None, body, body start line). Accepts an indented closing fence."""
    lines = text.split("\n")
    first = next((i for i, ln in enumerate(lines) if ln.strip()), None)
    if first is None or lines[first].strip() != "---":
        return None, text, 1
    for j in range(first + 1, len(lines)):
        if _FENCE.match(lines[j]):
            return "\n".join(lines[first + 1 : j]), "\n".join(lines[j + 1 :]), j + 2
    return None, text, 1


def fallback_from_body(body: str) -> tuple[str | None, str | None]:
    """No usable frontmatter: name from the first H1, description from a `description:` line or the first
    paragraph. The screen uses it too, so a skill with broken YAML still has an identity."""
    name = desc = None
    for line in body.split("\n"):
        if name is None and (m := _H1.match(line)):
            name = m.group(1).strip()
        if desc is None and (m := _DESC_LINE.match(line)):
            desc = m.group(1).strip().strip("*").strip()
    if desc is None:
        blocks = body.split("\n\n", 3)
        block = blocks[1] if name and len(blocks) > 1 else blocks[0]
        para = [ln.strip() for ln in block.split("\n") if ln.strip()]
        candidate = " ".join(p for p in para if not p.startswith(("#", "```", "|", "-", "*")))
        desc = candidate or None
    return name, desc


def _description_line(body: str) -> str | None:
    return next((m.group(1).strip().strip("*").strip() for ln in body.split("\n") if (m := _DESC_LINE.match(ln))), None)


def _as_str(value: Any) -> str | None:
    if value is None:
        return None
    return value.strip() if isinstance(value, str) else str(value)


def parse_skill_md(text: str, folder_name: str) -> ParsedSkill:
    text = normalise_text(text)
    fm_text, body, start = split_frontmatter(text)
    if fm_text is None:
        return _parse_without_frontmatter(body, folder_name)
    try:
        loaded = yaml.load(fm_text, Loader=_YAML_LOADER) if fm_text.strip() else {}
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (frontmatter line {mark.line + 1})" if mark else ""
        parsed = ParsedSkill({}, "invalid_yaml", None, None, None, body, start)
        parsed.errors.append((ReasonCode.INVALID_YAML, f"{getattr(e, 'problem', e)}{where}"))
        return parsed
    if not isinstance(loaded, dict):
        parsed = ParsedSkill({}, "invalid_yaml", None, None, None, body, start)
        parsed.errors.append((ReasonCode.INVALID_YAML, f"frontmatter is a {type(loaded).__name__}, not a mapping"))
        return parsed
    fm = {str(k): v for k, v in loaded.items()}
    parsed = ParsedSkill(fm, "ok", _as_str(fm.get("name")), _as_str(fm.get("description")),
                         _as_str(fm.get("license")), body, start)
    _apply_alternatives(parsed, folder_name)
    parsed.warnings.extend(spec_warnings(parsed, folder_name))
    return parsed


def _parse_without_frontmatter(body: str, folder_name: str) -> ParsedSkill:
    name, desc = fallback_from_body(body)
    parsed = ParsedSkill({}, "fallback" if desc else "missing", name, desc, None, body, 1)
    parsed.warnings.append("no_frontmatter")
    if not desc:
        parsed.errors.append((ReasonCode.NO_FRONTMATTER, "no frontmatter and no description line or paragraph"))
    if name and not NAME_RE.match(name):
        parsed.warnings.append("name_from_heading")
    return parsed


def _apply_alternatives(parsed: ParsedSkill, folder_name: str) -> None:
    fm = parsed.frontmatter
    if not parsed.description:
        alt = next((k for k in ALT_DESCRIPTION_KEYS if _as_str(fm.get(k))), None)
        if alt:
            parsed.description = _as_str(fm[alt])
            parsed.warnings.append(f"description_from_{alt}")
        elif body_desc := _description_line(parsed.body):
            parsed.description = body_desc
            parsed.warnings.append("description_from_body")
            parsed.status = "fallback"
        else:
            parsed.errors.append((ReasonCode.MISSING_DESCRIPTION, "no description in frontmatter or a body line"))
            if not parsed.name and not any(_as_str(fm.get(k)) for k in ALT_NAME_KEYS):
                parsed.errors.append((ReasonCode.MISSING_NAME, "no name in frontmatter"))
    if not parsed.name:
        alt = next((k for k in ALT_NAME_KEYS if _as_str(fm.get(k))), None)
        parsed.name = _as_str(fm[alt]) if alt else folder_name
        parsed.warnings.append(f"name_from_{alt}" if alt else "missing_name")


def spec_warnings(parsed: ParsedSkill, folder_name: str) -> list[str]:
    """Every agentskills.io rule the skill breaks, as warning codes; none of them blocks the skill."""
    fm, out = parsed.frontmatter, []
    name, desc = parsed.name or "", parsed.description or ""
    if "name" in fm and not isinstance(fm["name"], str):
        out.append("name_wrong_type")
    if name and (len(name) > 64 or not NAME_RE.match(name)):
        out.append("name_invalid_chars")
    if name and name != folder_name and folder_name not in (".", ""):
        out.append("name_dir_mismatch")
    if any(w in name.lower() for w in RESERVED_WORDS):
        out.append("name_reserved_word")
    if "description" in fm and not isinstance(fm["description"], str):
        out.append("description_wrong_type")
    if len(desc) > 1024:
        out.append("description_over_1024")
    if _XML_TAG.search(desc):
        out.append("description_xml_tags")
    if isinstance(fm.get("compatibility"), str) and len(fm["compatibility"]) > 500:
        out.append("compatibility_over_500")
    if "license" in fm and not isinstance(fm["license"], str):
        out.append("license_wrong_type")
    meta = fm.get("metadata")
    if meta is not None and (not isinstance(meta, dict) or any(not isinstance(v, str) for v in meta.values())):
        out.append("metadata_non_string_values")
    tools = fm.get("allowed-tools")
    if isinstance(tools, list):
        out.append("allowed_tools_list")
    elif isinstance(tools, str) and "," in tools:
        out.append("allowed_tools_comma_separated")
    unknown = sorted(set(fm) - SPEC_KEYS)
    out.extend(f"unknown_key:{k}" for k in unknown)
    if not parsed.body.strip():
        out.append("empty_body")
    if parsed.body.count("\n") > 500:
        out.append("body_over_500_lines")
    return out
