"""The download-and-run lure, judged by its whole shape rather than by one keyword.

A lure asks for an external program to be fetched and run (a "required tool" from a release page, a script from
a paste page), hides what it is (a password on the archive, a paste site, an encoded command, a raw IP address) and
says the skill will not work without it. Ordinary install instructions share the first part and never the second;
a security guide that describes the shape quotes it. So the rule book lists the elements (`lure_shape.elements`),
the shape needs all of `need_all` and one of `need_any` within `window` lines of SKILL.md (the instructions the
agent follows), and an element line quoted in a detection context does not count. Every element keeps its
evidence line.
"""

from __future__ import annotations

from skill2env_dagster.models.skill import Finding
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.skillhub.screen.context import (
    FileContext,
    suppressed_as_quotation,
)
from skill2env_dagster.skillhub.screen.rules import CompiledBook
from skill2env_dagster.skillhub.screen.scoring import Signal, file_weight


def lure_signals(contexts: list[FileContext], skill_file: str, book: CompiledBook) -> list[Signal]:
    """Signals (one per element line) of the first window in each file that has the whole shape."""
    spec = book.book.lure_shape
    out: list[Signal] = []
    for ctx in contexts:
        if ctx.path != skill_file or ctx.test_data:
            continue  # the agent follows SKILL.md; a shape elsewhere could not decide the verdict (other_files_cap)
        low = ctx.scan_text.lower()
        if not all(_may_occur(name, low, spec.triggers) and book.lure_elements[name].search(ctx.scan_text)
                   for name in spec.need_all):
            continue  # cheap checks first: almost no file has a concealment at all
        lines = _element_lines(ctx, book)
        window = _first_window(lines, spec.need_all, spec.need_any, spec.window)
        if window is None:
            continue
        fw = file_weight(ctx.path, skill_file, ReasonCode.MALICIOUS, book)
        for name, i in window:
            text = f"{name}: {ctx.lines[i].strip()}"
            finding = Finding(code=ReasonCode.MALICIOUS, rule=spec.rule_id, file=ctx.path, line=ctx.orig_line[i],
                              text=text[:200])
            out.append(Signal(spec.rule_id, 1.0, fw, finding))
    return out


def _may_occur(name: str, low: str, triggers: dict[str, list[str]]) -> bool:
    words = triggers.get(name)
    return words is None or any(w in low for w in words)


def _element_lines(ctx: FileContext, book: CompiledBook) -> dict[str, list[int]]:
    """element -> indices of lines where it occurs as an instruction (not quoted in a detection context)."""
    found: dict[str, list[int]] = {}
    window = book.book.context.window
    for name, rx in sorted(book.lure_elements.items(), key=lambda kv: kv[0] != "conceal"):
        for m in rx.finditer(ctx.scan_text):
            i = ctx.line_index(m.start())
            start = m.start() - ctx.starts[i]
            end = min(start + len(m.group(0)), len(ctx.lines[i]))
            if suppressed_as_quotation(ctx, i, start, end, book, window):
                continue
            hits = found.setdefault(name, [])
            if not hits or hits[-1] != i:
                hits.append(i)
    return found


def _first_window(lines: dict[str, list[int]], need_all: list[str], need_any: list[str],
                  width: int) -> list[tuple[str, int]] | None:
    """The earliest stretch of `width` lines holding every `need_all` element and one `need_any` element."""
    if any(not lines.get(name) for name in need_all) or not any(lines.get(name) for name in need_any):
        return None
    anchors = sorted({i for name in (*need_all, *need_any) for i in lines.get(name, [])})
    for a in anchors:
        lo, hi = a, a + width
        picked = [(name, _first_in(lines[name], lo, hi)) for name in need_all]
        extra = [(n, i) for n in need_any if (i := _first_in(lines.get(n, []), lo, hi)) is not None]
        found = [(n, i) for n, i in picked if i is not None]
        if len(found) == len(picked) and extra:
            return sorted([*found, extra[0]], key=lambda x: x[1])
    return None


def _first_in(indices: list[int], lo: int, hi: int) -> int | None:
    return next((i for i in indices if lo <= i <= hi), None)
