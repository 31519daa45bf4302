"""`probe_retrieval`: does each task still identify its own skill among all candidate skills?

TF-IDF over instruction+rubric, rubric only and instruction only reproduces the reference probe; BM25 checks the
result is not an artefact of one weighting; the masked modes remove the own skill's most distinctive terms from
the query, so what still retrieves the skill is shared method rather than shared nouns.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from skill2env_dagster.models.probe import (
    ALL_MODES,
    BASE_MODES,
    ModeResult,
    ProbeConfig,
    ProbeReport,
    ProbeTaskResult,
    SkillProbeScore,
)
from skill2env_dagster.models.skill import SkillRecord
from skill2env_dagster.probe.index import SkillIndex
from skill2env_dagster.probe.metrics import grouped_metrics, rank_metrics, truth_ranks
from skill2env_dagster.probe.tasks import ProbeTask
from skill2env_dagster.reasons import InputError, ReasonCode

log = logging.getLogger(__name__)

PRIMARY_MODE = "instruction_rubric"


def candidate_skills(records: Sequence[SkillRecord]) -> list[SkillRecord]:
    """The probe's candidates: eligible skills only (duplicates and screened-out skills are not in the index)."""
    return [r for r in records if r.is_eligible]


def _split_mode(mode: str) -> tuple[str, str]:
    """'bm25_rubric_only' -> ('bm25', 'rubric_only'); plain base modes are TF-IDF."""
    if mode not in ALL_MODES:
        raise InputError(ReasonCode.INTERNAL_ERROR, f"unknown probe mode {mode!r}; known: {', '.join(ALL_MODES)}")
    for prefix in ("bm25", "masked"):
        if mode.startswith(prefix + "_"):
            return prefix, mode[len(prefix) + 1 :]
    return "tfidf", mode


PARTS: dict[str, tuple[str, ...]] = {
    "instruction_only": ("instruction",),
    "rubric_only": ("rubric",),
    "instruction_rubric": ("instruction", "rubric"),
}


class _Queries:
    """Term counts of every matched task, split into instruction and rubric, shared by all modes.

    Both scorers are linear in the query counts, so a combined query's scores are the sum of its parts' scores
    and a masked query's scores are the full scores minus those of the masked terms alone; that turns nine
    score matrices into four large sparse products and two small ones.
    """

    def __init__(self, index: SkillIndex, tasks: Sequence[ProbeTask], truth: np.ndarray, mask_top_k: int) -> None:
        self.index = index
        self.parts = {
            "instruction": index.counts([t.instruction for t in tasks]),
            "rubric": index.counts([t.rubric for t in tasks]),
        }
        self.truth = truth
        self.mask_top_k = mask_top_k
        self._masked: dict[str, sp.csr_matrix] = {}
        self._own: sp.csr_matrix | None = None
        self.bm25 = True

    def masked_part(self, part: str) -> sp.csr_matrix:
        """Counts of only those query terms that are among the own skill's distinctive terms."""
        if part not in self._masked:
            if self._own is None:
                self._own = self.index.distinctive_terms(self.mask_top_k)[self.truth]
            self._masked[part] = sp.csr_matrix(self.parts[part].multiply(self._own))
        return self._masked[part]

    def prepare(self, modes: Sequence[str]) -> None:
        """Build everything the worker threads share (masks, BM25 weights) before they start."""
        self.bm25 = any(_split_mode(m)[0] == "bm25" for m in modes)
        if self.bm25:
            self.index.scores(self.parts["rubric"][:0], bm25=True)
        for mode in modes:
            if _split_mode(mode)[0] == "masked":
                for part in PARTS[_split_mode(mode)[1]]:
                    self.masked_part(part)

    def nonempty(self, kind: str, parts: tuple[str, ...]) -> np.ndarray:
        """Per task: how many distinct indexed terms its query keeps (0 = empty query)."""
        total = sum(np.diff(self.parts[p].indptr) for p in parts)
        if kind == "masked":
            total = total - sum(np.diff(self.masked_part(p).indptr) for p in parts)
        return np.asarray(total)


