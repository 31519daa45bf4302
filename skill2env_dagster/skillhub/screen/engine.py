"""Screening engine: which skills cannot become an offline RL task, and the evidence for each verdict.

`screen_skill` applies the rule book in data/screening_rules.yaml (read that file for the rules and the policy)
to every text file of one skill and returns Findings. It never raises on odd input: a skill with unreadable
frontmatter is still screened (a malformed skill can still be malicious), and reasons accumulate.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from skill2env_dagster.models.skill import Finding
from skill2env_dagster.reasons import BLOCKING_CODES, INFO_CODES, ReasonCode
from skill2env_dagster.skillhub.parse import fallback_from_body
from skill2env_dagster.skillhub.screen.context import (
    FileContext,
    build_context,
    fenced_line_numbers,
    in_side_channel,
    line_of,
    reveal_invisible,
    suppressed_as_quotation,
)
from skill2env_dagster.skillhub.screen.licence import is_allowed, resolve_licence
from skill2env_dagster.skillhub.screen.lure import lure_signals
from skill2env_dagster.skillhub.screen.requirements import (
    requirement_signals,
    stated_requirements,
)
from skill2env_dagster.skillhub.screen.rules import (
    CompiledBook,
    CompiledRule,
    load_rule_book,
)
from skill2env_dagster.skillhub.screen.scoring import Signal, file_weight, score
from skill2env_dagster.skillhub.screen.vocabulary import vocabulary_signals

__all__ = ["BLOCKING_CODES", "INFO_CODES", "ScreenSettings", "blocking_codes", "screen_skill"]

DEFAULT_LICENCE_ALLOW = ("MIT", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "ISC", "CC-BY-4.0", "CC0-1.0",
                         "Unlicense", "MPL-2.0")


_SKILL_FILE = re.compile(r"(?i)^skill\.md$")
_URL = re.compile(r"https?://([^\s'\"`)<>|]+)", re.IGNORECASE)
_WORD = re.compile(r"\w+")
_SECOND_LEVEL = frozenset({"co", "com", "org", "net", "ac", "gov", "edu"})
_IDENTITY_STRIP = re.compile(r"[^a-z0-9]+")
_GITHUB_RELEASE = re.compile(r"^/[\w.-]+/([\w.-]+)/releases/(download|latest/download)/")
_HEADING_LINE = re.compile(r"(?m)^\s{0,3}#{1,6}\s.*$")
_HTML_COMMENT = re.compile(r"<!--(.*?)(-->|\Z)", re.DOTALL)
# codes whose evidence an optional alert channel (a bot token for notifications) must not decide
_SIDE_CHANNEL_CODES = frozenset({ReasonCode.NEEDS_EXTERNAL_ACCOUNT, ReasonCode.NEEDS_LIVE_SERVICE})


class ScreenSettings(BaseModel):
    """What the screen accepts; part of the crawl config."""

    model_config = ConfigDict(extra="forbid")

    licence_allow: list[str] = Field(default_factory=lambda: list(DEFAULT_LICENCE_ALLOW),
                                     description="SPDX ids of licences whose skills may be used.")
    unknown_licence_policy: Literal["record", "block", "ignore"] = Field(
        default="record", description="record: licence_unknown finding, not blocking; block: licence_not_allowed; "
        "ignore: no finding.")
    allow_standins: bool = Field(default=True, description="Waive needs_live_service for a documented local API "
                                 "without credentials (rule book `standin`), recording standin_possible instead.")
    rules_path: str | None = Field(default=None, description="Alternative rule book; default: the packaged one.")
    learned_opinion: bool = Field(default=True, description="Let the learned classifier (data/screening_learned."
                                  "json) add needs_live_service to a skill the rules found no account or live "
                                  "service in, at p >= its threshold, on a SKILL.md line naming a remote host, URL, "
                                  "account or auth term; it never clears a rule's verdict and never touches a "
                                  "malicious skill (screen/learned.py). On by default: on the screening set's test "
                                  "half it caught 15 more account/live skills for 1 more eligible skill out.")
    second_opinion: bool = Field(default=True, description="Ask the configured model endpoint for a second "
                                 "opinion on each skill in skillhub_snapshot (one cached call per bundle; its usage "
                                 "is counted in the run's llm_usage). On by default, whenever a model is configured "
                                 "(without one nothing is asked); false keeps the screen's own verdict.")
    second_opinion_clears: bool = Field(default=True, description="Let the second opinion clear a code the rules "
                                        "flagged (account, live service, hardware, OS/GUI, persona, no actionable "
                                        "content; never malicious or harmful) when it quotes the line showing the "
                                        "main workflow does without it; only findings on lines the model was shown "
                                        "are cleared. On by default: on issue 28's sample of the screening set's "
                                        "test half a capable model cleared 34 of 39 eligible skills the screen had "
                                        "screened out, and wrongly cleared 1 of 72 that need an account or a live "
                                        "service (docs/benchmarks.md > Screening). False: such answers are only "
                                        "recorded.")


def blocking_codes(findings: list[Finding]) -> list[ReasonCode]:
    """The distinct blocking codes among findings, sorted: what makes a skill `screened_out`."""
    return sorted({f.code for f in findings if f.code in BLOCKING_CODES}, key=lambda c: c.value)


def screen_skill(texts: dict[str, str], frontmatter: dict, body: str, settings: ScreenSettings) -> list[Finding]:
    """Screen one skill: line rules over every text file, frontmatter requirements, the vocabulary, the lure shape,
    document checks, licence and the stand-in policy."""
    book = load_rule_book(Path(settings.rules_path) if settings.rules_path else None)
    fm = frontmatter if isinstance(frontmatter, dict) else {}
    skill_file = next((p for p in sorted(texts) if _SKILL_FILE.match(p)), "SKILL.md")
    about = _identity_text(fm, texts.get(skill_file, ""))
    identity = _IDENTITY_STRIP.sub("", about.lower())
    skill_md = texts.get(skill_file, "")
    off = frozenset(k for k, r in enumerate(book.rules)
                    if (r.unless_skill is not None and r.unless_skill.search(about))
                    or (r.unless_body is not None and r.unless_body.search(skill_md)))
    defensive = bool(book.defensive_identity.search(about))
    contexts = [build_context(path, texts[path], book, defensive=defensive) for path in sorted(texts)
                if texts[path] and not book.skip_files.search(path)]
    requirements = stated_requirements(fm, book)
    side = not book.side_channel_skill.search(str(fm.get("name") or ""))
    signals = _line_signals(contexts, skill_file, book, identity, off, side_channels=side)
    signals += requirement_signals(requirements, texts.get(skill_file, ""), skill_file, book)
    signals += vocabulary_signals(about, requirements, texts, skill_file, book, defensive=defensive,
                                  side_channels=side)
    signals += lure_signals(contexts, skill_file, book)
    findings = score(_as_workflow(signals, _run_scripts(texts, skill_file, book)), book)
    findings += _hidden_comment_findings(texts, book)
    findings += _document_checks(texts, body or "", skill_file, book)
    findings = _apply_standin_policy(findings, texts, skill_file, book, settings)
    findings += _licence_findings(texts, fm, skill_file, book, settings)
    return findings


def _identity_text(fm: dict, skill_md: str) -> str:
    """What the skill says it is: frontmatter name and description, or (frontmatter missing or broken) the H1 and
    the `description:` line or first paragraph of SKILL.md, so an invalid skill is judged by what it claims too.
    URLs are dropped: a host in the text itself must not vouch for that host (vendor installers)."""
    name, description = fm.get("name"), fm.get("description")
    if not name and not description:
        name, description = fallback_from_body(skill_md)
    return _URL.sub(" ", f"{name or ''} {description or ''}")  # a URL in a description names no vendor


def _run_scripts(texts: dict[str, str], skill_file: str, book: CompiledBook) -> frozenset[str]:
    """Scripts SKILL.md names by path (`python3 scripts/post.py`), and the skill's own program: the workflow runs
    them, so what they need the workflow needs. Test fixtures are data, not steps; install and setup scripts are
    set-up, not the workflow."""
    md = texts.get(skill_file, "")
    programs = [p for p in texts if p != skill_file and book.code_files.search(p)
                and not book.fixture_paths.search(p) and not book.setup_scripts.search(p)]
    named = {p for p in programs if "/" in p and p in md}
    return frozenset(named | _entry_programs(texts, programs))


def _entry_programs(texts: dict[str, str], programs: list[str]) -> set[str]:
    """The skill's own program, where SKILL.md only names a command (`/skill code-optimizer`): the entry points its
    package.json declares (`main`, `bin`) or, without one, the only program at the bundle's root. A paid tool's
    subscription check or API key lives there, not in the prose."""
    declared: set[str] = set()
    try:
        manifest = json.loads(texts.get("package.json", "") or "{}")
    except ValueError:
        manifest = {}
    if isinstance(manifest, dict):
        bins = manifest.get("bin")
        entries = [manifest.get("main"), *(bins.values() if isinstance(bins, dict) else [bins])]
        declared = {posixpath.normpath(e) for e in entries if isinstance(e, str) and e.strip()}
    found = declared & set(programs)
    if found or declared:
        return found
    root = [p for p in programs if "/" not in p]
    return set(root) if len(root) == 1 else set()


def _as_workflow(signals: list[Signal], scripts: frozenset[str]) -> list[Signal]:
    """Evidence in a script SKILL.md runs weighs like SKILL.md's own."""
    if not scripts:
        return signals
    return [replace(s, file_weight=1.0) if s.weight >= 1.0 and s.finding.file in scripts else s for s in signals]


