"""The maintained vocabulary (rule book `vocabulary`): families of SaaS products, messaging apps, login-requiring
CLIs and devices, and what naming one shows.

A name alone proves little ("formats text for Slack"), so a family contributes partial weight where it is named:
in the skill's own name/description (what the skill is about), on a body line together with a family-specific
context (a device with a LAN address, a product with its API), in the binaries the frontmatter requires, or as the
command a shell line runs. The scorer adds these to the other evidence; each finding keeps its line.
"""

from __future__ import annotations

import re
from bisect import bisect_right

from skill2env_dagster.models.skill import Finding
from skill2env_dagster.skillhub.screen.context import in_side_channel
from skill2env_dagster.skillhub.screen.requirements import Requirement, frontmatter_line
from skill2env_dagster.skillhub.screen.rules import CompiledBook, CompiledFamily
from skill2env_dagster.skillhub.screen.scoring import Signal, file_weight


def vocabulary_signals(about: str, requirements: list[Requirement], texts: dict[str, str], skill_file: str,
                       book: CompiledBook, *, defensive: bool = False, side_channels: bool = False) -> list[Signal]:
    """Signals of every family named by the skill's identity, its required binaries, its body or its commands.

    A skill with a defensive identity names products as what it protects or detects, so its body mentions are not
    evidence; its identity, required binaries and commands still are. A usage example sentence names products as
    illustrations; with `side_channels`, a product named as an alert channel is an option, not the workflow."""
    skill_md = texts.get(skill_file, "")
    bins = [r for r in requirements if r.kind == "bins"]
    named = [term for _, term in book.vocabulary_terms.find(about)]
    body_terms = {} if defensive else _term_lines(texts, skill_file, book, side_channels=side_channels)
    commands = _command_lines(skill_md, book)
    out: list[Signal] = []
    for fam in book.vocabulary:
        if fam.unless_skill is not None and fam.unless_skill.search(about):
            continue
        out += _identity(fam, about, named, skill_md, skill_file)
        out += _required_bins(fam, bins, skill_md, skill_file)
        out += _body(fam, body_terms, texts, skill_file, book, about)
        out += _commands(fam, commands, skill_md, skill_file)
    return out


def _signals(fam: CompiledFamily, where: str, weight: float, path: str, line: int, text: str,
             fw: dict[str, float] | None = None) -> list[Signal]:
    out = []
    for n, code in enumerate(fam.family.codes):
        finding = Finding(code=code, rule=f"vocab.{fam.family.id}.{where}", file=path, line=line, text=text[:200])
        if where == "body":
            rule_id = f"vocab.body@{code.value}"  # body mentions count once per code, whichever families they name
        else:
            rule_id = finding.rule if n == 0 else f"{finding.rule}@{code.value}"  # one score entry per code
        out.append(Signal(rule_id, weight, fw[code.value] if fw else 1.0, finding))
    return out


def _identity(fam: CompiledFamily, about: str, named: list[str], skill_md: str, skill_file: str) -> list[Signal]:
    if not fam.family.identity_weight:
        return []
    term = next((t for t in named if t in fam.terms), None)
    if term is None:
        return []
    start = about.lower().find(term)
    shown = about[start:start + len(term)] if start >= 0 else term
    return _signals(fam, "identity", fam.family.identity_weight, skill_file, frontmatter_line(skill_md, shown),
                    f"the skill is about {shown}: {about.strip()}")


def _required_bins(fam: CompiledFamily, bins: list[Requirement], skill_md: str, skill_file: str) -> list[Signal]:
    if not fam.family.bins_weight or not fam.bins:
        return []
    hit = next((r for r in bins if r.item.lower() in fam.bins), None)
    if hit is None:
        return []
    return _signals(fam, "requires_bin", fam.family.bins_weight, skill_file, frontmatter_line(skill_md, hit.item),
                    f"{hit.path}: {hit.item}")


def _term_lines(texts: dict[str, str], skill_file: str, book: CompiledBook, *,
                side_channels: bool = False) -> dict[str, list[tuple[int, str, str]]]:
    """path -> [(1-based line, term, line text)] for every vocabulary term in non-skipped text files (SKILL.md's
    frontmatter excluded), except on usage-example lines and (with `side_channels`) in an alert context."""
    out: dict[str, list[tuple[int, str, str]]] = {}
    for path, text in texts.items():
        if book.skip_files.search(path) or not text:
            continue
        hits = book.vocabulary_terms.find(text)
        if not hits:
            continue
        starts = _line_starts(text)
        first_body_line = _frontmatter_end(text) + 1 if path == skill_file else 1  # identity is counted apart
        found = []
        lines: list[str] | None = None
        for offset, term in hits:
            n = bisect_right(starts, offset)
            line = _line(text, starts, n)
            if n < first_body_line or book.example_line.search(line) or _named_as_example(text, starts, n, offset,
                                                                                           book):
                continue
            if side_channels:
                lines = lines if lines is not None else text.split("\n")
                heading = next((ln for ln in reversed(lines[max(0, n - _HEADING_LOOKBACK):n]) if _HEADING.match(ln)),
                               "")
                if in_side_channel(lines, n - 1, book) or book.side_channel.search(heading):
                    continue
            found.append((n, term, line))
        out[path] = found
    return out


