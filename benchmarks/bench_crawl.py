"""Crawl + parse + screen + dedup throughput on generated hubs, and LSH recall against exact all-pairs Jaccard.

Usage: .venv/bin/python benchmarks/bench_crawl.py [--sizes 1000 10000 100000] [--sample 2000] [--keep DIR]
Prints one line per hub size (skills/s, stage seconds, peak RSS) and the LSH-vs-exact comparison.
Targets (issue 2): 100k skills deduplicated in <= 60 s on 2 cores; LSH recall >= 99 % of pairs above threshold.
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import sparse

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from skill2env_dagster.skillhub.config import CrawlSettings
from skill2env_dagster.skillhub.crawl import crawl_paths
from skill2env_dagster.skillhub.dedup import DedupItem, Shingler, find_duplicates

DOMAIN_WORDS = [
    "csv", "invoice", "ledger", "nginx", "awk", "log", "latency", "sqlite", "query", "schema", "audit", "config",
    "report", "unit", "conversion", "assay", "markdown", "lint", "heading", "link", "table", "column", "row",
    "duplicate", "merge", "reconcile", "payment", "vendor", "customer", "region", "timestamp", "parse", "validate",
    "normalise", "export", "import", "pipeline", "checksum", "threshold", "outlier", "budget", "forecast"
]


def _vocab(rng: random.Random, n: int = 20000) -> list[str]:
    syll = ["ka", "to", "ri", "mo", "ne", "sa", "lu", "vi", "de", "po", "ga", "fe", "zu", "xi"]
    return list(DOMAIN_WORDS) + ["".join(rng.choices(syll, k=rng.randint(2, 4))) for _ in range(n)]


def _body(rng: random.Random, vocab: list[str], words: int) -> str:
    weights = [1.0 / (i + 1) ** 0.6 for i in range(len(vocab))]
    picked = rng.choices(vocab, weights=weights, k=words)
    lines = [" ".join(picked[i : i + 14]) for i in range(0, len(picked), 14)]
    return "\n".join(["## Steps", *lines[: len(lines) // 2], "```bash", "awk -F, '{print $1}' data.csv", "```",
                      *lines[len(lines) // 2 :]])


def _mutate(rng: random.Random, text: str, vocab: list[str], rate: float) -> str:
    words = text.split(" ")
    for _ in range(max(1, int(len(words) * rate))):
        words[rng.randrange(len(words))] = rng.choice(vocab)
    return " ".join(words)


def generate_hub(root: Path, n: int, seed: int = 7, dup_rate: float = 0.03) -> int:
    """n skill folders; about dup_rate of them are mutated copies of earlier ones. Returns planted copies."""
    rng = random.Random(seed)
    vocab = _vocab(rng)
    bodies: list[str] = []
    planted = 0
    for i in range(n):
        if bodies and rng.random() < dup_rate:
            body = _mutate(rng, rng.choice(bodies), vocab, rng.choice([0.0, 0.005, 0.01, 0.02, 0.05]))
            planted += 1
        else:
            body = _body(rng, vocab, rng.randint(150, 400))
            bodies.append(body)
        d = root / f"group-{i % 100:02d}" / f"skill-{i:06d}"
        d.mkdir(parents=True)
        (d / "SKILL.md").write_text(
            f"---\nname: skill-{i:06d}\ndescription: Handles {' '.join(rng.choices(DOMAIN_WORDS, k=6))} tasks.\n"
            f"license: MIT\n---\n# Skill {i}\n\n{body}\n"
        )
    return planted


def peak_rss_mb() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, kids) / 1024


def bench_size(n: int, keep: Path | None) -> None:
    tmp = Path(tempfile.mkdtemp(prefix=f"s2e-hub-{n}-", dir=keep))
    try:
        t0 = time.perf_counter()
        planted = generate_hub(tmp, n)
        gen = time.perf_counter() - t0
        t1 = time.perf_counter()
        result = crawl_paths([tmp], CrawlSettings())
        total = time.perf_counter() - t1
        counts = result.status_counts()
        s = result.seconds
        print(f"n={n:>6}  crawl {total:7.2f}s  {n / total:8.0f} skills/s  resolve+discover+process "
              f"{s['resolve'] + s['process']:6.2f}s  dedup {s['dedup']:6.2f}s  statuses {counts}  "
              f"planted copies {planted}  peak RSS {peak_rss_mb():.0f} MB  (generation {gen:.1f}s)", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def exact_pairs(sets: list[np.ndarray], threshold: float) -> set[tuple[int, int]]:
    """All pairs with Jaccard >= threshold, by sparse matrix products (exact, no sampling)."""
    rows = np.concatenate([np.full(len(s), i) for i, s in enumerate(sets)])
    cols_raw = np.concatenate(sets)
    _, cols = np.unique(cols_raw, return_inverse=True)
    m = sparse.csr_matrix((np.ones(len(rows), dtype=np.int32), (rows, cols)))
    inter = (m @ m.T).tocoo()
    sizes = np.array([len(s) for s in sets])
    out = set()
    for i, j, v in zip(inter.row, inter.col, inter.data, strict=False):
        if i < j and v / (sizes[i] + sizes[j] - v) >= threshold:
            out.add((i, j))
    return out


def bench_lsh(sample: int, threshold: float = 0.8) -> None:
    rng = random.Random(11)
    vocab = _vocab(rng)
    texts: list[str] = []
    for _ in range(sample):
        if texts and rng.random() < 0.15:  # many pairs around the threshold
            texts.append(_mutate(rng, rng.choice(texts), vocab, rng.uniform(0.0, 0.06)))
        else:
            texts.append(_body(rng, vocab, rng.randint(150, 400)))
    sh = Shingler(5)
    t0 = time.perf_counter()
    sets = [sh.shingles(t) for t in texts]
    truth = exact_pairs(sets, threshold)
    t_exact = time.perf_counter() - t0
    t1 = time.perf_counter()
    items = [DedupItem(f"s{i:05d}", t, (0,)) for i, t in enumerate(texts)]
    dupes = find_duplicates(items, threshold=threshold)
    t_lsh = time.perf_counter() - t1
    # LSH clusters: two items are "paired" when they share a canonical.
    canon = {int(k[1:]): int(v.canonical[1:]) for k, v in dupes.items()}
    root = {i: canon.get(i, i) for i in range(sample)}
    found = {(i, j) for i, j in truth if root[i] == root[j]}
    recall = len(found) / len(truth) if truth else 1.0
    print(f"LSH vs exact on {sample} skills (threshold {threshold}): {len(truth)} true pairs, recall "
          f"{recall:.4f}; exact all-pairs {t_exact:.2f}s, LSH pipeline {t_lsh:.2f}s "
          f"(speed ratio exact/LSH {t_exact / t_lsh:.2f}x)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000, 100000])
    ap.add_argument("--sample", type=int, default=2000)
    ap.add_argument("--keep", type=Path, default=None, help="parent folder for generated hubs (default /tmp)")
    args = ap.parse_args()
    bench_lsh(args.sample)
    for n in args.sizes:
        bench_size(n, args.keep)


if __name__ == "__main__":
    main()
