"""Rebuild skill2env_dagster/data/screening_learned.json: the learned second opinion's weights (screen/learned.py).

Trains the frozen design of learned_opinion.py (FROZEN_DESIGN; FROZEN_COMBINE's add threshold is written as the
model's `threshold`) on the tune half of the screening set only (hand labels: needs_external_account or
needs_live_service vs not), reading the skills from the local mirrors through the production crawl with the learned
opinion switched off. Deterministic: same mirrors, labels and library versions give the same file. Checks that the
crawl's re-implementation (`LearnedModel`) gives the classifier's probabilities before writing, and writes
atomically. Retraining after a labelling round is this one command (new tune entries are read from entries.yaml /
labels.yaml); `--check` rebuilds in memory and exits 1 when the shipped file differs (weights stale or the build
not deterministic).

    .venv/bin/python benchmarks/screening_set/train_learned.py [--out PATH] [--check]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from evaluate import load_items, missing_mirrors, screen_items
from learned_opinion import FROZEN_COMBINE, FROZEN_DESIGN, RULES_ONLY, Model, document, positive

from skill2env_dagster.atomic import atomic_write_text
from skill2env_dagster.skillhub.screen.learned import MODEL_FILE, LearnedModel

TOLERANCE = 1e-4  # largest probability difference allowed between scikit-learn and the re-implementation
DIGITS = 6  # significant digits kept per weight: halves the file, moves probabilities by ~1e-6


def _round(x: float) -> float:
    return float(f"{x:.{DIGITS}g}")


def export(model: Model, threshold: float, labels_digest: str, n: int) -> dict:
    (vec,) = model.vecs  # the frozen design reads words only: one vectoriser
    terms = [""] * len(vec.vocabulary_)
    for term, k in vec.vocabulary_.items():
        terms[k] = term
    return {
        "about": "screen/learned.py: TF-IDF + logistic regression on needs_external_account|needs_live_service, "
                 "trained by benchmarks/screening_set/train_learned.py on the screening set's tune half only",
        "trained_on": {"skills": n, "labels_sha256": labels_digest},
        "token_pattern": vec.token_pattern, "ngram_range": list(vec.ngram_range), "threshold": threshold,
        "intercept": float(model.clf.intercept_[0]),
        "terms": terms,
        "idf": [_round(x) for x in vec.idf_],
        "coef": [_round(x) for x in model.clf.coef_[0]],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=MODEL_FILE)
    ap.add_argument("--check", action="store_true", help="compare with the file at --out instead of writing it")
    args = ap.parse_args()
    if (FROZEN_DESIGN is None or FROZEN_COMBINE is None or FROZEN_COMBINE.low is not None
            or FROZEN_COMBINE.high is None or not FROZEN_COMBINE.anchored):
        sys.exit("learned_opinion.py has no frozen add-only anchored design (the one screen/learned.py implements)")
    tune = load_items("tune")
    absent = missing_mirrors(tune)
    if absent:
        sys.exit(f"no local mirror for {', '.join(absent)} under $S2E_MIRROR_DIR (default /work/.mirror)")
    screen_items(tune, RULES_ONLY)
    docs, y = [document(i) for i in tune], np.array([positive(i) for i in tune])
    model = Model(FROZEN_DESIGN).fit(docs, y)
    here = Path(__file__).resolve().parent
    digest = hashlib.sha256((here / "labels.yaml").read_bytes() + (here / "entries.yaml").read_bytes()).hexdigest()
    data = export(model, FROZEN_COMBINE.high, digest, len(tune))
    ours = LearnedModel(data)
    worst = max(abs(ours.probability(d) - p) for d, p in zip(docs, model.proba(docs), strict=True))
    if worst > TOLERANCE:
        sys.exit(f"re-implementation differs from scikit-learn by {worst:.2e} (> {TOLERANCE}); not written")
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"
    if args.check:
        same = args.out.is_file() and args.out.read_text(encoding="utf-8") == text
        print(f"{args.out}: {'up to date' if same else 'DIFFERS from a fresh build (retrain)'}")
        sys.exit(0 if same else 1)
    atomic_write_text(args.out, text)
    print(f"wrote {args.out}: {len(data['terms'])} terms, trained on {len(tune)} tune skills "
          f"({int(y.sum())} cred/live); largest probability difference vs scikit-learn {worst:.1e}")


if __name__ == "__main__":
    main()
