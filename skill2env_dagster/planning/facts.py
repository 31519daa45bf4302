"""Mechanical facts about one skill: what its SKILL.md and files actually contain.

Both planners ground their plans in these facts (the offline planner builds from them alone), so every fact comes
from the skill's own bytes: Markdown headings, fenced code, shell commands, tables, rule sentences, the file layout
under scripts/ references/ assets/, CSV headers, and the most frequent domain terms. Files are read read-only,
size-capped, never followed through symlinks and never executed.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path, PurePosixPath

from markdown_it import MarkdownIt
from pydantic import BaseModel, ConfigDict, Field

from skill2env_dagster.models.skill import SkillRecord

MAX_READ = 256 * 1024
SHELL_LANGS = {"bash", "sh", "shell", "console", "zsh", "terminal", "powershell", "cmd"}
DATA_EXTS = {".csv", ".tsv", ".json", ".jsonl", ".xlsx", ".xls", ".parquet", ".sqlite", ".db", ".yaml", ".yml", ".xml"}
SCRIPT_EXTS = {".py", ".sh", ".js", ".ts", ".mjs", ".rb", ".go", ".r", ".pl", ".sql", ".ps1"}
AREA_ALIASES = {
    "scripts": "scripts", "script": "scripts", "bin": "scripts", "tools": "scripts",
    "references": "references", "reference": "references", "docs": "references", "resources": "references",
    "assets": "assets", "asset": "assets", "data": "assets", "fixtures": "assets",
    "templates": "templates", "template": "templates",
    "examples": "examples", "example": "examples",
}
GENERIC_HEADINGS = re.compile(
    r"^(overview|introduction|intro|when to use.*|usage|examples?|notes?|summary|references?|resources|"
    r"quick ?start|table of contents|contents|see also|license|prerequisites|installation|setup|requirements|"
    r"about|description|purpose|key principles|core principles|tips|faq|troubleshooting|related skills?)$",
    re.IGNORECASE,
)
TRIVIAL_TOOLS = {"echo", "cd", "ls", "cat", "export", "set", "source", "mkdir", "rm", "cp", "mv", "pwd", "sudo",
                 "printf", "true", "false", "exit", "if", "then", "fi", "for", "do", "done", "else", "sleep", "clear"}
RULE_LINE = re.compile(r"\b(MUST|NEVER|ALWAYS|must not|do not|don't|never|always|should not|avoid)\b")
VOCAB_STOP = {
    "skill", "skills", "use", "using", "used", "file", "files", "example", "examples", "code", "need", "make",
    "new", "like", "want", "user", "users", "claude", "agent", "way", "just", "run", "following", "step", "steps",
    "don", "doesn", "isn", "won", "didn", "can", "let", "got", "aren", "shouldn", "wouldn",
    "md", "http", "https", "com", "www", "github", "true", "false", "none", "null", "return", "ensure", "include",
}


class CodeBlock(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    lang: str
    first_line: str
    lines: int


class SkillFacts(BaseModel):
    """Everything the offline planner may build from; also shown to the LLM planner (as untrusted data)."""

    model_config = ConfigDict(extra="forbid")

    skill_id: str
    name: str
    domain: str
    headings: list[str] = Field(default_factory=list, description="'## Title' strings in document order.")
    sections: list[str] = Field(default_factory=list, description="Non-generic H2/H3 titles: candidate workflows.")
    code_blocks: list[CodeBlock] = Field(default_factory=list)
    languages: dict[str, int] = Field(default_factory=dict)
    commands: list[str] = Field(default_factory=list, description="Shell command lines from the fences.")
    tools: dict[str, int] = Field(default_factory=dict, description="First word of each command -> count.")
    tables: list[list[str]] = Field(default_factory=list, description="Header cells of Markdown tables.")
    rules: list[str] = Field(default_factory=list, description="Sentences stating a must/never/always rule.")
    files_by_area: dict[str, list[str]] = Field(default_factory=dict)
    extensions: dict[str, int] = Field(default_factory=dict)
    data_files: list[str] = Field(default_factory=list)
    csv_headers: dict[str, list[str]] = Field(default_factory=dict)
    script_functions: dict[str, list[str]] = Field(default_factory=dict)
    vocabulary: list[str] = Field(default_factory=list)


def extract_facts(skill: SkillRecord) -> SkillFacts:
    """All facts for one skill; pure apart from bounded reads of the skill's own text files."""
    tokens = MarkdownIt("commonmark").enable("table").parse(skill.body or "")
    headings, sections = _headings(tokens)
    blocks = _code_blocks(tokens)
    commands = _commands(tokens)
    files = [f for f in skill.files if f.refused is None and f.kind != "symlink"]
    rels = [f.rel_path for f in files]
    texts = {f.rel_path for f in files if f.kind == "text"}
    root = Path(skill.abs_path)
    data = [r for r in rels if PurePosixPath(r).suffix.lower() in DATA_EXTS]
    return SkillFacts(
        skill_id=skill.skill_id,
        name=skill.name or skill.skill_id,
        domain=skill.domain,
        headings=headings,
        sections=sections,
        code_blocks=blocks,
        languages=dict(Counter(b.lang for b in blocks if b.lang).most_common()),
        commands=commands[:40],
        tools=dict(Counter(w for c in commands if (w := c.split()[0]) not in TRIVIAL_TOOLS).most_common(12)),
        tables=_tables(tokens)[:10],
        rules=_rules(skill.body or "")[:12],
        files_by_area=_areas(rels),
        extensions=dict(Counter(PurePosixPath(r).suffix.lower() or "(none)" for r in rels).most_common()),
        data_files=data[:30],
        csv_headers={r: h for r in data if r in texts and (h := _csv_header(root, r))},
        script_functions={r: fn for r in _scripts(rels) if r in texts and (fn := _functions(root, r))},
        vocabulary=_vocabulary(skill),
    )


