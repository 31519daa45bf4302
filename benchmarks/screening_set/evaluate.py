"""Screen the development set exactly as the crawl does and score it against the hand labels.

Every entry's folder is extracted from its mirror into one temporary hub (`<n>/…`), the hub is crawled with the
production `crawl_paths` (bundle, parse, screen, dedup) and each record's reason codes are compared with the
labels. A naive keyword screen over SKILL.md is scored the same way, as the baseline the rules must beat.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml
from scipy.stats import bootstrap

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mirror import SKILL_FILES, Mirror

from skill2env_dagster.llm import LLMClient, LLMConfig
from skill2env_dagster.llm.prompts import prompt_version
from skill2env_dagster.models.skill import SkillRecord
from skill2env_dagster.skillhub.config import CrawlSettings
from skill2env_dagster.skillhub.crawl import crawl_paths
from skill2env_dagster.skillhub.opinion import OPINION_TEMPLATE, OpinionCache, second_opinion

HERE = Path(__file__).resolve().parent
CODES = ("needs_external_account", "needs_live_service", "needs_hardware", "os_or_gui_specific", "persona_only",
         "no_actionable_content", "malicious", "harmful")
CRED_OR_LIVE = frozenset({"needs_external_account", "needs_live_service"})
# Labelling round of an entry -> the name its figures are reported under (`--round`); rounds 1 and 2 were scored
# together before the third existed, round 4 was a tuning round only (README.md > the rounds).
ROUND_GROUPS = {1: "1-2", 2: "1-2", 3: "3", 5: "5", 6: "6", 7: "7", 8: "8", 9: "9", 10: "10"}


@dataclass
class Item:
    id: str
    repo: str
    commit: str
    path: str
    pool: str
    half: str
    labels: frozenset[str]
    why: str
    round: int = 1  # labelling round; entries of rounds 1 and 2 carry no `round` key (README.md > the rounds)
    group: str = ""  # the split's unit: a lure campaign, else the entry itself (README.md > The split)
    got: frozenset[str] = frozenset()
    naive: frozenset[str] = frozenset()
    record: SkillRecord | None = None
    missing: list[str] = field(default_factory=list)
    opinion: dict[str, frozenset[str]] = field(default_factory=dict)  # codes per second-opinion mode, when asked


def load_items(half: str | None = None) -> list[Item]:
    entries = yaml.safe_load((HERE / "entries.yaml").read_text())
    labels = {x["id"]: x for x in yaml.safe_load((HERE / "labels.yaml").read_text())}
    items = []
    for e in entries:
        lab = labels[e["id"]]
        if half in (None, e["half"]):
            items.append(Item(e["id"], e["repo"], e["commit"], e["path"], e["pool"], e["half"],
                              frozenset(lab["codes"]), lab["why"], e.get("round", 1), e["group"]))
    return items


def missing_mirrors(items: Iterable[Item]) -> list[str]:
    pairs = sorted({(i.repo, i.commit) for i in items})
    return [f"{r}@{c[:12]}" for r, c in pairs if not Mirror(r, c).available()]


def codes_of(record: SkillRecord | None) -> frozenset[str]:
    """The record's screening codes the labels use."""
    return frozenset(c.value for c in record.reasons if c.value in CODES) if record else frozenset()


def screen_items(items: list[Item], settings: CrawlSettings | None = None,
                 opinion: Callable[[SkillRecord], dict[str, frozenset[str]]] | None = None) -> float:
    """Fill `got` (and `record`) for every item by crawling them as one hub; returns the crawl's wall seconds.
    `opinion` (a model's second opinion, codes per mode) runs on each record while its files are still on disk."""
    mirrors: dict[tuple[str, str], Mirror] = {}
    with tempfile.TemporaryDirectory(prefix="s2e-screening-set-") as tmp:
        hub = Path(tmp) / "hub"
        for n, item in enumerate(items):
            m = mirrors.setdefault((item.repo, item.commit), Mirror(item.repo, item.commit))
            folder = hub / f"{n:04d}"
            item.missing = m.extract(item.path, folder)
            skill_md = next((folder / s for s in SKILL_FILES if (folder / s).is_file()), None)
            item.naive = naive_screen(skill_md.read_text(errors="replace")) if skill_md else frozenset()
        t0 = time.perf_counter()
        result = crawl_paths([hub], settings)
        seconds = time.perf_counter() - t0
        by_folder = {r.rel_path: r for r in result.records}
        for n, item in enumerate(items):
            rec = by_folder.get(f"{n:04d}")
            item.record, item.got = rec, codes_of(rec)
            if opinion is not None and rec is not None:
                item.opinion = opinion(rec)
    return seconds


# ---------------------------------------------------------------------------------- model second opinion
OPINION_MODES = ("adds", "adds_and_clears")  # settings.screen.second_opinion_clears off / on
OPINION_FAILED = "failed"  # the mode key of an item whose call failed (its codes: the screen's own)
DISAGREEMENTS = "disagreements"  # `<kind>#<n>` per recorded difference (unverified quotes, kept_unseen, ...)


