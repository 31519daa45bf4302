"""Crawl: sources → skill folders → bundle + parse + screen per skill → dedup across all → SkillRecords.

Each skill is processed in isolation and any exception becomes that skill's `invalid/internal_error` record, and an
unreachable source becomes a source error: one bad skill or hub never loses the others' work.
"""

from __future__ import annotations

import logging
import os
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from skill2env_dagster.hashing import canonical_json, sha256_bytes
from skill2env_dagster.models.skill import Finding, SkillRecord, SkillStatus
from skill2env_dagster.reasons import ReasonCode, Skill2EnvError
from skill2env_dagster.skillhub import screen_cache
from skill2env_dagster.skillhub.config import (
    CrawlSettings,
    SourcesConfig,
    SourceSpec,
    dir_sources,
)
from skill2env_dagster.skillhub.dedup import DedupItem, body_hash, find_duplicates
from skill2env_dagster.skillhub.domain import guess_domain
from skill2env_dagster.skillhub.parse import parse_skill_md
from skill2env_dagster.skillhub.screen import engine as screen
from skill2env_dagster.skillhub.screen import learned
from skill2env_dagster.skillhub.screen.engine import screen_skill
from skill2env_dagster.skillhub.sources.bundle import Bundle, printable_path, read_bundle
from skill2env_dagster.skillhub.sources.discover import FoundSkill, discover_skills
from skill2env_dagster.skillhub.sources.ids import unique_ids
from skill2env_dagster.skillhub.sources.resolve import ResolvedSource, resolve_source

log = logging.getLogger(__name__)

# The screen's own blocking codes, plus the bundle problems that make a skill unsafe or too big to use.
BLOCKING_CODES = screen.BLOCKING_CODES | {
    ReasonCode.SYMLINK_ESCAPE, ReasonCode.SKILL_TOO_LARGE, ReasonCode.TOO_MANY_FILES}
# Of the screen's informational codes, licence_unknown is listed among reasons (the issue asks for it to be
# recorded); the rest stay evidence only.
EVIDENCE_ONLY_CODES = screen.INFO_CODES - {ReasonCode.LICENCE_UNKNOWN}
PARALLEL_MIN_SKILLS = 400


@dataclass
class SourceReport:
    name: str
    kind: str
    uri: str
    commit: str | None = None
    root: str | None = None
    skills: int = 0
    error: str | None = None
    reuse_key: str | None = None  # a git source: what made its records (code, settings, spec; see Previous)
    reused: bool = False  # its records are the previous snapshot's (same commit, same reuse_key)


@dataclass(frozen=True)
class Previous:
    """The last published snapshot, for re-crawling unchanged git commits (the nightly case): a git source whose
    commit and reuse key (crawl code version, crawl settings, the source's spec) are those the previous snapshot
    recorded gets that snapshot's records back without reading, parsing or screening a file. `records` loads
    them (only when some source is reused). Folder sources are always read: a folder has no commit."""

    sources: dict[str, tuple[str, str]]  # source name -> (commit, reuse_key)
    records: Callable[[], list[SkillRecord]]


@dataclass
class CrawlResult:
    records: list[SkillRecord]
    sources: list[SourceReport]
    seconds: dict[str, float] = field(default_factory=dict)

    def snapshot_id(self) -> str:
        """Content address of the snapshot: changes iff any skill's content, verdict, duplicate status or location
        does (a moved hub must publish records with the paths later stages read the skill's files from)."""
        rows = [(r.skill_id, r.bundle_digest, r.status, sorted(r.reasons), r.duplicate_of, r.abs_path)
                for r in self.records]
        return sha256_bytes(canonical_json(sorted(rows)).encode())[:16]

    def status_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.records:
            out[r.status.value] = out.get(r.status.value, 0) + 1
        return out


@dataclass(frozen=True)
class _Job:
    """Everything one worker needs to turn a found folder into a record (picklable)."""

    source: ResolvedSource
    found: FoundSkill
    skill_id: str
    parent_id: str | None
    exclude: tuple[str, ...]  # folders of nested real sub-skills, excluded from this bundle
    nested_ids: tuple[str, ...]  # their skill ids
    settings: CrawlSettings


