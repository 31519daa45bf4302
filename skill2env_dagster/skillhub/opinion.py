"""A model's second opinion on a screening verdict: one structured call per skill, cached by bundle digest.

The model may add a blocking reason, but only with a quote that is found in the skill (a hallucinated quote blocks
nothing and is recorded as `unverified_evidence`). It sees what the rules flagged and may answer that the main
workflow does without one of those codes, again with a verified quote (an optional key, a local mode): with
`settings.screen.second_opinion_clears` on, that code leaves the verdict (`model_cleared`; the rules' findings move
to the opinion), otherwise it is only recorded (`model_would_clear`). Keyword rules cannot tell an optional or
illustrative mention from a requirement, which is most of the eligible skills they screen out; a model can. It
never clears `malicious` or `harmful` (the wire schema does not allow those codes there, so an injected skill
cannot talk the model out of a lure), nor a bundle or licence problem. A clearance removes only the findings on
lines the model was shown (opinion_view.py decides what it is shown); a finding it did not see stays, with the code,
and is recorded (`kept_unseen`). A call that fails, times out or answers outside the schema leaves the rules'
verdict in place, with the reason recorded on the opinion (`status: failed`). The prompt is a template
(prompts/screen_second_opinion.j2) whose hash, with the model settings, is the opinion's `prompt_version` and part of
the skillhub_snapshot code version.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Literal, Protocol, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, Field

from skill2env_dagster.llm.errors import LLMError
from skill2env_dagster.llm.prompts import render_messages
from skill2env_dagster.models.plan import Usage
from skill2env_dagster.models.skill import (
    Disagreement,
    Finding,
    OpinionReason,
    SecondOpinion,
    SkillRecord,
    SkillStatus,
)
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.skillhub.crawl import BLOCKING_CODES
from skill2env_dagster.skillhub.opinion_view import MAX_LEFT_OUT, OpinionView, build_view
from skill2env_dagster.store import read_model, write_model

OPINION_TEMPLATE = "screen_second_opinion.j2"
OPINION_RULE = "model.second_opinion"
MAX_REASONS = 8
MIN_QUOTE = 8
M = TypeVar("M", bound=BaseModel)

OpinionCode = Literal["needs_external_account", "needs_live_service", "needs_hardware", "os_or_gui_specific",
                      "persona_only", "no_actionable_content", "malicious", "harmful"]
CODE_MEANINGS: tuple[tuple[str, str], ...] = (
    ("needs_external_account", ("needs credentials of a third-party account: API key, token, OAuth, a logged-in "
                                "CLI, a connected integration (MCP server, integration platform), a bot token, a "
                                "wallet key, a paid plan")),
    ("needs_live_service", ("the answer depends on a service that must be reachable: a remote API (keyless too), "
                            "live web pages or data, a server or agent platform the user runs")),
    ("needs_hardware", ("reads or controls a physical device: smart-home hubs, printers, NAS, robots, boards, "
                        "Bluetooth or LAN devices, cars; or physical setup of such devices")),
    ("os_or_gui_specific", "only works on macOS/Windows or through a desktop GUI"),
    ("persona_only", "only sets a voice or identity, with no procedure"),
    ("no_actionable_content", "nothing to act on (a placeholder, one prompt, a list of links)"),
    ("malicious", ("tells the agent or user to harm them: download and run an external program, exfiltrate "
                   "credentials, persist access, hide actions from the user")),
    ("harmful", "helps harm third parties: phishing, malware, fake reviews, doxxing"),
)

# Codes a model may clear: what a skill needs or lacks, never what it would do to the user or others.
ClearableCode = Literal["needs_external_account", "needs_live_service", "needs_hardware", "os_or_gui_specific",
                        "persona_only", "no_actionable_content"]
CLEARABLE: frozenset[ReasonCode] = frozenset(ReasonCode(c) for c in get_args(ClearableCode))


class OpinionReplyReason(BaseModel):
    """One reason in the model's reply (wire schema: every key required, codes and lengths constrained)."""

    model_config = ConfigDict(extra="forbid")

    code: OpinionCode
    file: str = Field(min_length=1, max_length=300, description="Relative path of the file quoted.")
    evidence: str = Field(min_length=MIN_QUOTE, max_length=300, description="Verbatim quote from that file.")
    why: str = Field(min_length=1, max_length=300)