class _Block:
    """Scores of one batch of queries, computed lazily per (scorer, part) and reused across modes."""

    def __init__(self, q: _Queries, lo: int, hi: int) -> None:
        self.q, self.lo, self.hi = q, lo, hi
        self._cache: dict[tuple[str, bool], dict[str, np.ndarray]] = {}

    def raw(self, scorer: str, part: str, masked_only: bool = False) -> np.ndarray:
        key = (part, masked_only)
        if key not in self._cache:
            counts = self.q.masked_part(part) if masked_only else self.q.parts[part]
            self._cache[key] = self.q.index.scores(counts[self.lo : self.hi], bm25=self.q.bm25 and not masked_only)
        return self._cache[key][scorer]

    def ranks(self, mode: str, empty: np.ndarray) -> np.ndarray:
        kind, base = _split_mode(mode)
        scorer = "bm25" if kind == "bm25" else "tfidf"
        scores = np.add.reduce([self.raw(scorer, p) for p in PARTS[base]])
        if kind == "masked":
            scores = scores - np.add.reduce([self.raw(scorer, p, masked_only=True) for p in PARTS[base]])
        scores[empty[self.lo : self.hi]] = 0.0
        return truth_ranks(scores, self.q.truth[self.lo : self.hi])


def _rank_modes(
    q: _Queries, modes: Sequence[str], batch: int, workers: int
) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    n = len(q.truth)
    empty = {m: q.nonempty(_split_mode(m)[0], PARTS[_split_mode(m)[1]]) == 0 for m in modes}
    ranks = {m: np.empty(n, dtype=np.int64) for m in modes}

    def run(lo: int) -> None:
        block = _Block(q, lo, min(lo + batch, n))
        for m in modes:
            ranks[m][lo : block.hi] = block.ranks(m, empty[m])

    q.prepare(modes)
    # scipy's sparse products and numpy's comparisons release the GIL, so threads use every core.
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(run, range(0, n, batch)))
    return ranks, {m: int(empty[m].sum()) for m in modes}


def _per_skill(
    index: SkillIndex, truth: np.ndarray, ranks: dict[str, np.ndarray], masked: str
) -> list[SkillProbeScore]:
    out: list[SkillProbeScore] = []
    prim = ranks.get(PRIMARY_MODE)
    for i, sid in enumerate(index.skill_ids):
        sel = truth == i
        n = int(sel.sum())
        score = SkillProbeScore(skill_id=sid, domain=index.domains[i], n_tasks=n)
        if n and prim is not None:
            m = rank_metrics(prim[sel])
            score.top1, score.mrr = m.top1, m.mrr
        if n and masked in ranks:
            score.masked_top1 = rank_metrics(ranks[masked][sel]).top1
        out.append(score)
    return out


def _task_results(
    index: SkillIndex, tasks: Sequence[ProbeTask], truth: np.ndarray, ranks: dict[str, np.ndarray]
) -> list[ProbeTaskResult]:
    return [
        ProbeTaskResult(
            task_id=t.task_id,
            task_name=t.name,
            source_skill=t.source_skill,
            generator=t.generator,
            domain=index.domains[truth[j]],
            status="scored",
            ranks={m: int(r[j]) for m, r in ranks.items()},
        )
        for j, t in enumerate(tasks)
    ]


def _unmatched(task: ProbeTask) -> ProbeTaskResult:
    return ProbeTaskResult(
        task_id=task.task_id,
        task_name=task.name,
        source_skill=task.source_skill,
        generator=task.generator,
        status="unmatched",
        reason=ReasonCode.SOURCE_SKILL_UNKNOWN,
        detail=f"source_skill {task.source_skill!r} is not an eligible candidate skill",
    )


