"""Where the full suite's wall time goes, from a timeline written by tests/conftest.py.

    S2E_TEST_TIMELINE=/tmp/timeline.tsv bash scripts/test.sh        # or any pytest run with workers
    python benchmarks/suite_timeline.py /tmp/timeline.tsv [--top 15]

Prints, per worker, its busy seconds, first start, last stop and idle tail (the seconds it sat idle while another
worker still ran), then the longest scheduling units (a module's xdist group, or a single test): the wall time of a
2-worker run cannot fall below the longest unit, nor below the busy total / workers."""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple


class Entry(NamedTuple):
    worker: str
    start: float
    stop: float
    nodeid: str
    cpu: float  # CPU seconds of the test's worker process and its waited-for children (0 in an older timeline)


def read(path: Path) -> list[Entry]:
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        worker, start, stop, nodeid, *cpu = line.split("\t")
        entries.append(Entry(worker, float(start), float(stop), nodeid, sum(map(float, cpu))))
    return sorted(entries, key=lambda e: e.start)


def unit_of(nodeid: str) -> str:
    """The scheduling unit: pytest-xdist's loadgroup suffix `@group` names a group; otherwise the test itself."""
    return nodeid.rsplit("@", 1)[1] if "@" in nodeid.rsplit("]", 1)[-1] else nodeid


def report(entries: list[Entry], top: int) -> str:
    t0, t_end = min(e.start for e in entries), max(e.stop for e in entries)
    lines = [f"tests {len(entries)} · wall {t_end - t0:.0f} s (first start to last stop)"]
    by_worker: dict[str, list[Entry]] = defaultdict(list)
    for e in entries:
        by_worker[e.worker].append(e)
    busy_total = 0.0
    for worker, es in sorted(by_worker.items()):
        busy = sum(e.stop - e.start for e in es)
        busy_total += busy
        last = max(e.stop for e in es)
        lines.append(f"  {worker}: {len(es)} tests, busy {busy:.0f} s, from +{min(e.start for e in es) - t0:.0f} s "
                     f"to +{last - t0:.0f} s, idle tail {t_end - last:.0f} s")
    lines.append(f"busy total {busy_total:.0f} worker-s -> lower bound {busy_total / len(by_worker):.0f} s wall on "
                 f"{len(by_worker)} workers")
    units: dict[str, list[Entry]] = defaultdict(list)
    for e in entries:
        units[unit_of(e.nodeid)].append(e)
    spans = sorted(((sum(e.stop - e.start for e in es), u, es) for u, es in units.items()), reverse=True)
    lines.append(f"CPU of the workers and their children {sum(e.cpu for e in entries):.0f} s (not the engine's, "
                 "nor the containers')")
    lines.append(f"longest units (of {len(units)}): seconds, CPU-s, tests, worker, starts at")
    for seconds, unit, es in spans[:top]:
        lines.append(f"  {seconds:6.0f} s  {sum(e.cpu for e in es):6.1f}  {len(es):3d}  {es[0].worker}  "
                     f"+{es[0].start - t0:4.0f} s  {unit}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("timeline", type=Path)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    print(report(read(args.timeline), args.top))


if __name__ == "__main__":
    main()