def _inline_text(tokens: list, i: int) -> str:
    return tokens[i + 1].content.strip() if i + 1 < len(tokens) and tokens[i + 1].type == "inline" else ""


def _headings(tokens: list) -> tuple[list[str], list[str]]:
    headings, sections = [], []
    for i, t in enumerate(tokens):
        if t.type != "heading_open":
            continue
        text = _inline_text(tokens, i)
        if not text:
            continue
        headings.append(f"{t.markup} {text}")
        plain = re.sub(r"[`*_]", "", text)
        plain = re.sub(r"^[^\w(]+|^(step|phase|part)?\s*\d+(\.\d+)*[.:)]?\s*", "", plain, flags=re.IGNORECASE).strip()
        if t.tag in ("h2", "h3") and plain and not GENERIC_HEADINGS.match(plain) and len(plain) <= 80:
            sections.append(plain)
    return headings[:60], sections[:30]


def _code_blocks(tokens: list) -> list[CodeBlock]:
    out = []
    for t in tokens:
        if t.type == "fence":
            lang = (t.info.split() or [""])[0].lower()
            body = t.content.strip("\n")
            out.append(CodeBlock(lang=lang[:20], first_line=body.splitlines()[0][:160] if body else "",
                                 lines=body.count("\n") + 1 if body else 0))
    return out[:60]


def _commands(tokens: list) -> list[str]:
    cmds = []
    for t in tokens:
        if t.type == "fence" and (t.info.split() or [""])[0].lower() in SHELL_LANGS:
            for line in t.content.splitlines():
                line = re.sub(r"^\s*(\$|>|#\s*\$)\s+", "", line).strip()
                if line and not line.startswith("#") and re.match(r"^[A-Za-z.][\w.\-/]*(\s|$)", line):
                    cmds.append(line[:160])
    return list(dict.fromkeys(cmds))


def _tables(tokens: list) -> list[list[str]]:
    tables: list[list[str]] = []
    current: list[str] = []
    in_head = False
    for i, t in enumerate(tokens):
        if t.type == "thead_open":
            in_head, current = True, []
        elif t.type == "thead_close":
            in_head = False
            if current:
                tables.append(current[:12])
        elif in_head and t.type == "th_open":
            current.append(_inline_text(tokens, i)[:60])
    return tables


def _rules(body: str) -> list[str]:
    rules = []
    for line in body.splitlines():
        text = re.sub(r"^[\s>*\-+\d.)]+", "", line).strip().strip("*_ ")
        if 25 <= len(text) <= 220 and RULE_LINE.search(text) and not text.startswith(("|", "`", "#")):
            rules.append(text)
    return list(dict.fromkeys(rules))


def _areas(rels: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for r in rels:
        parts = PurePosixPath(r).parts
        area = "root" if len(parts) == 1 else AREA_ALIASES.get(parts[0].lower(), "other")
        out.setdefault(area, []).append(r)
    return {k: sorted(v)[:40] for k, v in sorted(out.items())}


def _scripts(rels: list[str]) -> list[str]:
    return [r for r in rels if PurePosixPath(r).suffix.lower() in SCRIPT_EXTS][:20]


def _safe_read(root: Path, rel: str, limit: int = MAX_READ) -> str | None:
    """Read at most `limit` bytes of a file that really lies inside the skill folder (no symlink escapes)."""
    try:
        base = root.resolve()
        path = (root / rel).resolve()
        if base not in path.parents or path.is_symlink() or not path.is_file():
            return None
        with path.open("rb") as fh:
            return fh.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


def _csv_header(root: Path, rel: str) -> list[str]:
    if PurePosixPath(rel).suffix.lower() not in (".csv", ".tsv"):
        return []
    text = _safe_read(root, rel, 4096)
    if not text:
        return []
    first = text.splitlines()[0] if text.splitlines() else ""
    sep = "\t" if rel.lower().endswith(".tsv") else ","
    return [c.strip().strip('"')[:40] for c in first.split(sep) if c.strip()][:20]


def _functions(root: Path, rel: str) -> list[str]:
    text = _safe_read(root, rel)
    if not text:
        return []
    names = re.findall(r"^\s*(?:async\s+)?(?:def|function|func)\s+([A-Za-z_]\w*)", text, flags=re.MULTILINE)
    names += re.findall(r"add_argument\(\s*['\"](--?[\w-]+)", text)
    return list(dict.fromkeys(n for n in names if not n.startswith("_")))[:15]


def _vocabulary(skill: SkillRecord, top: int = 15) -> list[str]:
    """Most frequent content terms (uni- and bigrams) of the skill: the words that make its plans its own."""
    text = "\n".join(x for x in (skill.description or "", skill.body or "") if x)
    if len(text.split()) < 5:
        return []
    from sklearn.feature_extraction.text import CountVectorizer  # scikit-learn costs seconds at import

    vec = CountVectorizer(stop_words="english", ngram_range=(1, 2), token_pattern=r"(?u)\b[a-zA-Z][a-zA-Z-]{2,}\b")
    try:
        counts = vec.fit_transform([text]).toarray()[0]
    except ValueError:
        return []
    terms = vec.get_feature_names_out()
    ranked = sorted(zip(terms, counts, strict=True), key=lambda tc: (-tc[1], tc[0]))
    out: list[str] = []
    for term, count in ranked:
        if count < 2 or set(term.split()) & VOCAB_STOP:
            continue
        if any(term.startswith(t) or t.startswith(term) for t in out):
            continue  # skip inflections of a kept term (fix / fixes)
        out.append(term)
    return out[:top]
