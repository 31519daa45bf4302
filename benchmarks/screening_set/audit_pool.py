"""Screen an unlabelled pool of hub skills and list every malicious/harmful verdict with its evidence.

    .venv/bin/python benchmarks/screening_set/audit_pool.py \
        AgentWorkers/skills 1e90d6049ff1436194cb2cd882582fccc6ae38d0 --n 2500

Most skills in a hub are benign, so on a pool outside the labelled set every `malicious` or `harmful` verdict is
either a real lure or a false positive a human can judge in seconds from the printed evidence. That makes the
false-positive side of the screen measurable on thousands of real skills without labelling them all, and without
touching the test half. The pool is a hash-ordered sample of the mirror's skill folders (fixtures and the set's own
entries left out), so the same arguments give the same pool.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path, PurePosixPath

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mirror import Mirror

from skill2env_dagster.skillhub.crawl import crawl_paths
from skill2env_dagster.skillhub.sources.discover import FIXTURE_SEGMENTS

HERE = Path(__file__).resolve().parent
SEED = "screening-audit-v1"


def pool(m: Mirror, repo: str, n: int) -> list[str]:
    """The first n skill folders of the mirror in hash order, outside the labelled set and fixtures."""
    taken = {e["path"] for e in yaml.safe_load((HERE / "entries.yaml").read_text()) if e["repo"] == repo}
    folders = [f for f in m.skill_folders()
               if f not in taken and not FIXTURE_SEGMENTS & set(PurePosixPath(f).parts)]
    folders.sort(key=lambda f: hashlib.sha256(f"{SEED}\0{repo}\0{f}".encode()).hexdigest())
    return folders[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("repo")
    ap.add_argument("commit")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--codes", default="malicious,harmful", help="comma-separated verdicts to list")
    args = ap.parse_args()
    wanted = set(args.codes.split(","))
    m = Mirror(args.repo, args.commit)
    if not m.available():
        print(f"audit skipped: no local mirror of {args.repo}@{args.commit[:12]} under {m.git_dir}")
        return
    folders = pool(m, args.repo, args.n)
    with tempfile.TemporaryDirectory(prefix="s2e-screening-audit-") as tmp:
        hub = Path(tmp) / "hub"
        for k, folder in enumerate(folders):
            m.extract(folder, hub / f"{k:05d}")
        t0 = time.perf_counter()
        result = crawl_paths([hub])
        seconds = time.perf_counter() - t0
    flagged = [r for r in result.records if wanted & {c.value for c in r.reasons}]
    print(f"{len(folders)} skill folders of {args.repo}@{args.commit[:12]} crawled in {seconds:.1f} s: "
          f"{len(flagged)} with {'/'.join(sorted(wanted))} verdicts")
    shapes: Counter[tuple[str, ...]] = Counter()
    for r in flagged:
        rule_ids = tuple(sorted({f.rule for f in r.findings if f.code.value in wanted}))
        shapes[rule_ids] += 1
        print(f"\n== {folders[int(r.rel_path.split('/')[0])]}  {sorted(c.value for c in r.reasons)}")
        for f in r.findings:
            if f.code.value in wanted:
                print(f"   {f.rule:32s} {f.file}:{f.line} {f.text[:140]}")
    print("\nverdicts by evidence:")
    for rule_ids, n in shapes.most_common():
        print(f"  {n:4d}  {' + '.join(rule_ids)}")


if __name__ == "__main__":
    main()
