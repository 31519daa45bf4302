"""What the second opinion shows the model, and afterwards which of the rules' findings it was shown.

Why this shape: the model can clear a code only by quoting a line, and every quote is checked against the skill's
files, so each line the prompt presents as the skill's text must be the file's own text. A score, a flattened YAML
path or an added prefix inside it makes a faithful quote fail. The context of a flagged line (the rule, the
classifier's probability) therefore sits in a field of its own, never in the quoted text.

The file budget goes to what the workflow reads: SKILL.md, then the files SKILL.md names (in the order it names
them), then scripts, then docs, then other text. Binary, image, lock, vendored and licence files are never sent,
and the prompt lists every file left out with why, so the model knows what it did not see.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from skill2env_dagster.models.skill import Finding, SkillRecord
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.skillhub.screen import learned
from skill2env_dagster.skillhub.screen.rules import load_rule_book
from skill2env_dagster.skillhub.sources.bundle import classify_bytes

FILE_BUDGET = 40_000  # characters of skill text sent per call
CAP_SKILL_MD = 24_000  # per-file caps: SKILL.md, a file SKILL.md names, any other file
CAP_NAMED = 12_000
CAP_OTHER = 6_000
MIN_SLICE = 800  # a truncated file gets at least this much, or it is left out ("over the budget")
MAX_FLAGGED = 40  # distinct flagged lines listed
MAX_LINE = 400  # characters of one flagged line; a longer one is shown as the verbatim part around the match
MAX_LEFT_OUT = 40  # files named in the "not sent" list (the rest are counted)

# Files never sent, by what they are: nothing in them is the workflow's text a model should read.
_NEVER: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("image", re.compile(r"(?i)\.(svg|png|jpe?g|gif|ico|icns|webp|bmp|tiff?|heic|avif)$")),
    ("binary document, archive or media", re.compile(
        r"(?i)\.(pdf|docx?|xlsx?|pptx?|odt|ods|odp|epub|zip|gz|tgz|bz2|xz|tar|7z|rar|jar|whl|egg|woff2?|ttf|otf"
        r"|eot|mp[34]|m4a|wav|ogg|flac|mov|avi|mkv|webm|sqlite3?|db|pyc|so|dylib|dll|exe|bin|wasm|pkl|npy|npz"
        r"|parquet|onnx|pt|safetensors)$")),
    ("lock file", re.compile(r"(?i)(^|/)(package-lock\.json|npm-shrinkwrap\.json|yarn\.lock|pnpm-lock\.ya?ml"
                             r"|poetry\.lock|pipfile\.lock|cargo\.lock|gemfile\.lock|composer\.lock|uv\.lock"
                             r"|go\.sum|bun\.lockb?|flake\.lock|pdm\.lock|mix\.lock|podfile\.lock)$|\.lock$")),
    ("vendored or generated", re.compile(r"(?i)(^|/)(node_modules|vendor|vendored|third[_-]party|site-packages"
                                         r"|\.venv|venv|dist|build|__pycache__|\.git|\.next|coverage)/"
                                         r"|\.min\.(js|css)$|\.(js|css)\.map$|\.map$")),
)
_LICENCE = re.compile(r"(?i)(^|/)(LICEN[CS]E|COPYING|NOTICE)([.-][\w.-]*)?$")
_DOC = re.compile(r"(?i)\.(md|markdown|mdx|txt|rst|adoc)$")


@dataclass(frozen=True)
class SentFile:
    """One file as sent: `text` is its whole text or a prefix of it."""

    path: str
    text: str
    total: int  # the file's length in characters

    @property
    def whole(self) -> bool:
        return len(self.text) == self.total

    @property
    def lines_sent(self) -> int:
        """Lines shown complete (a cut file's last, partial line does not count)."""
        return self.text.count("\n") + (1 if self.whole and self.text and not self.text.endswith("\n") else 0)


@dataclass(frozen=True)
class LeftOut:
    path: str
    why: str


@dataclass(frozen=True)
class FlaggedLine:
    """A line the rules flagged: its text exactly as in the file; the rules' context apart."""

    file: str
    line: int
    text: str
    codes: tuple[str, ...]
    context: str
    partial: bool = False


@dataclass(frozen=True)
class FlaggedNote:
    """A flag tied to no line (a whole-document check): described, not quoted."""

    file: str
    code: str
    context: str


@dataclass
class OpinionView:
    """Everything the prompt shows, and the full texts quotes are verified against."""

    files: list[SentFile]
    left_out: list[LeftOut]
    flagged: list[FlaggedLine]
    notes: list[FlaggedNote]
    texts: dict[str, str] = field(default_factory=dict)

    def seen(self, f: Finding) -> bool:
        """Was the model shown what this finding points at: its line (in the flagged list or inside the sent part of
        its file), or, for a finding tied to no line, its whole file?"""
        sent = next((s for s in self.files if s.path == f.file), None)
        if f.line > 0:
            return any((x.file, x.line) == (f.file, f.line) for x in self.flagged) or \
                (sent is not None and f.line <= sent.lines_sent)
        return sent is not None and sent.whole and bool(f.file)


def build_view(record: SkillRecord, codes: Iterable[ReasonCode]) -> OpinionView:
    """The view of one skill: its files within the budget and the rules' flagged lines of `codes`."""
    texts, left_out = _readable(record)
    files, over = _within_budget(record.skill_file, texts)
    flagged, notes = _flagged(record, set(codes), texts)
    return OpinionView(files=files, left_out=left_out + [LeftOut(p, "over the budget") for p in over],
                       flagged=flagged, notes=notes, texts=texts)


def _never_sent(path: str) -> str | None:
    if _LICENCE.search(path):
        return "licence text"
    return next((why for why, rx in _NEVER if rx.search(path)), None)


def _readable(record: SkillRecord) -> tuple[dict[str, str], list[LeftOut]]:
    """path -> text of every file that may be sent (SKILL.md first), decoded as the crawl decodes it; and the files
    that never are, with why."""
    root = Path(record.abs_path)
    texts: dict[str, str] = {}
    out: list[LeftOut] = []
    entries = sorted(record.files, key=lambda e: (e.rel_path != record.skill_file, e.rel_path))
    for e in entries:
        why = None if e.rel_path == record.skill_file else _never_sent(e.rel_path)
        if why is None and (e.kind != "text" or e.refused is not None):
            why = "binary" if e.kind == "binary" and e.refused is None else \
                f"not read ({e.refused.value if e.refused else e.kind})"
        if why is not None:
            out.append(LeftOut(e.rel_path, why))
            continue
        try:
            kind, text = classify_bytes((root / e.rel_path).read_bytes())
        except OSError:
            out.append(LeftOut(e.rel_path, "unreadable"))
            continue
        if kind != "text" or text is None:
            out.append(LeftOut(e.rel_path, "binary"))
            continue
        texts[e.rel_path] = text
    return texts, out


def ranked(skill_file: str, texts: dict[str, str]) -> list[tuple[str, bool]]:
    """(path, named by SKILL.md) in sending order: SKILL.md; the files it names, in the order it first names them;
    scripts; docs; other text."""
    skill_md = texts.get(skill_file, "")
    names = [PurePosixPath(p).name for p in texts]
    unique = {n for n in names if names.count(n) == 1}
    code_files = load_rule_book(None).code_files

    def key(p: str) -> tuple[int, int, str]:
        if p == skill_file:
            return (0, 0, p)
        at = _first_mention(skill_md, p, PurePosixPath(p).name if PurePosixPath(p).name in unique else None)
        if at is not None:
            return (1, at, p)
        if code_files.search(p):
            return (2, 0, p)
        return (3 if _DOC.search(p) else 4, 0, p)

    keys = {p: key(p) for p in texts}
    return [(p, keys[p][0] == 1) for p in sorted(texts, key=keys.__getitem__)]


def _first_mention(skill_md: str, path: str, name: str | None) -> int | None:
    """Where SKILL.md first names the file: by its path, or by its file name when no other file shares it."""
    hits = [m.start() for m in [re.search(rf"(?<![\w/.-]){re.escape(path)}(?![\w-])", skill_md)] if m]
    if name and "." in name:
        m = re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", skill_md)
        if m:
            hits.append(m.start())
    return min(hits) if hits else None


def _within_budget(skill_file: str, texts: dict[str, str]) -> tuple[list[SentFile], list[str]]:
    """The ranked files, each up to its cap, until the budget is spent; the rest are over the budget."""
    left = FILE_BUDGET
    sent: list[SentFile] = []
    over: list[str] = []
    for p, named in ranked(skill_file, texts):
        text = texts[p]
        cap = CAP_SKILL_MD if p == skill_file else CAP_NAMED if named else CAP_OTHER
        take = min(len(text), cap, left)
        if take < len(text) and take < MIN_SLICE and p != skill_file:
            over.append(p)
            continue
        sent.append(SentFile(p, _cut(text, take), len(text)))
        left -= len(sent[-1].text)
    return sent, over


def _cut(text: str, n: int) -> str:
    """The first n characters, ending at a line break when one is near (a cut mid-line shows half a line)."""
    if n >= len(text):
        return text
    nl = text.rfind("\n", 0, n)
    return text[:nl + 1] if nl >= n - 400 else text[:n]


def _flagged(record: SkillRecord, codes: set[ReasonCode],
             texts: dict[str, str]) -> tuple[list[FlaggedLine], list[FlaggedNote]]:
    """Each distinct flagged line once, with every code and rule that flagged it; flags tied to no readable line
    as notes. SKILL.md's lines first, then by file and line."""
    by_line: dict[tuple[str, int], list[Finding]] = {}
    notes: list[FlaggedNote] = []
    for f in record.findings:
        if f.code not in codes:
            continue
        lines = _lines(record, f.file, texts)
        if f.line > 0 and f.line <= len(lines):
            by_line.setdefault((f.file, f.line), []).append(f)
        elif not any((n.file, n.code) == (f.file, f.code.value) for n in notes):
            notes.append(FlaggedNote(f.file, f.code.value, f"rule {f.rule}: {f.text}"))
    order = sorted(by_line, key=lambda k: (k[0] != record.skill_file, k[0], k[1]))[:MAX_FLAGGED]
    flagged = []
    for file, line in order:
        found = by_line[(file, line)]
        text, partial = _shown_line(_lines(record, file, texts)[line - 1], found)
        codes_here = tuple(sorted({f.code.value for f in found}))
        flagged.append(FlaggedLine(file, line, text, codes_here, _context(found), partial))
    return flagged, notes


def _lines(record: SkillRecord, path: str, texts: dict[str, str]) -> list[str]:
    """The file's lines (a flagged file that is never sent, e.g. a PDF, is still read for its flagged line)."""
    if path in texts:
        return texts[path].split("\n")
    if not path:
        return []
    try:
        kind, text = classify_bytes((Path(record.abs_path) / path).read_bytes())
    except OSError:
        return []
    return text.split("\n") if kind == "text" and text is not None else []


def _shown_line(line: str, found: list[Finding]) -> tuple[str, bool]:
    """The line without its line break; a long one as the verbatim part around the first match."""
    line = line.rstrip("\r")
    if len(line) <= MAX_LINE:
        return line, False
    at = max((line.find(learned.line_of_evidence(f)) for f in found), default=-1)
    start = max(0, at - 100) if at >= 0 else 0
    return line[start:start + MAX_LINE], True


def _context(found: list[Finding]) -> str:
    """The rules behind one flagged line (and the classifier's probability), never a quote."""
    parts = []
    for f in found:
        p = learned.probability_of(f)
        parts.append(f"{f.code.value} (rule {f.rule}" + (f", classifier p={p:.2f})" if p is not None else ")"))
    return "; ".join(dict.fromkeys(parts))
