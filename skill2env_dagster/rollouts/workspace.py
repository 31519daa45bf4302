"""What the episode left in the container, as the judge reads it: every path added, changed or deleted, then every
file the agent wrote or changed in its final state, whole, with the diff against the task's original for a changed
one, within a character budget.

Budget: the listing first, then the files (the working directory's first, smaller ones first so that more of them
fit whole); a file that does not fit is cut on a character boundary (never inside a UTF-8 sequence) and the cut is
marked with what was left out; files that got no room are named. Binary files are shown by size and digest.
"""

from __future__ import annotations

import codecs
import difflib
import hashlib
from dataclasses import dataclass

LISTING_CHARS = 4000
FILES_HEADING = "\nFiles written or changed, in their final state:\n"
DIFF_CONTEXT = 2


@dataclass(frozen=True)
class FileState:
    path: str
    kind: str  # added | changed
    size: int  # bytes of the final file
    final: bytes  # at most the fetch cap
    original: bytes | None = None  # a changed file's original (None: added, or not readable)


def as_text(data: bytes, complete: bool) -> str | None:
    """The bytes as text, or None for binary; a cut tail (`complete` False) loses only a split character."""
    if b"\0" in data[:8192]:
        return None
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    text = decoder.decode(data, final=complete)
    return None if text.count("\ufffd") > max(8, len(text) // 20) else text


def cut(text: str, room: int, what: str) -> str:
    """`text` within `room` characters; a cut is marked with how much of `what` was left out."""
    if len(text) <= room:
        return text
    marker = f"\n[... {len(text)} more characters of {what} not shown: the budget is spent ...]\n"
    keep = max(0, room - len(marker))
    return f"{text[:keep]}\n[... {len(text) - keep} more characters of {what} not shown: the budget is spent ...]\n"


def _diff(original: str, final: str, path: str) -> str:
    lines = difflib.unified_diff(original.splitlines(keepends=True), final.splitlines(keepends=True),
                                 f"{path} (original)", f"{path} (final)", n=DIFF_CONTEXT)
    return "".join(x if x.endswith("\n") else x + "\n" for x in lines) or "(no textual change)\n"


def _section(f: FileState, room: int) -> str:
    head = f"=== {f.path} ({f.kind}, {f.size} bytes)"
    final = as_text(f.final, complete=len(f.final) >= f.size)
    if final is None:
        return f"{head}: binary, sha256 {hashlib.sha256(f.final).hexdigest()[:16]}\n"
    missing = f.size - len(f.final)
    if missing > 0:
        final += f"\n[... {missing} more bytes of this file were not read ...]\n"
    parts = [head]
    if f.kind == "changed" and f.original is not None:
        original = as_text(f.original, complete=True)
        if original is not None:
            parts.append("--- diff against the task's original:\n" + _diff(original, final, f.path).rstrip("\n"))
    parts.append("--- final content:\n" + final.rstrip("\n"))
    return cut("\n".join(parts) + "\n", room, f"{f.path}")


def render(listing: list[str], files: list[FileState], budget: int) -> str:
    """The judge's view of the final workspace (see module docstring)."""
    head = f"{len(listing)} path(s) changed\n" + ("\n".join(listing) or "(no changes outside /tmp)") + "\n"
    out = [cut(head, min(LISTING_CHARS, budget), "the listing")]
    if files:
        out.append(FILES_HEADING)
    room = budget - sum(map(len, out))
    left: list[str] = []
    for f in files:
        if room < 200:
            left.append(f.path)
            continue
        section = _section(f, room)
        out.append(section)
        room -= len(section)
    if left:
        out.append(f"[... not shown, the budget is spent: {', '.join(left)} ...]\n")
    return "".join(out)
