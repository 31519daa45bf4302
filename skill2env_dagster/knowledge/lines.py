"""A file's lines as an editor numbers them, and how a model is shown them: verbatim, each with its number.

Lines are split on "\\n" only (a trailing "\\r" dropped), so line N here is line N in `sed -n Np` and in an editor
(str.splitlines would also break at form feeds and Unicode separators). A line is shown as the file has it, or
cut at the end with a marker saying how much is left; nothing is re-composed from extracted parts.
"""

from __future__ import annotations

LINE_CHARS = 1000  # a longer line (minified JSON, a data blob) is shown up to here, with a marker


def split_lines(text: str) -> list[str]:
    """The file's lines as editors number them: split on \\n only, a trailing \\r dropped (CRLF files)."""
    if not text:
        return []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line starts no line of its own
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


def show_line(line: str) -> str:
    """The line as shown: verbatim, or its first LINE_CHARS characters and a marker of what is left."""
    if len(line) <= LINE_CHARS:
        return line
    return f"{line[:LINE_CHARS]} [… {len(line) - LINE_CHARS} more characters on this line]"


def numbered(lines: list[str], first: int = 1) -> str:
    """`  N| line` for each line; the gutter is as wide as the largest number."""
    width = len(str(first + len(lines) - 1)) if lines else 1
    return "\n".join(f"{n:>{width}}| {show_line(ln)}" for n, ln in enumerate(lines, first))


def numbered_within(lines: list[str], budget: int) -> str:
    """The numbered lines that fit in `budget` characters, and a marker of how many were left out."""
    out: list[str] = []
    used = 0
    width = len(str(len(lines))) if lines else 1
    for n, ln in enumerate(lines, 1):
        row = f"{n:>{width}}| {show_line(ln)}"
        if used + len(row) + 1 > budget and out:
            out.append(f"[… lines {n}-{len(lines)} not shown]")
            break
        out.append(row)
        used += len(row) + 1
    return "\n".join(out)
