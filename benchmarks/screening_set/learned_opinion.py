"""Experiment: a learned second opinion (TF-IDF + logistic regression) on the credentials-or-live-service decision.

Issue 14 asks whether an offline linear text classifier, trained on the tune half's labels only, generalises better
than the hand-written keyword rules, which reach the targets on the tune half but not on the held-out test half.
The classifier never sees a test-half skill while the design is chosen:

    .venv/bin/python benchmarks/screening_set/learned_opinion.py            # tune-half cross-validation only
    .venv/bin/python benchmarks/screening_set/learned_opinion.py --final    # frozen design, test half, once

Cross-validation (tune half: 499 skills, 457 before the ninth labelling round, 408 before the eighth, 369 before the
seventh, 334 when the design was chosen): 5 folds grouped by the entry's `group` (a lure campaign stays in one fold),
folds assigned by a hash of the group (deterministic); and leave-one-labelling-round-out (rounds 1-2, 3, 5, 6, 7, 8,
9), the split that
showed the keyword rules only fix the wording they were tuned on. Out-of-fold probabilities are combined with the
rules' own verdicts on the same skills.

Combination (documented in the set's README): the rules stay the first opinion; the classifier may
- clear: drop the rules' needs_external_account / needs_live_service verdicts when its probability is below
  `low` and the rules' cred/live evidence is weak (at most `max_rules` distinct rules, none from frontmatter
  requirements); never when the rules say malicious (that verdict and the skill's other codes are never touched);
- add: report needs_live_service when the rules report neither code, its probability is at least `high` and
  SKILL.md holds a supporting line (the line whose terms carry the largest positive weight, kept as evidence);
  `anchored` rows (the seventh round's, the crawl's rule) only on a line naming a remote host, URL, account or auth
  term, and never on a malicious or stand-in-waived skill.
Caveat: the rules were tuned on these very skills, so on the tune half they are better than they are on unseen
skills; cross-validation therefore undervalues a classifier that overrules them.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml
from scipy.sparse import hstack
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

sys.path.insert(0, str(Path(__file__).resolve().parent))

from evaluate import CRED_OR_LIVE, ROUND_GROUPS, Item, load_items, missing_mirrors, screen_items, targets

from skill2env_dagster.skillhub.config import CrawlSettings
from skill2env_dagster.skillhub.screen import learned
from skill2env_dagster.skillhub.screen.engine import ScreenSettings

TARGETS = ("credentials_or_live_recall", "hardware_recall", "malicious_recall", "malicious_false_positive_rate",
           "eligible_wrongly_screened_out")


# ---------------------------------------------------------------------------------------------- features
def document(item: Item) -> str:
    """The crawl's document for the classifier (screen/learned.py `document`), from the item's record."""
    rec = item.record
    if rec is None:
        return ""
    return learned.document(rec.name, rec.description, rec.frontmatter, [f.rel_path for f in rec.files], rec.body)


@dataclass(frozen=True)
class Design:
    name: str
    word: bool
    char: bool
    c: float


DESIGNS = (
    Design("word 1-2", True, False, 4.0),
    Design("char 3-5", False, True, 4.0),
    Design("word 1-2 + char 3-5", True, True, 4.0),
    Design("word 1-2 + char 3-5, C=1", True, True, 1.0),
)


class Model:
    """TF-IDF (sublinear tf, min_df 2) over words and/or char n-grams within word boundaries, then a class-balanced
    logistic regression (liblinear: deterministic)."""

    def __init__(self, design: Design) -> None:
        self.design = design
        self.vecs: list[TfidfVectorizer] = []
        if design.word:
            self.vecs.append(TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True, lowercase=True,
                                             token_pattern=r"(?u)\b\w[\w.-]*\w\b|\b\w\b", max_features=50_000))
        if design.char:
            self.vecs.append(TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), min_df=2, sublinear_tf=True,
                                             max_features=80_000))
        self.clf = LogisticRegression(C=design.c, class_weight="balanced", solver="liblinear", max_iter=2000,
                                      random_state=0)

    def _x(self, docs: list[str], fit: bool = False):
        return hstack([v.fit_transform(docs) if fit else v.transform(docs) for v in self.vecs]).tocsr()

    def fit(self, docs: list[str], y: np.ndarray) -> Model:
        self.clf.fit(self._x(docs, fit=True), y)
        return self

    def proba(self, docs: list[str]) -> np.ndarray:
        return self.clf.predict_proba(self._x(docs))[:, 1]

    def evidence(self, body: str, sign: int, anchored: bool = False) -> tuple[int, str, float] | None:
        """(line number, line, score) of the body line whose terms push the decision furthest in `sign`'s
        direction (+1 needs, -1 local); None when no line pushes that way. `anchored`: only the lines the crawl
        may quote (screen/learned.py `evidence_lines`: naming a remote host, URL, account or auth term)."""
        allowed = set(learned.evidence_lines(body)) if anchored else None
        lines = [(n, ln.strip()) for n, ln in enumerate(body.split("\n"), 1)
                 if len(ln.strip()) >= learned.MIN_EVIDENCE_CHARS and (allowed is None or ln.strip() in allowed)]
        if not lines:
            return None
        scores = sign * (self._x([ln for _, ln in lines]) @ self.clf.coef_[0])
        k = int(np.argmax(scores))
        return (lines[k][0], lines[k][1][:200], float(scores[k])) if scores[k] > 0 else None


def positive(item: Item) -> int:
    return int(bool(item.labels & CRED_OR_LIVE))


# ---------------------------------------------------------------------------------------------- combination
@dataclass(frozen=True)
class Combine:
    low: float | None  # clear below this probability (None: never clear)
    high: float | None  # add at or above this probability (None: never add)
    max_rules: int = 1
    anchored: bool = False  # add only on a line naming a remote host, URL, account or auth term (the crawl's rule)

    def label(self) -> str:
        clear = "never clear" if self.low is None else f"clear<{self.low} (<= {self.max_rules} rule)"
        return f"{clear}  add>={self.high}{' anchored' if self.anchored else ''}"


def cred_live_rules(item: Item) -> set[str]:
    """Distinct rules behind the rules' cred/live verdict (implied copies folded into their source rule)."""
    rec = item.record
    if rec is None:
        return set()
    return {f.rule.split("@")[0] for f in rec.findings if f.code.value in CRED_OR_LIVE}