class OpinionReplyClear(BaseModel):
    """A flagged code the main workflow does without, shown by a quote (wire schema)."""

    model_config = ConfigDict(extra="forbid")

    code: ClearableCode
    file: str = Field(min_length=1, max_length=300, description="Relative path of the file quoted.")
    evidence: str = Field(min_length=MIN_QUOTE, max_length=300, description="Verbatim quote showing the main "
                          "workflow works without it (an optional feature, a local mode, an illustration).")
    why: str = Field(min_length=1, max_length=300)


class OpinionReply(BaseModel):
    """The wire schema of the second opinion."""

    model_config = ConfigDict(extra="forbid")

    reasons: list[OpinionReplyReason] = Field(max_length=MAX_REASONS)
    not_needed: list[OpinionReplyClear] = Field(max_length=MAX_REASONS, description="Codes the rules flagged "
                                                "that the main workflow does not need.")
    summary: str = Field(max_length=400)


class JSONCompleter(Protocol):
    """What the second opinion needs from an LLM client (LLMClient satisfies it)."""

    def complete_json(self, messages: list[dict[str, str]], schema: type[M], *, purpose: str) -> tuple[M, Usage]: ...


def opinion_view(record: SkillRecord) -> OpinionView:
    """What the model is shown of this skill: its files and the lines the rules flagged for a clearable code."""
    return build_view(record, CLEARABLE & set(record.reasons))


def opinion_messages(view: OpinionView) -> list[dict[str, str]]:
    left = [f"{x.path} ({x.why})" for x in view.left_out]
    if len(left) > MAX_LEFT_OUT:
        left = [*left[:MAX_LEFT_OUT], f"... and {len(left) - MAX_LEFT_OUT} more"]
    return render_messages(OPINION_TEMPLATE, codes=CODE_MEANINGS, max_reasons=MAX_REASONS, files=view.files,
                           left_out=view.left_out, left_out_text="\n".join(left), notes=view.notes,
                           flagged=flagged_text(view))


def flagged_text(view: OpinionView) -> str:
    """Each flagged line as a header of ours, then the skill's line verbatim; flags tied to no line described."""
    out: list[str] = []
    for n, f in enumerate(view.flagged, 1):
        part = " (part of a long line)" if f.partial else ""
        out += [f"[{n}] {f.file} line {f.line}{part} | flagged: {f.context}", f.text]
    if view.notes:
        out.append("Flagged without a line (described, not quotable):")
        out += [f"- {x.code} in {x.file or 'the skill'}: {x.context}" for x in view.notes]
    return "\n".join(out)


class OpinionCache:
    """Validated replies on disk, keyed by bundle digest and prompt version (which covers the model settings)."""

    def __init__(self, root: Path | None) -> None:
        self.root = root

    def _path(self, digest: str, version: str) -> Path | None:
        if self.root is None or not digest:
            return None
        return self.root / f"{hashlib.sha256(f'{digest}|{version}'.encode()).hexdigest()[:32]}.json"

    def get(self, digest: str, version: str) -> OpinionReply | None:
        path = self._path(digest, version)
        if path is None or not path.is_file():
            return None
        try:
            return read_model(path, OpinionReply)
        except Exception:
            return None

    def put(self, digest: str, version: str, reply: OpinionReply) -> None:
        path = self._path(digest, version)
        if path is not None:
            write_model(path, reply)


