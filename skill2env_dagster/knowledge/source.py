"""A skill's Markdown documents as a flat list of blocks, each with its line range and the headings above it.

Files are read read-only and size-capped, never through a symlink, never executed. Front matter is blanked line
for line (not removed) so every line number stays the file's own.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from markdown_it import MarkdownIt
from markdown_it.token import Token

from skill2env_dagster.models.knowledge import SourceRef
from skill2env_dagster.models.skill import SkillRecord

MAX_READ = 256 * 1024
MAX_DOCS = 24  # Markdown/text documents read per skill (SKILL.md first, then by path)
DOC_EXTS = {".md", ".markdown", ".txt", ".rst"}
SPEC_EXTS = {".yaml", ".yml", ".json"}  # API description documents (OpenAPI / Swagger), read only on request
_SPEC_HEAD = re.compile(r'^\s*"?(?:openapi|swagger)"?\s*:', re.M)
_FRONT = re.compile(r"\A(\ufeff?---[ \t]*\r?\n)(.*?\r?\n)(---[ \t]*)(\r?\n|\Z)", re.S)
_MD = MarkdownIt("commonmark").enable("table")
_INLINE_MARK = re.compile(r"\*\*|__|(?<!\w)[*_](?=\S)|(?<=\S)[*_](?!\w)|<[^>\n]{1,60}>")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")


@dataclass
class Doc:
    """One readable document of the skill: its path relative to the skill and its lines (no newline chars)."""

    path: str
    lines: list[str]

    def ref(self, line: int, hint: str = "") -> SourceRef:
        """A reference to 1-based `line`; the quote is that line, trimmed of indentation and list markers."""
        line = max(1, min(line, len(self.lines)))
        raw = self.lines[line - 1] if self.lines else ""
        quote = _LIST_MARK.sub("", raw).strip() or raw.strip()
        if hint and hint in raw:
            quote = hint
        return SourceRef(file=self.path, line=line, quote=quote[:200].strip() or raw[:200])

    def unfenced(self) -> Iterator[tuple[int, str]]:
        """(1-based number, line) of every line outside fenced code blocks, the fence markers left out: a rule
        stated in prose, not an example inside a code block."""
        fenced = False
        for n, line in enumerate(self.lines, 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
            elif not fenced:
                yield n, line


@dataclass
class Block:
    """A heading, paragraph, list item, table or fence, with its 1-based line range [line, end]."""

    doc: Doc
    kind: str  # heading | paragraph | item | table | fence
    text: str  # raw inline Markdown (fence: the code)
    line: int
    end: int
    section: str  # nearest heading title above ('' at top level)
    level: int = 0  # heading level
    ordered: bool = False  # list items: inside an ordered list
    number: int = 0  # ordered list items: the item's number
    list_id: int = -1  # list items: which list they belong to
    item: int = -1  # list items: which item (a second paragraph of the same item extends its block)
    depth: int = 0  # list nesting depth (0 = top-level list)
    lang: str = ""  # fences
    rows: list[list[str]] = field(default_factory=list)  # tables: header first
    row_lines: list[int] = field(default_factory=list)

    def ref(self, hint: str = "") -> SourceRef:
        return self.doc.ref(self.line, hint)

    def line_of(self, words: str) -> int:
        """The first line of the block whose plain text contains the start of `words` (a sentence)."""
        head = " ".join(plain(words).split()[:3]).lower()
        for n in range(self.line, self.end + 1):
            if head and head in plain(self.doc.lines[n - 1]).lower():
                return n
        return self.line


def plain(text: str) -> str:
    """Inline Markdown as plain text: links become their text, emphasis and tags go, code spans keep content."""
    text = _LINK.sub(lambda m: m.group(1), text)
    text = text.replace("`", "")
    text = _INLINE_MARK.sub("", text)
    return " ".join(text.split())


def _blank_front_matter(text: str) -> str:
    m = _FRONT.match(text)
    if not m:
        return text
    return "\n" * m.group(0).count("\n") + text[m.end():]


def _safe_read(root: Path, rel: str) -> str | None:
    try:
        base = root.resolve()
        path = (root / rel)
        if path.is_symlink() or not path.is_file():
            return None
        if base not in path.resolve().parents:
            return None
        with path.open("rb") as fh:
            return fh.read(MAX_READ).decode("utf-8", "replace")
    except OSError:
        return None


def is_spec(path: str, text: str) -> bool:
    """An OpenAPI/Swagger document: a YAML/JSON file whose top level names its version (read by its head)."""
    return PurePosixPath(path).suffix.lower() in SPEC_EXTS and bool(_SPEC_HEAD.search(text[:4096]))


def read_skill_file(skill: SkillRecord, rel: str) -> str | None:
    """One file of the skill as text (read-only, capped, never through a symlink); None when it cannot be read."""
    return _safe_read(Path(skill.abs_path), rel) if skill.abs_path else None


def read_docs(skill: SkillRecord, specs: bool = False) -> list[Doc]:
    """SKILL.md first (from disk, else the record's body), then the skill's other text documents by path; with
    `specs`, then its OpenAPI/Swagger documents (a service contract, not prose: knowledge extraction skips them)."""
    root = Path(skill.abs_path)
    docs: list[Doc] = []
    main = _safe_read(root, skill.skill_file) if skill.abs_path else None
    if main is None:
        main = skill.body or ""
    docs.append(Doc(skill.skill_file, _blank_front_matter(main).splitlines()))
    others = sorted(f.rel_path for f in skill.files
                    if f.kind == "text" and f.refused is None and f.rel_path != skill.skill_file
                    and PurePosixPath(f.rel_path).suffix.lower() in DOC_EXTS
                    and not PurePosixPath(f.rel_path).name.upper().startswith(("LICENSE", "LICENCE", "COPYING")))
    for rel in others[: MAX_DOCS - 1]:
        text = _safe_read(root, rel)
        if text is not None:
            docs.append(Doc(rel, _blank_front_matter(text).splitlines()))
    candidates = sorted(f.rel_path for f in skill.files if specs and f.kind == "text" and f.refused is None
                        and PurePosixPath(f.rel_path).suffix.lower() in SPEC_EXTS)
    for rel in candidates[:MAX_DOCS]:
        text = _safe_read(root, rel) if skill.abs_path else None
        if text is not None and is_spec(rel, text):
            docs.append(Doc(rel, text.splitlines()))
    return docs


def _inline(tokens: list[Token], i: int) -> str:
    return tokens[i + 1].content if i + 1 < len(tokens) and tokens[i + 1].type == "inline" else ""


def blocks(doc: Doc) -> list[Block]:
    """The document's blocks in order; list items keep their list, number and depth."""
    tokens = _MD.parse("\n".join(doc.lines))
    out: list[Block] = []
    section = ""
    lists: list[tuple[int, bool]] = []  # stack of (list id, ordered)
    next_list = 0
    item_number: list[int] = []
    item_ids: list[int] = []
    next_item = 0
    row: list[str] = []
    table: Block | None = None
    for i, t in enumerate(tokens):
        start, end = (t.map[0] + 1, t.map[1]) if t.map else (0, 0)
        if t.type == "heading_open":
            title = plain(_inline(tokens, i))
            level = int(t.tag[1])
            out.append(Block(doc, "heading", _inline(tokens, i), start, end, section, level=level))
            section = title
        elif t.type in ("bullet_list_open", "ordered_list_open"):
            lists.append((next_list, t.type == "ordered_list_open"))
            next_list += 1
        elif t.type in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
        elif t.type == "list_item_open":
            item_number.append(int(t.info) if t.info.isdigit() else 0)
            item_ids.append(next_item)
            next_item += 1
        elif t.type == "list_item_close":
            item_number.pop()
            item_ids.pop()
        elif t.type == "paragraph_open":
            text = _inline(tokens, i)
            if lists and item_number:
                lid, ordered = lists[-1]
                prev = out[-1] if out else None
                if prev and prev.kind == "item" and prev.item == item_ids[-1]:
                    prev.text += "\n" + text  # a second paragraph of the same item
                    prev.end = end
                    continue
                out.append(Block(doc, "item", text, start, end, section, ordered=ordered, number=item_number[-1],
                                 list_id=lid, depth=len(lists) - 1, item=item_ids[-1]))
            else:
                out.append(Block(doc, "paragraph", text, start, end, section))
        elif t.type == "fence" or t.type == "code_block":
            lang = (t.info.split() or [""])[0].lower() if t.type == "fence" else ""
            out.append(Block(doc, "fence", t.content, start, end, section, lang=lang[:20]))
        elif t.type == "table_open":
            table = Block(doc, "table", "", start, end, section)
        elif t.type == "tr_open":
            row = []
            if table is not None:
                table.row_lines.append(start)
        elif t.type in ("th_open", "td_open"):
            row.append(plain(_inline(tokens, i)))
        elif t.type == "tr_close" and table is not None:
            table.rows.append(row)
        elif t.type == "table_close" and table is not None:
            out.append(table)
            table = None
    return out


def sentences(text: str) -> list[str]:
    """Sentences of an inline text: split at . ! ? before a capital, quote, code or bracket, and at a line break
    before one (lines of a paragraph without end punctuation are separate statements)."""
    out: list[str] = []
    for line_group in re.split(r"\n(?=\s*(?:[A-Z`*\"'(\[]|[^\w\s]{1,3}\s))", text):
        flat = " ".join(line_group.split())
        out += [p.strip() for p in re.split(r"(?<=[.!?])\s+(?=[A-Z`*\"'(\[])", flat) if len(p.strip()) >= 3]
    return out


def code_spans(text: str) -> list[str]:
    return [m.strip() for m in re.findall(r"`([^`\n]{1,80})`", text) if m.strip()]