# ------------------------------------------------------------------------------------------------ line rules
def _line_signals(contexts: list[FileContext], skill_file: str, book: CompiledBook, identity: str,
                  off: frozenset[int] = frozenset(), *, side_channels: bool = True) -> list[Signal]:
    """A signal for every line-rule hit that survives unless/near/heading/trusted/quotation filters; rules in `off`
    (switched off by the skill's own name/description) are not run. With `side_channels`, account and live-service
    hits in an alert/notification context are dropped (an optional channel, not the workflow)."""
    signals: list[Signal] = []
    for ctx in contexts:
        for k in ctx.active_rules(book):
            if k in off:
                continue
            rule = book.rules[k]
            if rule.rule.prose_only and book.code_files.search(ctx.path):
                continue
            codes = (rule.rule.code, *rule.rule.also_codes)
            weights = [file_weight(ctx.path, skill_file, c, book) for c in codes]
            side = side_channels and all(c in _SIDE_CHANNEL_CODES for c in codes)
            for f in _rule_hits_in_file(rule, ctx, book, identity, side_channels=side):
                signals.append(Signal(rule.rule.id, rule.rule.weight, weights[0], f))
                for code, fw in zip(codes[1:], weights[1:], strict=True):
                    also = f.model_copy(update={"code": code})
                    signals.append(Signal(f"{rule.rule.id}@{code.value}", rule.rule.weight, fw, also))
    return signals