def held_back(item: Item) -> bool:
    """The crawl adds nothing to a skill any finding calls malicious or whose live service the stand-in policy
    waived (screen/learned.py `revise`); the sixth round's experiment rows did not check this."""
    rec = item.record
    return "malicious" in item.got or (rec is not None and any(f.code.value == "standin_possible"
                                                               for f in rec.findings))


def combined(item: Item, p: float, model: Model | None, how: Combine) -> frozenset[str]:
    got = set(item.got)
    rules_say = bool(got & CRED_OR_LIVE)
    if rules_say and how.low is not None and p < how.low and "malicious" not in got:
        rules = cred_live_rules(item)
        if len(rules) <= how.max_rules and not any(r.startswith("req.") for r in rules):
            got -= CRED_OR_LIVE
    elif (not rules_say and how.high is not None and p >= how.high and not (how.anchored and held_back(item))
          and (model is None or item.record is None
               or model.evidence(item.record.body, +1, how.anchored) is not None)):
        got.add("needs_live_service")
    return frozenset(got)


def figures(items: list[Item], verdict: Callable[[Item], frozenset[str]]) -> dict[str, tuple[float | None, str]]:
    saved = [i.got for i in items]
    for i in items:
        i.got = verdict(i)
    try:
        return targets(items, "got")
    finally:
        for i, g in zip(items, saved, strict=True):
            i.got = g


def fmt_row(name: str, t: dict[str, tuple[float | None, str]]) -> str:
    cells = [f"{100 * t[k][0]:5.1f}% ({t[k][1]:>7s})" if t[k][0] is not None else "n/a" for k in TARGETS]
    return f"{name:44s} " + " ".join(f"{c:>17s}" for c in cells)


HEADER = f"{'':44s} " + " ".join(f"{h:>17s}" for h in ("cred/live recall", "hardware", "mal recall", "mal FP",
                                                           "eligible out"))


# ---------------------------------------------------------------------------------------------- cross-validation
def fold_of(item: Item, scheme: str) -> str:
    if scheme == "rounds":
        return ROUND_GROUPS[item.round]
    group = GROUPS[item.id]
    return str(int(hashlib.sha256(f"learned-cv-v1{group}".encode()).hexdigest(), 16) % 5)


GROUPS: dict[str, str] = {}
# the rules' own verdicts: the crawl with the learned opinion switched off
RULES_ONLY = CrawlSettings(screen=ScreenSettings(learned_opinion=False))


def out_of_fold(items: list[Item], design: Design, scheme: str) -> tuple[np.ndarray, dict[str, Model]]:
    """Out-of-fold probabilities, and the model that scored each item (for its evidence line)."""
    docs = [document(i) for i in items]
    y = np.array([positive(i) for i in items])
    folds = [fold_of(i, scheme) for i in items]
    p = np.zeros(len(items))
    models: dict[str, Model] = {}
    for f in sorted(set(folds)):
        tr = [k for k, g in enumerate(folds) if g != f]
        te = [k for k, g in enumerate(folds) if g == f]
        m = Model(design).fit([docs[k] for k in tr], y[tr])
        p[te] = m.proba([docs[k] for k in te])
        models.update({items[k].id: m for k in te})
    return p, models


ADD_ONLY = tuple(Combine(None, h, anchored=True) for h in (0.5, 0.55, 0.6, 0.65, 0.7))  # the seventh round's
COMBINES = (
    *ADD_ONLY, Combine(None, 0.5), Combine(None, 0.7), Combine(None, 0.8), Combine(None, 0.9),
    Combine(0.1, None), Combine(0.2, None), Combine(0.3, None), Combine(0.2, None, 2),
    Combine(0.2, 0.8), Combine(0.3, 0.7), Combine(0.1, 0.9),
)