def model_opinion(config: LLMConfig, cache_dir: Path | None) -> Callable[[SkillRecord], dict[str, frozenset[str]]]:
    """A model's second opinion as the snapshot asks it, one call per skill (cached by bundle digest and prompt),
    scored both ways from the same reply: asked with clearing on, the add-only verdict is the cleared one plus the
    codes it cleared (clearing removes nothing else). A failed call scores as the screen alone."""
    client = LLMClient(config)
    version = prompt_version(OPINION_TEMPLATE, config.fingerprint())
    cache = OpinionCache(cache_dir)

    def ask(record: SkillRecord) -> dict[str, frozenset[str]]:
        out = second_opinion(record, client, model=config.model, prompt_version=version, cache=cache, may_clear=True)
        op = out.second_opinion
        if op is None or op.status == "failed":
            return {OPINION_FAILED: codes_of(record)}
        clears = codes_of(out)
        return {"adds": clears | {c.value for c in op.cleared if c.value in CODES}, "adds_and_clears": clears,
                DISAGREEMENTS: frozenset(f"{d.kind}#{n}" for n, d in enumerate(op.disagreements))}

    return ask


# ------------------------------------------------------------------------------------------ naive baseline
NAIVE = {
    "needs_external_account": ("api key", "api_key", "apikey", "token", "oauth", "login", "log in", "sign in",
                               "account", "credential", "secret"),
    "needs_live_service": ("http://", "https://", " api", "curl ", "fetch"),
    "needs_hardware": ("device", "hardware", "bluetooth", "printer", "arduino", "raspberry", "gpu", "sensor",
                       "serial", "usb", "robot"),
    "os_or_gui_specific": ("macos", "applescript", "osascript", "windows only", "windows-only"),
    "malicious": ("| bash", "|bash", "| sh", "base64 -d", "ignore previous instructions",
                  "exfiltrat", "password-protected", ".exe"),
}


def naive_screen(skill_md: str) -> frozenset[str]:
    """The baseline: a code fires when any of its keywords occurs anywhere in SKILL.md (lower-cased)."""
    text = skill_md.lower()
    return frozenset(code for code, words in NAIVE.items() if any(w in text for w in words))


# ------------------------------------------------------------------------------------------------ scores
@dataclass
class Score:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None


def score(items: list[Item], predicted, wanted) -> Score:
    """`predicted(item)`/`wanted(item)` are booleans for one notion (a code, or a union of codes)."""
    s = Score()
    for i in items:
        p, w = predicted(i), wanted(i)
        s.tp += p and w
        s.fp += p and not w
        s.fn += w and not p
    return s


Target = tuple[Callable[[Item], bool], Callable[[frozenset[str]], bool]]
# The targets: which items each is measured on, and what counts as a hit among the codes a screen gave.
TARGETS: dict[str, Target] = {
    "credentials_or_live_recall": (lambda i: bool(i.labels & CRED_OR_LIVE), lambda got: bool(got & CRED_OR_LIVE)),
    "hardware_recall": (lambda i: "needs_hardware" in i.labels, lambda got: "needs_hardware" in got),
    "malicious_recall": (lambda i: "malicious" in i.labels, lambda got: "malicious" in got),
    "malicious_false_positive_rate": (lambda i: "malicious" not in i.labels, lambda got: "malicious" in got),
    "eligible_wrongly_screened_out": (lambda i: not i.labels, bool),
}


def targets(items: list[Item], attr: str = "got") -> dict[str, tuple[float | None, str]]:
    """The issue's targets, each as (value, 'k/n')."""
    out: dict[str, tuple[float | None, str]] = {}
    for name, (member, hit) in TARGETS.items():
        hits = [hit(getattr(i, attr)) for i in items if member(i)]
        out[name] = (sum(hits) / len(hits) if hits else None, f"{sum(hits)}/{len(hits)}")
    return out


def target_intervals(items: list[Item], attr: str = "got", level: float = 0.95,
                     resamples: int = 2000) -> dict[str, tuple[float, float] | None]:
    """How far each target could move on another draw of skills like these: a percentile bootstrap that resamples
    whole split groups (a lure campaign counts once, as the split does), seeded, so the same labels and verdicts
    always print the same interval. None when a target has fewer than two groups."""
    out: dict[str, tuple[float, float] | None] = {}
    for name, (member, hit) in TARGETS.items():
        per_group: dict[str, list[int]] = {}
        for i in items:
            if member(i):
                counts = per_group.setdefault(i.group or i.id, [0, 0])
                counts[0] += hit(getattr(i, attr))
                counts[1] += 1
        if len(per_group) < 2:
            out[name] = None
            continue
        hits, sizes = (np.array(col, dtype=float) for col in zip(*per_group.values(), strict=True))
        res = bootstrap((hits, sizes), lambda h, n, axis: h.sum(axis=axis) / n.sum(axis=axis), paired=True,
                        vectorized=True, confidence_level=level, n_resamples=resamples, method="percentile",
                        rng=np.random.default_rng(0))
        out[name] = (float(res.confidence_interval.low), float(res.confidence_interval.high))
    return out
