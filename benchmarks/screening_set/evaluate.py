"""Screen the development set exactly as the crawl does and score it against the hand labels.

Every entry's folder is extracted from its mirror into one temporary hub (`<n>/…`), the hub is crawled with the
production `crawl_paths` (bundle, parse, screen, dedup) and each record's reason codes are compared with the
labels. A naive keyword screen over SKILL.md is scored the same way, as the baseline the rules must beat.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mirror import SKILL_FILES, Mirror

from skill2env_dagster.models.skill import SkillRecord
from skill2env_dagster.skillhub.config import CrawlSettings
from skill2env_dagster.skillhub.crawl import crawl_paths

HERE = Path(__file__).resolve().parent
CODES = ("needs_external_account", "needs_live_service", "needs_hardware", "os_or_gui_specific", "persona_only",
         "no_actionable_content", "malicious", "harmful")
CRED_OR_LIVE = frozenset({"needs_external_account", "needs_live_service"})
# Labelling round of an entry -> the name its figures are reported under (`--round`); rounds 1 and 2 were scored
# together before the third existed, round 4 was a tuning round only (README.md > the rounds).
ROUND_GROUPS = {1: "1-2", 2: "1-2", 3: "3", 5: "5", 6: "6", 7: "7", 8: "8", 9: "9"}


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
    got: frozenset[str] = frozenset()
    naive: frozenset[str] = frozenset()
    record: SkillRecord | None = None
    missing: list[str] = field(default_factory=list)


def load_items(half: str | None = None) -> list[Item]:
    entries = yaml.safe_load((HERE / "entries.yaml").read_text())
    labels = {x["id"]: x for x in yaml.safe_load((HERE / "labels.yaml").read_text())}
    items = []
    for e in entries:
        lab = labels[e["id"]]
        if half in (None, e["half"]):
            items.append(Item(e["id"], e["repo"], e["commit"], e["path"], e["pool"], e["half"],
                              frozenset(lab["codes"]), lab["why"], e.get("round", 1)))
    return items


def missing_mirrors(items: Iterable[Item]) -> list[str]:
    pairs = sorted({(i.repo, i.commit) for i in items})
    return [f"{r}@{c[:12]}" for r, c in pairs if not Mirror(r, c).available()]


def screen_items(items: list[Item], settings: CrawlSettings | None = None) -> float:
    """Fill `got` (and `record`) for every item by crawling them as one hub; returns the crawl's wall seconds."""
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
        item.record = rec
        item.got = frozenset(c.value for c in rec.reasons if c.value in CODES) if rec else frozenset()
    return seconds


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


def targets(items: list[Item], attr: str = "got") -> dict[str, tuple[float | None, str]]:
    """The issue's four targets, each as (value, 'k/n')."""
    def got(i: Item) -> frozenset[str]:
        return getattr(i, attr)

    cred = [i for i in items if i.labels & CRED_OR_LIVE]
    hw = [i for i in items if "needs_hardware" in i.labels]
    mal = [i for i in items if "malicious" in i.labels]
    benign = [i for i in items if "malicious" not in i.labels]
    eligible = [i for i in items if not i.labels]

    def frac(hits: int, n: int) -> tuple[float | None, str]:
        return (hits / n if n else None, f"{hits}/{n}")

    return {
        "credentials_or_live_recall": frac(sum(bool(got(i) & CRED_OR_LIVE) for i in cred), len(cred)),
        "hardware_recall": frac(sum("needs_hardware" in got(i) for i in hw), len(hw)),
        "malicious_recall": frac(sum("malicious" in got(i) for i in mal), len(mal)),
        "malicious_false_positive_rate": frac(sum("malicious" in got(i) for i in benign), len(benign)),
        "eligible_wrongly_screened_out": frac(sum(bool(got(i)) for i in eligible), len(eligible)),
    }