def _rule_hits_in_file(rule: CompiledRule, ctx: FileContext, book: CompiledBook, identity: str, *,
                       side_channels: bool = False):
    found = 0
    for i, start, end, matched in _matches(rule, ctx):
        if not _hit_survives(rule, ctx, i, start, end, matched, book, identity):
            continue
        if side_channels and (book.side_channel.search(ctx.section[i].rsplit(" / ", 1)[-1])
                              or in_side_channel(ctx.lines, i, book)):
            continue
        yield Finding(code=rule.rule.code, rule=rule.rule.id, file=ctx.path, line=ctx.orig_line[i],
                      text=_excerpt(ctx.lines[i], start, end))
        found += 1
        if found >= book.book.max_findings_per_rule:
            return


def _matches(rule: CompiledRule, ctx: FileContext):
    """(line index, start, end, text) of the first match starting on each searched line.

    A prose line is searched together with the next line, so a directive wrapped over two lines still matches;
    with triggers, only lines holding one (or preceding one) are searched, otherwise every line is.
    """
    lines: Iterable[int] = (ctx.candidate_lines(rule.triggers, max(1, rule.rule.near_window)) if rule.triggers
                            else range(len(ctx.lines)))
    for i in lines:
        line = ctx.lines[i]
        nxt = ctx.lines[i + 1] if i + 1 < len(ctx.lines) and not (ctx.in_code[i] or ctx.is_code) else ""
        m = rule.rx.search(f"{line} {nxt}" if nxt.strip() else line)
        if m and m.start() < len(line):
            yield i, m.start(), min(m.end(), len(line)), m.group(0)


def _hit_survives(rule: CompiledRule, ctx: FileContext, i: int, start: int, end: int, matched: str,
                  book: CompiledBook, identity: str) -> bool:
    line = ctx.lines[i]
    if end - start < len(matched) and i + 1 < len(ctx.lines):
        line = f"{line} {ctx.lines[i + 1]}"  # the match runs on into the next line: so does what may cancel it
    if rule.unless is not None and rule.unless.search(line):
        return False
    if rule.under_heading is not None and not rule.under_heading.search(ctx.section[i]):
        return False
    if rule.near and not _near_ok(rule, ctx, i):
        return False
    if rule.rule.trusted_hosts and _all_hosts_trusted(matched, line, book, identity):
        return False
    return not (rule.rule.quotable and suppressed_as_quotation(ctx, i, start, end, book, book.book.context.window,
                                                               rule.rule.identity_context or ctx.reference_doc))


def _near_ok(rule: CompiledRule, ctx: FileContext, i: int) -> bool:
    w = rule.rule.near_window
    window = "\n".join(ctx.lines[max(0, i - w): i + w + 1])
    return all(rx.search(window) for rx in rule.near)


