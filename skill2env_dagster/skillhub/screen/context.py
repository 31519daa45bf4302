"""Where a rule hit sits in a file: line number, code block, heading, quotes — so quoted attack text can be told
apart from an instruction to run it.

A security skill that teaches detection quotes `curl … | sh` inside a code block under "Indicators", next to the
word "flag"; a lure says "run this" above the same block. Both contain the same bytes, so the screen has to look
at the surroundings. Everything here is cheap per file (one pass over the lines) and only consulted for hits.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import accumulate

import ahocorasick

from skill2env_dagster.skillhub.screen.rules import CompiledBook

# Very long lines (minified JSON, base64 blobs) are scanned in chunks: `[^\n]*` patterns stay linear per chunk.
MAX_SCAN_LINE = 2000

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_LIST_OR_TABLE = re.compile(r"^\s*([-*+]|\d+[.)]|\|)\s")
_TABLE_ROW = re.compile(r"^\s*\|")
_MARKDOWN_EXT = re.compile(r"(?i)\.(md|markdown|mdx)$")
_QUOTE_PAIRS = (("`", "`"), ('"', '"'), ("\u201c", "\u201d"), ("'", "'"))

# Invisible characters that hide text from a human reader but not from a model: zero-width characters (split a
# directive so plain matching misses it) and Unicode tag characters (invisible copies of ASCII, "ASCII
# smuggling"). Scanning sees the revealed text: zero-width characters dropped, tag characters mapped to ASCII.
_INVISIBLE = re.compile("[\u00ad\u180e\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\U000e0000-\U000e007f]")
_REVEAL = {**{ord(c): None for c in "\u00ad\u180e\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff"},
           **{0xE0000 + k: chr(k) for k in range(0x20, 0x7F)}, 0xE0001: None, 0xE007F: None}


@dataclass
class FileContext:
    """Per-line facts about one file, built once and shared by every rule hit in it."""

    path: str
    scan_text: str
    lines: list[str]
    orig_line: list[int]
    starts: list[int]
    in_code: list[bool] = field(default_factory=list)
    block_start: list[int] = field(default_factory=list)
    under_detection_heading: list[bool] = field(default_factory=list)
    section: list[str] = field(default_factory=list)  # the Markdown headings above each line, joined by " / "
    under_instruction_heading: list[bool] = field(default_factory=list)
    test_data: bool = False
    defensive: bool = False  # the skill's own name/description declares a detection/defence/teaching purpose
    # a supporting document (not SKILL.md, not code) of a defensive skill: its threat write-ups and pattern
    # catalogues are teaching material for every quotable rule, identity_context or not (outside setup sections)
    reference_doc: bool = False
    is_code: bool = False  # a script: its lines are statements, never prose wrapped over two lines
    automaton: ahocorasick.Automaton | None = None
    _by_trigger: dict[str, frozenset[int]] | None = None

    def line_index(self, offset: int) -> int:
        """0-based index into `lines` of a character offset in `scan_text`."""
        return bisect_right(self.starts, offset) - 1

    def _trigger_index(self) -> dict[str, frozenset[int]]:
        """trigger -> lines holding it, from one Aho-Corasick pass over the lower-cased file (built on first use).

        Lower-casing may change a line's length (never its newlines), so lines are located in the lowered text.
        """
        if self._by_trigger is None:
            found: dict[str, set[int]] = {}
            if self.automaton is not None:
                low = self.scan_text.lower()
                starts = [0, *accumulate(len(x) + 1 for x in low.split("\n")[:-1])]
                for end, word in self.automaton.iter(low):
                    found.setdefault(word, set()).add(bisect_right(starts, end) - 1)
            self._by_trigger = {w: frozenset(v) for w, v in found.items()}
        return self._by_trigger

    def active_rules(self, book: CompiledBook) -> list[int]:
        """Indices (in rule-book order) of the rules that can match in this file: those without triggers and those
        with a trigger present. Most rules are skipped without a single regex call."""
        active = set(book.untriggered_rules)
        for t in self._trigger_index():
            active.update(book.rules_by_trigger[t])
        return sorted(active)

    def candidate_lines(self, triggers: tuple[str, ...], widen: int) -> list[int]:
        """Indices of lines containing any trigger, widened by `widen` lines each way."""
        index = self._trigger_index()
        found: set[int] = set()
        for t in triggers:
            found |= index.get(t, frozenset())
        if widen and found:
            n = len(self.lines)
            found = {j for i in found for j in range(max(0, i - widen), min(n, i + widen + 1))}
        return sorted(found)


def line_of(text: str, line: str) -> int:
    """1-based number of the first line of `text` where `line` occurs (0 when it is absent or empty)."""
    idx = text.find(line) if line else -1
    return text.count("\n", 0, idx) + 1 if idx >= 0 else 0


def build_context(path: str, text: str, book: CompiledBook, *, defensive: bool = False) -> FileContext:
    """Split the file into scan lines and mark code blocks and headings (Markdown only).

    In a skill with a defensive identity, data files (signature lists, IOC feeds, test corpora) are pattern data
    wherever they sit, and so are its test files (a scanner's tests hold the attacks it must catch); data files
    under fixture paths are pattern data in any skill.
    """
    lines, orig = _scan_lines(text)
    starts, pos = [], 0
    for ln in lines:
        starts.append(pos)
        pos += len(ln) + 1
    ctx = FileContext(path=path, scan_text="\n".join(lines), lines=lines, orig_line=orig, starts=starts,
                      automaton=book.triggers, defensive=defensive, is_code=bool(book.code_files.search(path)))
    data_file, markdown = bool(book.data_files.search(path)), bool(_MARKDOWN_EXT.search(path))
    fixture = bool(book.fixture_paths.search(path))
    ctx.test_data = (fixture and data_file) or (
        defensive and ((data_file and not markdown) or fixture or bool(book.pattern_paths.search(path))))
    ctx.reference_doc = defensive and not ctx.is_code and data_file and path.lower() != "skill.md"
    _mark_structure(ctx, book, markdown=markdown)
    return ctx


def reveal_invisible(text: str) -> str:
    """The text as a model reads it: zero-width characters removed, Unicode tag characters shown as ASCII."""
    return text.translate(_REVEAL) if _INVISIBLE.search(text) else text


def fenced_line_numbers(text: str) -> set[int]:
    """1-based numbers of the lines inside fenced code blocks of a Markdown text (fence lines included)."""
    inside: set[int] = set()
    fence: str | None = None
    for n, line in enumerate(text.split("\n"), 1):
        m = _FENCE.match(line)
        if fence is not None:
            inside.add(n)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
        elif m:
            fence = m.group(1)
            inside.add(n)
    return inside


def _scan_lines(text: str) -> tuple[list[str], list[int]]:
    text = reveal_invisible(text)
    lines: list[str] = []
    orig: list[int] = []
    for n, line in enumerate(text.split("\n"), 1):
        if len(line) <= MAX_SCAN_LINE:
            lines.append(line)
            orig.append(n)
            continue
        for i in range(0, len(line), MAX_SCAN_LINE):
            lines.append(line[i:i + MAX_SCAN_LINE])
            orig.append(n)
    return lines, orig


def _mark_structure(ctx: FileContext, book: CompiledBook, markdown: bool) -> None:
    n = len(ctx.lines)
    ctx.in_code, ctx.block_start, ctx.under_detection_heading = [False] * n, [-1] * n, [False] * n
    ctx.section, ctx.under_instruction_heading = [""] * n, [False] * n
    if not markdown:
        return
    fence: str | None = None
    opened = -1
    stack: list[tuple[int, bool, str]] = []  # (heading level, is detection heading, heading text)
    section, instructing = "", False
    for i, line in enumerate(ctx.lines):
        m = _FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            else:
                ctx.in_code[i], ctx.block_start[i] = True, opened
        elif m:
            fence, opened = m.group(1), i
        else:
            h = _HEADING.match(line)
            if h:
                level = len(h.group(1))
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, bool(book.headings.search(h.group(2))), h.group(2)))
                section = " / ".join(text for _, _, text in stack)
                instructing = any(book.instruction_headings.search(text) for _, _, text in stack)
        ctx.under_detection_heading[i] = any(flag for _, flag, _ in stack)
        ctx.section[i], ctx.under_instruction_heading[i] = section, instructing


def is_quoted(ctx: FileContext, i: int, start: int, end: int) -> bool:
    """The hit is presented as text (code, quotes, blockquote, a list/table under a detection heading or in a
    defensive skill, test data)."""
    line = ctx.lines[i]
    if ctx.test_data or ctx.in_code[i] or line.lstrip().startswith(">"):
        return True
    # A list or table is a catalogue of patterns under a detection heading, or anywhere in a defensive skill.
    if (ctx.under_detection_heading[i] or ctx.defensive) and _LIST_OR_TABLE.match(line):
        return True
    # A hit wrapped onto the next prose line (matched with it) closes its quotation there.
    rest = line[end:] if end < len(line) or i + 1 >= len(ctx.lines) else ctx.lines[i + 1]
    return any(_inside_pair(line, start, rest, o, c) for o, c in _QUOTE_PAIRS)


def _inside_pair(line: str, start: int, rest: str, opener: str, closer: str) -> bool:
    """The hit starting at `start` sits between an opener before it and a closer in `rest` (the text after it)."""
    if opener == closer:
        before = [k for k, ch in enumerate(line[:start]) if ch == opener and _is_quote_char(line, k)]
        return len(before) % 2 == 1 and closer in rest
    left = line.rfind(opener, 0, start)
    return left >= 0 and line.find(closer, left, start) < 0 and closer in rest


def _is_quote_char(line: str, k: int) -> bool:
    """An apostrophe inside a word (don't) is not a quote mark."""
    if line[k] != "'":
        return True
    prev_alpha = k > 0 and line[k - 1].isalnum()
    next_alpha = k + 1 < len(line) and line[k + 1].isalnum()
    return not (prev_alpha and next_alpha)


def in_detection_context(ctx: FileContext, i: int, start: int, end: int, book: CompiledBook, window: int,
                         identity_context: bool = False) -> bool:
    """A detection heading is in force, or a detection cue is on the line or shortly before the hit / its block,
    and no reassurance ("safe to run", "not malicious") sits in the same window: a lure cannot borrow the cue words.

    With `identity_context`, the skill's own defensive identity (a scanner, a guard, a security guide) is a cue for
    the whole skill, except in sections that instruct (setup, prerequisites): there a quoted command is a step.
    """
    if ctx.test_data:
        return True
    line = ctx.lines[i]
    nearby = [line[:start] + " " + line[end:]]
    anchors = {i}
    if ctx.in_code[i] and ctx.block_start[i] >= 0:
        anchors.add(ctx.block_start[i])
    if not ctx.in_code[i] and _TABLE_ROW.match(line):  # a table row: its header row and caption frame it
        h = i
        while h > 0 and _TABLE_ROW.match(ctx.lines[h - 1]):
            h -= 1
        if h < i:
            nearby.append(ctx.lines[h])
            anchors.add(h)
    for a in anchors:
        nearby += ctx.lines[max(0, a - window):a]
    if any(book.reassurance.search(x) for x in nearby):
        return False
    if identity_context and ctx.defensive and not ctx.under_instruction_heading[i]:
        return True
    return ctx.under_detection_heading[i] or any(book.cues.search(x) for x in nearby)


def suppressed_as_quotation(ctx: FileContext, i: int, start: int, end: int, book: CompiledBook,
                            window: int, identity_context: bool = False) -> bool:
    """Quoted text in a detection context, or prose under a detection heading whose paragraph names a cue."""
    if is_quoted(ctx, i, start, end) and in_detection_context(ctx, i, start, end, book, window, identity_context):
        return True
    if not ctx.under_detection_heading[i]:
        return False
    line = ctx.lines[i]
    paragraph = [line[:start] + " " + line[end:], *_paragraph_neighbours(ctx, i, window)]
    if any(book.reassurance.search(p) for p in paragraph):
        return False
    return any(book.cues.search(p) for p in paragraph)


def _paragraph_neighbours(ctx: FileContext, i: int, window: int) -> list[str]:
    """Non-blank lines next to line i, up to `window` each way, without crossing a blank line."""
    out: list[str] = []
    for step in (-1, 1):
        j = i + step
        while 0 <= j < len(ctx.lines) and abs(j - i) <= window and ctx.lines[j].strip():
            out.append(ctx.lines[j])
            j += step
    return out


SIDE_CHANNEL_LOOKBACK = 3  # lines above a hit searched for an alert comment, within its block


def in_side_channel(lines: list[str], i: int, book: CompiledBook) -> bool:
    """Line i, or one of the lines just above it in the same block (a `# Telegram alerts` comment over an export),
    names an alert or notification channel."""
    for k in range(i, max(-1, i - SIDE_CHANNEL_LOOKBACK - 1), -1):
        if book.side_channel.search(lines[k]):
            return True
        if k < i and not lines[k].strip():
            return False
    return False