def second_opinion(record: SkillRecord, client: JSONCompleter, *, model: str, prompt_version: str,
                   cache: OpinionCache, may_clear: bool = False) -> SkillRecord:
    """The record with the model's opinion merged in. A failed call (LLMError: unreachable, timed out, outside the
    schema) leaves the rules' verdict, with the failure recorded on the opinion; it is not cached, so the next
    materialisation asks again. The cache key is the prompt itself (template, model settings, the files and
    flagged lines shown) but not `may_clear`: the reply is the same either way, only what is done with it differs."""
    view = opinion_view(record)
    if not view.files:
        return record
    messages = opinion_messages(view)
    key = f"{prompt_version}|{hashlib.sha256(json.dumps(messages).encode()).hexdigest()[:24]}"
    reply = cache.get(record.bundle_digest, key)
    cached = reply is not None
    usage = Usage(cache_hits=1)
    if reply is None:
        try:
            reply, usage = client.complete_json(messages, OpinionReply, purpose=f"screen:{record.skill_id}")
        except LLMError as e:
            return failed_opinion(record, e, model=model, prompt_version=prompt_version)
        cache.put(record.bundle_digest, key, reply)
    out = merge_opinion(record, reply, view, model=model, prompt_version=prompt_version, cached=cached,
                        may_clear=may_clear)
    if out.second_opinion is not None:
        out.second_opinion.usage = usage
    return out


def failed_opinion(record: SkillRecord, err: LLMError, *, model: str, prompt_version: str) -> SkillRecord:
    """The rules' verdict unchanged, with why the model gave no opinion (and what the failed call spent)."""
    out = record.model_copy(deep=True)
    out.second_opinion = SecondOpinion(model=model, prompt_version=prompt_version, cached=False, status="failed",
                                       failure=err.reason, summary=f"no opinion: {err}"[:400],
                                       usage=err.usage or Usage(failed_calls=1))
    return out


def merge_opinion(record: SkillRecord, reply: OpinionReply, view: OpinionView, *, model: str,
                  prompt_version: str, cached: bool, may_clear: bool = False) -> SkillRecord:
    """Add the model's verified blocking reasons; with `may_clear`, remove the findings it was shown of each
    clearable rule code it shows is not needed (the code leaves the verdict when none of its findings is left);
    record every difference."""
    texts = view.texts
    verified: list[OpinionReason] = []
    disagreements: list[Disagreement] = []
    for r in reply.reasons:
        found = locate_quote(r.evidence, r.file, texts)
        code = ReasonCode(r.code)
        if found is None:
            disagreements.append(Disagreement(code=code, kind="unverified_evidence",
                                              detail=f"{r.file}: {r.evidence}"[:300]))
            continue
        verified.append(OpinionReason(code=code, file=found[0], line=found[1], evidence=found[2], why=r.why[:300]))
    model_codes = {r.code for r in verified}
    rule_codes = {c for c in record.reasons if c.value in {code for code, _ in CODE_MEANINGS}}
    added = sorted(model_codes - rule_codes, key=lambda c: c.value)
    not_needed = _not_needed(reply, texts, rule_codes - model_codes, disagreements)
    unseen = {code: [f for f in record.findings if f.code == code and not view.seen(f)] for code in not_needed}
    kind: Literal["model_cleared", "model_would_clear"] = "model_cleared" if may_clear else "model_would_clear"
    for code, where in sorted(not_needed.items(), key=lambda kv: kv[0].value):
        disagreements.append(Disagreement(code=code, kind=kind, detail=where[:300]))
        if unseen[code]:
            shown = ", ".join(f"{f.file}:{f.line}" for f in unseen[code][:6])
            disagreements.append(Disagreement(code=code, kind="kept_unseen", detail=(
                f"{len(unseen[code])} finding(s) on lines the model was not shown stay, and so does the code: "
                f"{shown}")[:300]))
    for code in sorted(rule_codes - model_codes - set(not_needed), key=lambda c: c.value):
        disagreements.append(Disagreement(code=code, kind="rules_only", detail="the rules found it; the model did "
                                          "not (the rules' verdict stands)"))
    for code in added:
        first = next(r for r in verified if r.code == code)
        disagreements.append(Disagreement(code=code, kind="model_only", detail=f"{first.file}:{first.line}: "
                                          f"{first.evidence}"[:300]))
    out = record.model_copy(deep=True)
    removed = [f for f in out.findings if f.code in not_needed and view.seen(f)] if may_clear else []
    cleared = sorted((c for c in not_needed if not unseen[c]), key=lambda c: c.value) if may_clear else []
    out.second_opinion = SecondOpinion(model=model, prompt_version=prompt_version, cached=cached,
                                       summary=reply.summary, reasons=verified, added=added, cleared=cleared,
                                       cleared_findings=removed, disagreements=disagreements,
                                       files_shown=[f.path for f in view.files],
                                       files_left_out=[f"{x.path} ({x.why})" for x in view.left_out][:100])
    if added:
        out.findings = [*out.findings, *[Finding(code=r.code, rule=OPINION_RULE, file=r.file, line=r.line,
                                                 text=r.evidence[:200]) for r in verified if r.code in added]]
        out.reasons = sorted(set(out.reasons) | set(added), key=lambda c: c.value)
        if out.status == SkillStatus.ELIGIBLE:
            out.status = SkillStatus.SCREENED_OUT
    if removed:
        _clear(out, removed, set(cleared))
    return out