def crawl(config: SourcesConfig, previous: Previous | None = None, code_key: str = "") -> CrawlResult:
    """`previous` and `code_key` (the crawl's code version): reuse the records of unchanged git commits."""
    settings = config.settings
    t0 = time.perf_counter()
    resolved, reports = _resolve_all(config.sources, Path(settings.cache_dir))
    for src in resolved:
        if src.commit:
            report = next(r for r in reports if r.name == src.spec.name)
            report.reuse_key = sha256_bytes(canonical_json({"code": code_key, "settings": settings.model_dump(
                mode="json"), "spec": src.spec.model_dump(mode="json")}).encode())[:16]
            report.reused = previous is not None and previous.sources.get(src.spec.name) == (src.commit,
                                                                                           report.reuse_key)
    reused = {r.name for r in reports if r.reused}
    kept = _reused_records(previous, reused, reports)
    t1 = time.perf_counter()
    jobs = _plan_jobs([s for s in resolved if s.spec.name not in reused], settings, reports)
    records = _run_jobs(jobs)
    t2 = time.perf_counter()
    if previous is not None and reused and not jobs and reused == set(previous.sources) == {
            s.spec.name for s in resolved} and all(r.error is None for r in reports):
        records = kept  # the very skills the previous snapshot deduplicated: its verdicts stand
    else:
        records = [_without_dedup(r) for r in kept] + records
        _mark_duplicates(records, {s.spec.name: s.spec.priority for s in resolved}, settings)
    t3 = time.perf_counter()
    log.info("crawl: %d skills from %d sources (%d reused unchanged) in %.2fs", len(records), len(resolved),
             len(reused), t3 - t0)
    return CrawlResult(records, reports, {"resolve": t1 - t0, "process": t2 - t1, "dedup": t3 - t2})


def _reused_records(previous: Previous | None, reused: set[str], reports: list[SourceReport]) -> list[SkillRecord]:
    if previous is None or not reused:
        return []
    kept = [r for r in previous.records() if r.source in reused]
    for report in reports:
        if report.reused:
            report.skills = sum(r.source == report.name for r in kept)
    return kept


def _without_dedup(r: SkillRecord) -> SkillRecord:
    """A reused record as the crawl built it, before deduplication (which runs again across every source)."""
    dedup = {ReasonCode.EXACT_DUPLICATE, ReasonCode.NEAR_DUPLICATE}
    if r.duplicate_of is None and not any(c in dedup for c in r.reasons):
        return r
    status = SkillStatus.ELIGIBLE if r.status == SkillStatus.DUPLICATE else r.status
    return r.model_copy(update={"duplicate_of": None, "status": status,
                                "reasons": [c for c in r.reasons if c not in dedup],
                                "findings": [f for f in r.findings if f.rule != "dedup"]})


def crawl_paths(paths: list[Path], settings: CrawlSettings | None = None) -> CrawlResult:
    """Crawl plain folders (each a `dir` source named after the folder): the `skill2env crawl DIR...` contract."""
    return crawl(SourcesConfig(sources=dir_sources([Path(p) for p in paths]), settings=settings or CrawlSettings()))


def _resolve_all(specs: list[SourceSpec], cache: Path) -> tuple[list[ResolvedSource], list[SourceReport]]:
    resolved, reports = [], []
    for spec in specs:
        report = SourceReport(spec.name, spec.kind, spec.url or spec.path or "")
        try:
            src = resolve_source(spec, cache)
            report.commit, report.root = src.commit, str(src.root)
            resolved.append(src)
        except Skill2EnvError as e:
            report.error = str(e)
            log.error("source %s unavailable: %s", spec.name, e)
        reports.append(report)
    return resolved, reports


def _plan_jobs(resolved: list[ResolvedSource], settings: CrawlSettings, reports: list[SourceReport]) -> list[_Job]:
    jobs: list[_Job] = []
    for src in resolved:
        found = discover_skills(src.root)
        ids = unique_ids([(src.spec.name, f.rel_path) for f in found])
        children: dict[str, list[str]] = {}
        for g in found:
            if g.parent_rel_path is not None and _is_real(g, src):
                children.setdefault(g.parent_rel_path, []).append(g.rel_path)
        for f in found:
            parent = ids[(src.spec.name, f.parent_rel_path)] if f.parent_rel_path is not None else None
            nested = tuple(children.get(f.rel_path, ()))
            nested_ids = tuple(ids[(src.spec.name, n)] for n in nested)
            jobs.append(_Job(src, f, ids[(src.spec.name, f.rel_path)], parent, nested, nested_ids, settings))
        next(r for r in reports if r.name == src.spec.name).skills = len(found)
    return jobs