def _all_hosts_trusted(matched: str, line: str, book: CompiledBook, identity: str) -> bool:
    """Pipe-to-shell from an official or the vendor's own installer host is tolerated; no URL (a variable) is not."""
    urls = _URL.findall(matched) or _URL.findall(line)
    if not urls:
        return False
    for u in urls:
        try:
            parts = urlsplit("https://" + u)
        except ValueError:  # `https://[not-an-ip]/…`: hostile text is not a URL of a trusted host
            return False
        host = parts.hostname or ""
        if not (_host_trusted((host + parts.path).lower(), book.trusted_hosts)
                or (book.book.vendor_host_matches_skill and (_vendor_host(host, identity)
                                                              or _vendor_release(host, parts.path, identity)))):
            return False
    return True


def _vendor_release(host: str, path: str, identity: str) -> bool:
    """A release asset of the GitHub repository the skill is named for (github.com/<owner>/temporal/releases/...
    in a skill for the temporal CLI): the tool's own published binary, as a vendor's own installer host is."""
    m = _GITHUB_RELEASE.match(path)
    if host.lower() != "github.com" or not m:
        return False
    repo = _IDENTITY_STRIP.sub("", m.group(1).lower())
    return len(repo) >= 4 and repo in identity


def _host_trusted(where: str, trusted: tuple[str, ...]) -> bool:
    """Entries without a path trust the host and its subdomains; entries with a path trust that path prefix."""
    host = where.split("/", 1)[0]
    for h in trusted:
        if "/" in h and (where == h or where.startswith(h + "/")):
            return True
        if "/" not in h and (host == h or host.endswith("." + h)):
            return True
    return False


def _vendor_host(host: str, identity: str) -> bool:
    """The host's registrable label (lambdalabs for lambdalabs.com, example for x.example.co.uk) names the skill."""
    labels = [x for x in host.lower().split(".") if x]
    if len(labels) < 2 or all(x.isdigit() for x in labels):
        return False
    core = labels[-3] if len(labels) >= 3 and labels[-2] in _SECOND_LEVEL else labels[-2]
    core = core.replace("-", "")
    return len(core) >= 4 and core in identity


def _excerpt(line: str, start: int, end: int) -> str:
    """The matched line, trimmed around the match to at most 200 characters."""
    text = line.strip()
    if len(text) <= 200:
        return text
    lo = max(0, start - 60)
    return line[lo:lo + 200].strip()


# ----------------------------------------------------------------------------------- hidden HTML comments
def _hidden_comment_findings(texts: dict[str, str], book: CompiledBook) -> list[Finding]:
    """A directive inside an HTML comment: invisible when the Markdown is rendered, read by the agent.

    Comments shown as text (inside a fenced block or an inline code span) and test data under fixture paths are
    quotations, not hidden instructions; everything else is checked whole, so a comment spanning lines counts.
    """
    spec = book.book.hidden_comments
    if book.hidden_directive is None or book.hidden_files is None or spec is None:
        return []
    out: list[Finding] = []
    for path in sorted(texts):
        text = texts[path]
        if "<!--" not in text or not book.hidden_files.search(path) or book.skip_files.search(path) \
                or (book.fixture_paths.search(path) and book.data_files.search(path)):
            continue
        text = reveal_invisible(text)
        fenced = fenced_line_numbers(text)
        for m in _HTML_COMMENT.finditer(text):
            line_no = text.count("\n", 0, m.start()) + 1
            if line_no in fenced or _in_code_span(text, m.start()):
                continue
            hit = book.hidden_directive.search(m.group(1))
            if hit:
                at = line_no + m.group(1).count("\n", 0, hit.start())
                out.append(Finding(code=ReasonCode.MALICIOUS, rule=spec.rule_id, file=path,
                                   line=at, text=" ".join(m.group(1)[max(0, hit.start() - 60):].split())[:200]))
                if len(out) >= book.book.max_findings_per_rule:
                    return out
    return out


def _in_code_span(text: str, pos: int) -> bool:
    """An odd number of backticks before `pos` on its line: the comment is shown as inline code."""
    start = text.rfind("\n", 0, pos) + 1
    return text.count("`", start, pos) % 2 == 1


