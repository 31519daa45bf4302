"""Decontamination: flag our tasks that copy a user-configured benchmark (word n-gram Jaccard and containment).

Jaccard alone misses a short benchmark task pasted verbatim into a long one (few shared n-grams relative to the
union), so containment -- shared n-grams over those of the smaller text -- is checked as well.

Candidates come from an exact inverted index (n-gram hash -> benchmark documents) rather than MinHash LSH: one
dictionary lookup per n-gram is linear in the text we hold, gives exact intersection sizes for free, and, unlike
an LSH tuned to Jaccard >= 0.8, it cannot drop the low-Jaccard/high-containment pairs this check exists to catch.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from skill2env_dagster.models.export import DecontamConfig, DecontamMatch, DecontamReport
from skill2env_dagster.probe.tasks import INSTRUCTION, find_task_dirs
from skill2env_dagster.reasons import InputError, ReasonCode

log = logging.getLogger(__name__)

_WORD = re.compile(r"\w+")
PLAIN_SUFFIXES = frozenset({".txt", ".md"})
TASK_YAML = "task.yaml"


@dataclass(frozen=True)
class TextDoc:
    """A text to compare: one of our tasks or one benchmark document."""

    doc_id: str
    text: str


def ngrams(text: str, n: int) -> set[int]:
    """Hashes of the distinct lower-cased word n-grams of a text (empty when it has fewer than n words)."""
    words = _WORD.findall(text.lower())
    return {hash(tuple(words[i : i + n])) for i in range(len(words) - n + 1)}


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise InputError(ReasonCode.UNREADABLE, f"benchmark file {path} unreadable: {e}") from e


def _yaml_instruction(path: Path) -> str:
    """The `instruction` of a Terminal-Bench 1 style task.yaml; a malformed file is the user's to fix."""
    try:
        doc = yaml.safe_load(_read(path))
    except yaml.YAMLError as e:
        raise InputError(ReasonCode.INVALID_YAML, f"benchmark task {path} is not valid YAML: {e}") from e
    if not isinstance(doc, dict) or not isinstance(doc.get("instruction"), str):
        raise InputError(ReasonCode.UNREADABLE, f"benchmark task {path} has no `instruction` string")
    return doc["instruction"]


def _docs_in_dir(root: Path) -> Iterable[TextDoc]:
    # A folder holding instruction.md (Harbor) or task.yaml (Terminal-Bench 1) is one task: its instruction is the
    # text, its other files are not.
    harbor = sorted(p.parent for p in root.rglob(INSTRUCTION) if p.is_file())
    legacy = sorted(p.parent for p in root.rglob(TASK_YAML) if p.is_file() and p.parent not in harbor)
    for d in harbor:
        yield TextDoc(_doc_id(root, d), _read(d / INSTRUCTION))
    for d in legacy:
        yield TextDoc(_doc_id(root, d), _yaml_instruction(d / TASK_YAML))
    tasks = harbor + legacy
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.suffix.lower() in PLAIN_SUFFIXES and not any(d in p.parents for d in tasks):
            yield TextDoc(_doc_id(root, p), _read(p))


def _doc_id(root: Path, path: Path) -> str:
    rel = path.relative_to(root).as_posix()
    return root.name if rel == "." else f"{root.name}/{rel}"


def load_benchmark_docs(paths: Sequence[Path | str]) -> list[TextDoc]:
    """Benchmark texts under each path: every Harbor task's instruction.md, every task.yaml's `instruction`,
    and every other .txt/.md file."""
    docs: list[TextDoc] = []
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            docs.append(TextDoc(path.name, _read(path)))
        elif path.is_dir():
            docs.extend(_docs_in_dir(path))
        else:
            raise InputError(ReasonCode.SOURCE_UNAVAILABLE, f"benchmark path {path} does not exist")
    return docs


def task_texts(root: Path) -> list[TextDoc]:
    """Our side: the instruction.md of every task folder under root (what an agent would be shown)."""
    out = []
    for d in find_task_dirs(root):
        rel = d.relative_to(root).as_posix()
        text = (d / INSTRUCTION).read_text(encoding="utf-8", errors="replace") if (d / INSTRUCTION).is_file() else ""
        out.append(TextDoc(rel if rel != "." else d.name, text))
    return out


class NgramIndex:
    """Benchmark n-gram hash -> documents holding it; answers exact overlap sizes for a query text."""

    def __init__(self, docs: Sequence[TextDoc], n: int) -> None:
        self.n = n
        self.ids = [d.doc_id for d in docs]
        self.sizes: list[int] = []
        self.postings: dict[int, list[int]] = {}
        for i, doc in enumerate(docs):
            grams = ngrams(doc.text, n)
            self.sizes.append(len(grams))
            for g in grams:
                self.postings.setdefault(g, []).append(i)

    def overlaps(self, grams: set[int]) -> Counter[int]:
        """Shared distinct n-grams per benchmark document."""
        hits: Counter[int] = Counter()
        for g in grams:
            hits.update(self.postings.get(g, ()))
        return hits


def _strength(m: DecontamMatch) -> tuple[bool, float, float]:
    return (m.flagged, m.containment, m.jaccard)


def _best_match(task: TextDoc, grams: set[int], index: NgramIndex, cfg: DecontamConfig) -> DecontamMatch | None:
    best: DecontamMatch | None = None
    for doc, shared in index.overlaps(grams).items():
        size = index.sizes[doc]
        jaccard = shared / (len(grams) + size - shared)
        containment = shared / min(len(grams), size)
        flagged = jaccard >= cfg.jaccard_threshold or containment >= cfg.containment_threshold
        match = DecontamMatch(
            task_id=task.doc_id, benchmark_id=index.ids[doc], shared=shared, jaccard=jaccard,
            containment=containment, flagged=flagged, reason=ReasonCode.CONTAMINATED if flagged else None,
        )
        if best is None or _strength(match) > _strength(best):
            best = match
    return best


def check_contamination(tasks: Sequence[TextDoc], benchmark: Sequence[TextDoc], cfg: DecontamConfig) -> DecontamReport:
    """Compare every task with every benchmark document through the n-gram index; keep each task's best match."""
    index = NgramIndex(benchmark, cfg.ngram)
    too_short = [index.ids[i] for i, size in enumerate(index.sizes) if size == 0]
    matches: list[DecontamMatch] = []
    for task in tasks:
        grams = ngrams(task.text, cfg.ngram)
        if not grams:
            too_short.append(task.doc_id)
            continue
        best = _best_match(task, grams, index, cfg)
        if best is not None:
            matches.append(best)
    flagged = [m.task_id for m in matches if m.flagged]
    log.info("decontam tasks=%d benchmark_docs=%d flagged=%d", len(tasks), len(benchmark), len(flagged))
    return DecontamReport(
        config=cfg, n_tasks=len(tasks), n_benchmark_docs=len(benchmark), too_short=too_short,
        flagged=flagged, matches=matches,
    )


def decontaminate(tasks_root: Path, cfg: DecontamConfig) -> DecontamReport:
    """Check the task folders under tasks_root against the benchmark paths configured in cfg."""
    return check_contamination(task_texts(tasks_root), load_benchmark_docs(cfg.benchmark_paths), cfg)