def _is_real(found: FoundSkill, src: ResolvedSource) -> bool:
    return not found.is_fixture or src.spec.include_fixtures


def _run_jobs(jobs: list[_Job]) -> list[SkillRecord]:
    if len(jobs) < PARALLEL_MIN_SKILLS or (os.cpu_count() or 1) < 2:
        records = [build_record(j) for j in jobs]
    else:
        with ProcessPoolExecutor(max_workers=min(4, os.cpu_count() or 2)) as pool:
            records = list(pool.map(build_record, jobs, chunksize=64))
    for r, j in zip(records, jobs, strict=True):
        r.nested_skills = list(j.nested_ids)
    return records


def build_record(job: _Job) -> SkillRecord:
    """One skill folder → its record; never raises (an unexpected error becomes `invalid/internal_error`)."""
    try:
        return _build(job)
    except Exception as e:
        log.exception("skill %s: internal error", job.skill_id)
        rec = _base_record(job, digest="", files=[])
        rec.status, rec.reasons = SkillStatus.INVALID, [ReasonCode.INTERNAL_ERROR]
        rec.findings = [Finding(code=ReasonCode.INTERNAL_ERROR, rule="crawl", file="", line=0,
                                text=f"{type(e).__name__}: {e}"[:200])]
        rec.warnings = [traceback.format_exc(limit=2)[-300:]]
        return rec


def _base_record(job: _Job, digest: str, files: list) -> SkillRecord:
    src, f = job.source, job.found
    return SkillRecord(
        skill_id=job.skill_id, source=src.spec.name, source_kind=src.spec.kind, source_commit=src.commit,
        source_uri=src.uri, rel_path=printable_path(f.rel_path), abs_path=printable_path(str(f.folder)),
        skill_file=f.skill_file,
        bundle_digest=digest, files=files,
        fixture_of=job.parent_id if f.is_fixture else None,
    )


def _build(job: _Job) -> SkillRecord:
    s, folder = job.settings, job.found.folder
    if printable_path(str(folder)) != str(folder):  # later stages could not open it by its recorded path
        rec = _base_record(job, digest="", files=[])
        rec.status = SkillStatus.INVALID
        return _finish(rec, [ReasonCode.UNREADABLE], [Finding(code=ReasonCode.UNREADABLE, rule="crawl", file="",
                                                              line=0, text="skill folder name is not UTF-8")])
    bundle = read_bundle(folder, max_file_bytes=s.max_file_bytes, max_skill_bytes=s.max_skill_bytes,
                         max_files=s.max_files, exclude={(job.source.root / rel).resolve() for rel in job.exclude},
                         skill_file=job.found.skill_file, link_root=job.source.root)
    rec = _base_record(job, bundle.digest, bundle.files)
    if job.found.is_fixture and not job.source.spec.include_fixtures:
        rec.status, rec.reasons = SkillStatus.SCREENED_OUT, [ReasonCode.TEST_FIXTURE]
        return rec
    reasons: list[ReasonCode] = []
    findings: list[Finding] = []
    for code, detail in bundle.problems:
        findings.append(Finding(code=code, rule="bundle", file=detail.split(" -> ")[0], line=0, text=detail[:200]))
        reasons.append(code)
    text = bundle.texts.get(job.found.skill_file)
    if text is None:
        entry = next((e for e in bundle.files if e.rel_path == job.found.skill_file), None)
        code = entry.refused if entry and entry.refused else ReasonCode.NOT_UTF8
        reasons.append(code)
        if code not in {c for c, _ in bundle.problems}:
            findings.append(Finding(code=code, rule="parse", file=job.found.skill_file, line=0,
                                    text="SKILL.md unreadable"))
        # A SKILL.md linking out of the source is a refusal of policy, not a broken skill.
        rec.status = SkillStatus.SCREENED_OUT if code == ReasonCode.SYMLINK_ESCAPE else SkillStatus.INVALID
        return _finish(rec, reasons, findings)
    folder_name = Path(job.found.rel_path).name if job.found.rel_path != "." else folder.name
    parsed = parse_skill_md(text, folder_name)
    rec.name, rec.description, rec.license = parsed.name, parsed.description, parsed.license
    rec.frontmatter = _jsonable(parsed.frontmatter)
    rec.frontmatter_status, rec.body, rec.warnings = parsed.status, parsed.body, parsed.warnings
    rec.body_hash = body_hash(parsed.body)
    rec.domain = guess_domain(parsed.name or "", parsed.description or "", parsed.body)
    for code, detail in parsed.errors:
        reasons.append(code)
        findings.append(Finding(code=code, rule="parse", file=job.found.skill_file, line=0, text=detail[:200]))
    findings.extend(_screened(job, bundle, parsed.frontmatter, parsed.body, folder_name))
    if s.screen.learned_opinion:
        findings = _learned(findings, rec, text)
    reasons.extend(f.code for f in findings if f.rule not in ("parse", "bundle") and f.code not in EVIDENCE_ONLY_CODES)
    if parsed.errors:
        rec.status = SkillStatus.INVALID
    elif any(c in BLOCKING_CODES for c in reasons):
        rec.status = SkillStatus.SCREENED_OUT
    return _finish(rec, reasons, findings)