def alone(pp: dict[str, float]) -> Callable[[Item], frozenset[str]]:
    """The classifier alone at 0.5 decides the cred/live codes; the rules' other codes stay."""
    return lambda i: (i.got - CRED_OR_LIVE) | (CRED_OR_LIVE if pp[i.id] >= 0.5 else frozenset())


def with_opinion(pp: dict[str, float], how: Combine, model: Model | dict[str, Model] | None = None
                 ) -> Callable[[Item], frozenset[str]]:
    """`model`: the one that scored every item, or per item id (out-of-fold), for the evidence line."""
    return lambda i: combined(i, pp[i.id], model.get(i.id) if isinstance(model, dict) else model, how)


def cross_validate(items: list[Item]) -> None:
    y = np.array([positive(i) for i in items])
    print(HEADER)
    print(fmt_row("rules (tune half; the rules were tuned on it)", figures(items, lambda i: i.got)))
    for scheme in ("groups", "rounds"):
        print(f"\n=== {scheme}: {'5 folds by hash of group' if scheme == 'groups' else 'leave one round out'}")
        for design in DESIGNS:
            p, models = out_of_fold(items, design, scheme)
            auc = roc_auc_score(y, p)
            acc = float(np.mean((p >= 0.5) == y))
            pp = dict(zip([x.id for x in items], p, strict=True))
            print(f"\n{design.name}: AUC {auc:.3f}, accuracy at 0.5 {acc:.3f}")
            print(fmt_row("  classifier alone at 0.5 (cred/live codes)", figures(items, alone(pp))))
            for how in COMBINES:  # the evidence line is required where the crawl requires it (anchored rows)
                print(fmt_row(f"  {how.label()}", figures(items, with_opinion(pp, how, models if how.anchored
                                                                                   else None))))


# ---------------------------------------------------------------------------------------------- final
# Sixth round, frozen at 05:24 UTC on 2026-12-02 (word 1-2, C 4; Combine(0.5, 0.5, max_rules=99): the classifier
# decided the cred/live verdict both ways); its test half was computed once, then two checks outside the set failed.
# Seventh round, frozen on 2026-12-02 from the tune-half estimates only (README > Learned second opinion > Seventh
# round), before any test-half figure of this design existed: the same weights; the classifier only adds
# needs_live_service, at p >= 0.6, on a line naming a remote host, URL, account or auth term.
FROZEN_DESIGN: Design | None = DESIGNS[0]
FROZEN_COMBINE: Combine | None = Combine(None, 0.6, anchored=True)


def final(tune: list[Item], test: list[Item]) -> None:
    if FROZEN_DESIGN is None or FROZEN_COMBINE is None:
        sys.exit("no frozen design yet: choose one from the tune-half cross-validation first")
    model = Model(FROZEN_DESIGN).fit([document(i) for i in tune], np.array([positive(i) for i in tune]))
    p = model.proba([document(i) for i in test])
    pp = dict(zip([x.id for x in test], p, strict=True))
    y = np.array([positive(i) for i in test])
    print(f"frozen: {FROZEN_DESIGN.name}, C={FROZEN_DESIGN.c}; {FROZEN_COMBINE.label()}")
    print(f"classifier on the test half: AUC {roc_auc_score(y, p):.3f}, accuracy at 0.5 "
          f"{float(np.mean((p >= 0.5) == y)):.3f}")
    print(HEADER)
    print(fmt_row("rules (test half)", figures(test, lambda i: i.got)))
    print(fmt_row("rules + learned opinion (test half)", figures(test, with_opinion(pp, FROZEN_COMBINE, model))))
    print(fmt_row("classifier alone at 0.5 (cred/live codes)", figures(test, alone(pp))))
    changed = [i for i in test if combined(i, pp[i.id], model, FROZEN_COMBINE) != i.got]
    right = sum(bool(combined(i, pp[i.id], model, FROZEN_COMBINE) & CRED_OR_LIVE) == bool(positive(i))
                for i in changed)
    print(f"verdicts changed by the opinion: {len(changed)} (now agreeing with the label: {right})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--final", action="store_true", help="score the frozen design on the test half (once)")
    args = ap.parse_args()
    entries = yaml.safe_load((Path(__file__).resolve().parent / "entries.yaml").read_text())
    GROUPS.update({e["id"]: e["group"] for e in entries})
    tune = load_items("tune")
    test = load_items("test") if args.final else []
    absent = missing_mirrors(tune + test)
    if absent:
        print(f"skipped: no local mirror for {', '.join(absent)} under $S2E_MIRROR_DIR (default /work/.mirror)")
        return
    screen_items(tune, RULES_ONLY)
    if args.final:
        screen_items(test, RULES_ONLY)
        final(tune, test)
    else:
        cross_validate(tune)


if __name__ == "__main__":
    main()