# ------------------------------------------------------------------------------------------ document checks
def _document_checks(texts: dict[str, str], body: str, skill_file: str, book: CompiledBook) -> list[Finding]:
    docs = book.book.document_checks
    actionable = _actionable_count(texts, body, skill_file, book)
    out: list[Finding] = []
    persona_lines = _persona_lines(body, book)
    if len(persona_lines) >= docs.persona_only.min_persona_lines and actionable <= docs.persona_only.max_actionable:
        out.append(Finding(code=ReasonCode.PERSONA_ONLY, rule="doc.persona_only", file=skill_file,
                           line=line_of(texts.get(skill_file, ""), persona_lines[0]),
                           text=f"{len(persona_lines)} persona lines, {actionable} actionable signals: "
                                f"{persona_lines[0].strip()}"[:200]))
    words = len(_WORD.findall(_HEADING_LINE.sub(" ", body)))
    if words <= docs.no_actionable_content.max_body_words and actionable == 0:
        out.append(Finding(code=ReasonCode.NO_ACTIONABLE_CONTENT, rule="doc.no_actionable_content",
                           file=skill_file, line=0,
                           text=f"body has {words} words and no code, steps, commands or supporting files"))
    return out


def _persona_lines(body: str, book: CompiledBook) -> list[str]:
    """Lines holding a persona cue. One search over the whole body first: most skills have none, and a line match
    implies a whole-body match, so the per-line pass runs only when it can find something."""
    if not book.persona_cues.search(body):
        return []
    return [ln for ln in body.split("\n") if book.persona_cues.search(ln)]


def _actionable_count(texts: dict[str, str], body: str, skill_file: str, book: CompiledBook) -> int:
    fences = len(book.code_fence.findall(body)) // 2
    commands = len(book.inline_command.findall(body))
    steps = len(book.numbered_step.findall(body))
    return fences + commands + steps + len(_support_files(texts, book))


def _support_files(texts: dict[str, str], book: CompiledBook) -> list[str]:
    return [p for p in texts if book.support_file.search(p) and texts[p].strip()]



# ------------------------------------------------------------------------------------------ stand-in policy
def _apply_standin_policy(findings: list[Finding], texts: dict[str, str], skill_file: str, book: CompiledBook,
                          settings: ScreenSettings) -> list[Finding]:
    """Replace needs_live_service by one informational standin_possible finding when the policy allows it."""
    codes = {f.code for f in findings}
    if not settings.allow_standins or ReasonCode.NEEDS_LIVE_SERVICE not in codes \
            or ReasonCode.NEEDS_EXTERNAL_ACCOUNT in codes:
        return findings
    contract = _documented_contract(texts, skill_file, book)
    local = any(book.local_base_url.search(t) for t in texts.values())
    spec_file = contract is not None and contract[0] != skill_file
    if contract is None or not (local or spec_file):
        return findings
    live = [f for f in findings if f.code == ReasonCode.NEEDS_LIVE_SERVICE]
    rules = ", ".join(sorted({f.rule for f in live}))
    note = Finding(code=ReasonCode.STANDIN_POSSIBLE, rule=book.book.standin.rule_id, file=contract[0], line=0,
                   text=f"needs_live_service waived ({rules}): {contract[1]}"[:200])
    return [f for f in findings if f.code != ReasonCode.NEEDS_LIVE_SERVICE] + [note]


def _documented_contract(texts: dict[str, str], skill_file: str, book: CompiledBook) -> tuple[str, str] | None:
    """(file, why) when the service contract is in the bundle: a spec file, or endpoints plus a response example."""
    for path in sorted(texts):
        if book.contract_file.search(path) or book.contract_text.search(texts[path][:2000]):
            return path, f"API contract in {path}"
    md = texts.get(skill_file, "")
    endpoints = len(book.endpoint_line.findall(md))
    if endpoints >= book.book.standin.min_endpoints and book.response_example.search(md):
        return skill_file, f"{endpoints} documented endpoints with response examples"
    return None


# ------------------------------------------------------------------------------------------------- licence
def _licence_findings(texts: dict[str, str], fm: dict, skill_file: str, book: CompiledBook,
                      settings: ScreenSettings) -> list[Finding]:
    info = resolve_licence(texts, fm, skill_file, book)
    if info.ids:
        if is_allowed(info, settings.licence_allow):
            return []
        return [Finding(code=ReasonCode.LICENCE_NOT_ALLOWED, rule="licence.not_allowed", file=info.file,
                        line=info.line, text=f"{info.raw} -> {' / '.join(info.ids)}"[:200])]
    if settings.unknown_licence_policy == "ignore":
        return []
    code, rule = (ReasonCode.LICENCE_NOT_ALLOWED, "licence.unknown_blocked") \
        if settings.unknown_licence_policy == "block" else (ReasonCode.LICENCE_UNKNOWN, "licence.unknown")
    return [Finding(code=code, rule=rule, file=info.file or skill_file, line=info.line,
                    text=(info.raw or "no license field and no licence file")[:200])]