def _screened(job: _Job, bundle: Bundle, frontmatter: dict, body: str, folder_name: str) -> list[Finding]:
    """The screen's findings, from the cache when the same bundle was screened by the same code and settings."""
    s = job.settings
    if s.screen_cache_dir is None:
        return screen_skill(bundle.texts, frontmatter, body, s.screen)
    folder, key = Path(s.screen_cache_dir), screen_cache.cache_key(s, bundle.digest, job.found.skill_file,
                                                                    folder_name)
    cached = screen_cache.load(folder, key)
    if cached is not None:
        return cached
    findings = screen_skill(bundle.texts, frontmatter, body, s.screen)
    screen_cache.save(folder, key, findings)
    return findings


def _learned(findings: list[Finding], rec: SkillRecord, skill_md: str) -> list[Finding]:
    """The learned second opinion on the account/live-service verdict (screen/learned.py), read from the record so
    the crawl and the training script build the same document."""
    doc = learned.document(rec.name, rec.description, rec.frontmatter, [f.rel_path for f in rec.files], rec.body)
    return learned.revise(findings, doc, rec.body, skill_md, rec.skill_file)


def _finish(rec: SkillRecord, reasons: list[ReasonCode], findings: list[Finding]) -> SkillRecord:
    rec.reasons = sorted(set(reasons), key=lambda c: c.value)
    rec.findings = findings
    return rec


def _jsonable(value):
    """Frontmatter may hold dates or other YAML types; keep it JSON-serialisable without losing the text."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def _mark_duplicates(records: list[SkillRecord], priority: dict[str, int], settings: CrawlSettings) -> None:
    """Canonical = not screened out, allowed licence, source priority, fewer warnings, then id (docs/screening.md)."""
    candidates = [r for r in records if r.status != SkillStatus.INVALID and r.fixture_of is None]
    items = [
        DedupItem(r.skill_id, f"{r.description or ''}\n{r.body}", (
            r.status == SkillStatus.SCREENED_OUT,
            ReasonCode.LICENCE_NOT_ALLOWED in r.reasons,
            priority.get(r.source, 100),
            len(r.warnings),
        ))
        for r in candidates
    ]
    dupes = find_duplicates(items, threshold=settings.dedup_threshold, k=settings.shingle_words,
                            num_perm=settings.dedup_num_perm)
    by_id = {r.skill_id: r for r in records}
    for sid, dup in dupes.items():
        rec = by_id[sid]
        code = ReasonCode.EXACT_DUPLICATE if dup.kind == "exact" else ReasonCode.NEAR_DUPLICATE
        rec.duplicate_of = dup.canonical
        rec.reasons = sorted(set(rec.reasons) | {code}, key=lambda c: c.value)
        rec.findings.append(Finding(code=code, rule="dedup", file="", line=0,
                                    text=f"{dup.kind} duplicate of {dup.canonical} (jaccard {dup.jaccard})"))
        if rec.status == SkillStatus.ELIGIBLE:
            rec.status = SkillStatus.DUPLICATE