def _own_skill_resolver(skills: Sequence[SkillRecord]):
    """A task names its skill by id, but ids embed the source name, which differs between a configured crawl
    (`examples__csv-dedupe`) and a crawl of the bare folder (`skillhub__csv-dedupe`). So: exact id first, then the
    content address (`source_bundle_digest`, unique), then the path part of the id when exactly one skill has it."""
    ids = {s.skill_id for s in skills}
    by_digest: dict[str, list[str]] = {}
    by_path: dict[str, list[str]] = {}
    for s in skills:
        by_digest.setdefault(s.bundle_digest, []).append(s.skill_id)
        by_path.setdefault(s.skill_id.partition("__")[2], []).append(s.skill_id)

    def resolve(task: ProbeTask) -> str:
        if task.source_skill in ids:
            return task.source_skill
        digest = str(task.metadata.get("source_bundle_digest") or "")
        for candidates in (by_digest.get(digest, []), by_path.get(task.source_skill.partition("__")[2], [])):
            if len(candidates) == 1:
                return candidates[0]
        return task.source_skill

    return resolve


def probe_retrieval(
    skills: Sequence[SkillRecord],
    tasks: Sequence[ProbeTask],
    config: ProbeConfig | None = None,
    invalid: Sequence[ProbeTaskResult] = (),
) -> ProbeReport:
    """Rank every candidate skill for every task and report how often the task's own skill comes first."""
    cfg = config or ProbeConfig()
    for mode in cfg.modes:
        _split_mode(mode)
    started = time.perf_counter()
    index = SkillIndex(skills, k1=cfg.bm25_k1, b=cfg.bm25_b)
    resolve = _own_skill_resolver(skills)
    tasks = [replace(t, source_skill=resolve(t)) for t in tasks]
    matched = [t for t in tasks if t.source_skill in index.position]
    unmatched = [_unmatched(t) for t in tasks if t.source_skill not in index.position]
    truth = np.array([index.position[t.source_skill] for t in matched], dtype=np.int64)
    queries = _Queries(index, matched, truth, cfg.mask_top_k)
    domains = [index.domains[i] for i in truth]
    generators = [t.generator for t in matched]
    ranks, empties = _rank_modes(queries, cfg.modes, cfg.batch_size, cfg.workers)
    modes: dict[str, ModeResult] = {}
    for mode in cfg.modes:
        modes[mode] = ModeResult(
            **rank_metrics(ranks[mode]).model_dump(),
            empty_queries=empties[mode],
            by_domain=grouped_metrics(ranks[mode], domains),
            by_generator=grouped_metrics(ranks[mode], generators),
        )
    scored = _task_results(index, matched, truth, ranks)
    primary = PRIMARY_MODE if PRIMARY_MODE in ranks else (cfg.modes[0] if cfg.modes else PRIMARY_MODE)
    worst = sorted(scored, key=lambda r: (-r.ranks.get(primary, 0), r.task_id))[: cfg.worst_n]
    n = index.n_skills
    report = ProbeReport(
        n_skills=n,
        chance=1.0 / n,
        chance_top10=min(10, n) / n,
        n_tasks=len(tasks) + len(invalid),
        n_scored=len(scored),
        n_unmatched=len(unmatched),
        n_invalid=len(invalid),
        primary_mode=primary,
        modes=modes,
        masking_drop={
            b: modes[b].top1 - modes[f"masked_{b}"].top1 for b in BASE_MODES if b in modes and f"masked_{b}" in modes
        },
        worst_tasks=worst,
        per_task=scored + unmatched + list(invalid),
        per_skill=_per_skill(index, truth, ranks, f"masked_{PRIMARY_MODE}"),
        config=cfg,
        seconds=time.perf_counter() - started,
    )
    log.info("probe skills=%d tasks=%d scored=%d seconds=%.2f", n, report.n_tasks, report.n_scored, report.seconds)
    return report