def _not_needed(reply: OpinionReply, texts: dict[str, str], clearable: set[ReasonCode],
                disagreements: list[Disagreement]) -> dict[ReasonCode, str]:
    """Rule codes the model says the main workflow does without, each with its verified quote (`file:line:
    quote`). Only codes the rules reached, that are clearable and that the model does not also give as a reason."""
    out: dict[ReasonCode, str] = {}
    for c in reply.not_needed:
        code = ReasonCode(c.code)
        if code not in clearable & CLEARABLE or code in out:
            continue
        found = locate_quote(c.evidence, c.file, texts)
        if found is None:
            disagreements.append(Disagreement(code=code, kind="unverified_evidence",
                                              detail=f"not needed? {c.file}: {c.evidence}"[:300]))
            continue
        out[code] = f"{found[0]}:{found[1]}: {found[2]} ({c.why})"
    return out


def _clear(record: SkillRecord, removed: list[Finding], cleared: set[ReasonCode]) -> None:
    """Remove the findings the model cleared and the codes none of whose findings is left; a screened-out skill
    with no blocking code left is eligible."""
    record.findings = [f for f in record.findings if f not in removed]
    record.reasons = [c for c in record.reasons if c not in cleared]
    if record.status == SkillStatus.SCREENED_OUT and not any(c in BLOCKING_CODES for c in record.reasons):
        record.status = SkillStatus.ELIGIBLE


_SPACE = re.compile(r"\s+")


def locate_quote(quote: str, file: str, texts: dict[str, str]) -> tuple[str, int, str] | None:
    """(file, 1-based line, quote) where the quote occurs (whitespace-insensitive), in the named file first, then
    anywhere in the skill; None when it occurs nowhere or is too short to prove anything."""
    needle = _SPACE.sub(" ", quote).strip().strip(".…").strip()
    if len(needle.replace(" ", "")) < MIN_QUOTE:
        return None
    order = [file] + [p for p in texts if p != file] if file in texts else list(texts)
    for path in order:
        flat, offsets = _flatten(texts[path])
        at = flat.find(needle)
        if at >= 0:
            return path, texts[path].count("\n", 0, offsets[at]) + 1, needle
    return None


def _flatten(text: str) -> tuple[str, list[int]]:
    """Text with whitespace runs collapsed to one space, and the original offset of every kept character."""
    chars: list[str] = []
    offsets: list[int] = []
    space = False
    for i, ch in enumerate(text):
        if ch.isspace():
            if not space and chars:
                chars.append(" ")
                offsets.append(i)
            space = True
            continue
        space = False
        chars.append(ch)
        offsets.append(i)
    return "".join(chars), offsets