EXAMPLE_REACH = 240  # characters before a term searched for its example marker (a few words; a line may be huge)


def _named_as_example(text: str, starts: list[int], n: int, offset: int, book: CompiledBook) -> bool:
    """The term at `offset` (on 1-based line n) follows an inline example marker ("e.g.", "such as", "如") within a
    few words. Only the last EXAMPLE_REACH characters are searched: the cost stays flat on minified or unwrapped
    lines, which are hostile input like the rest of a skill."""
    return bool(book.example_mention.search(text[max(starts[n - 1], offset - EXAMPLE_REACH):offset]))


def _body(fam: CompiledFamily, body_terms: dict[str, list[tuple[int, str, str]]], texts: dict[str, str],
          skill_file: str, book: CompiledBook, about: str) -> list[Signal]:
    """The strongest body line naming the family with its context (once per family: a cap, not a count)."""
    if not fam.family.body_weight or not fam.terms:
        return []
    best: tuple[float, str, int, str] | None = None
    for path, found in body_terms.items():
        text, starts = texts[path], None
        for n, term, line in found:
            if term not in fam.terms or (path == skill_file and line.strip() and line.strip() in about):
                continue  # a line that is the skill's identity (no frontmatter) is not counted twice
            if fam.body_near is not None:
                starts = starts or _line_starts(text)
                window = "\n".join(_line(text, starts, k) for k in range(max(1, n - fam.family.body_window),
                                                                         n + fam.family.body_window + 1))
                if not fam.body_near.search(window):
                    continue
            fw = max(file_weight(path, skill_file, c, book) for c in fam.family.codes)
            if best is None or fw > best[0]:
                best = (fw, path, n, line.strip())
            break
        if best is not None and best[0] >= 1.0:
            break
    if best is None:
        return []
    fws = {c.value: file_weight(best[1], skill_file, c, book) for c in fam.family.codes}
    return _signals(fam, "body", fam.family.body_weight, best[1], best[2], best[3], fws)


_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_HEADING_LOOKBACK = 40  # lines searched upwards for the heading a body mention sits under

_SHELL_PREFIX = re.compile(r"^(?:\$\s*|sudo\s+(?:-\S+\s+)*|npx\s+(?:-y\s+)?|bunx\s+|pnpm\s+dlx\s+)+")
_INLINE_CODE = re.compile(r"`([^`\n]+)`")
_PREFIX_WORDS = frozenset({"$", "sudo", "npx", "bunx", "pnpm"})


def _command_lines(skill_md: str, book: CompiledBook) -> dict[str, list[int]]:
    """binary -> 1-based SKILL.md lines whose shell command (a line, or an inline code span) starts with it."""
    out: dict[str, list[int]] = {}
    if not book.all_bins:
        return out
    for n, line in enumerate(skill_md.split("\n"), 1):
        candidates = [line.strip()]
        if "`" in line:
            candidates += [m.group(1).strip() for m in _INLINE_CODE.finditer(line)]
        for cmd in candidates:
            first = cmd.split(None, 1)
            if first and first[0] in _PREFIX_WORDS:  # the regex only for the few lines that need it
                first = _SHELL_PREFIX.sub("", cmd).split(None, 1)
            if first and first[0].lower() in book.all_bins:
                lines = out.setdefault(first[0].lower(), [])
                if n not in lines:
                    lines.append(n)
    return out


def _commands(fam: CompiledFamily, commands: dict[str, list[int]], skill_md: str, skill_file: str) -> list[Signal]:
    """Shell lines or inline commands that run one of the family's binaries (in SKILL.md, where the workflow is)."""
    if not fam.family.command_weight or not fam.bins:
        return []
    lines = sorted({n for b in fam.bins for n in commands.get(b, [])})
    if not lines:
        return []
    # the workflow runs the tool when it does so more than once; a single mention in an aside weighs half
    weight = fam.family.command_weight if len(lines) >= 2 else fam.family.command_weight / 2
    n = lines[0]
    return _signals(fam, "command", weight, skill_file, n, _line(skill_md, _line_starts(skill_md), n).strip())


def _frontmatter_end(text: str) -> int:
    """1-based line of the closing `---` of a leading frontmatter block (0 when there is none)."""
    lines = text.split("\n", 200)
    if not lines or lines[0].strip() != "---":
        return 0
    return next((n for n, line in enumerate(lines[1:], 2) if line.strip() == "---"), 0)


def _line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer("\n", text)]


def _line(text: str, starts: list[int], n: int) -> str:
    if n < 1 or n > len(starts):
        return ""
    end = starts[n] - 1 if n < len(starts) else len(text)
    return text[starts[n - 1]:end]
