"""Which skills of a corpus get a stand-in service task, and from which documentation.

Usage: .venv/bin/python benchmarks/bench_service_sources.py [SKILLS_DIR ...]   (default ../shared/corpus/skills)

For every crawled skill: does it ship an OpenAPI/Swagger document (a .yaml/.yml/.json file whose top level names
`openapi`/`swagger`), is it eligible, and does it yield a service contract (the `service_sync` predicate) from its
prose (a localhost base URL + `POST /path` + JSON example) or from its spec. Figures only; nothing is asserted.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from skill2env_dagster.knowledge.source import read_docs
from skill2env_dagster.skillhub.crawl import crawl_paths
from skill2env_dagster.tasks.predicates.service import service_predicate

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> None:
    sources = [Path(a) for a in argv] or [p for p in (REPO.parent / "shared" / "corpus" / "skills",
                                                    Path("/work/shared/corpus/skills")) if p.is_dir()][:1]
    records = crawl_paths(sources).records
    counts: Counter[str] = Counter()
    for r in records:
        docs = read_docs(r, specs=True)
        specs = [d.path for d in docs if d.path not in {x.path for x in read_docs(r)}]
        counts["skills"] += 1
        counts["ship an OpenAPI/Swagger document"] += bool(specs)
        if specs:
            print(f"  spec: {r.skill_id} ({r.status}): {', '.join(specs)}")
        if not r.is_eligible:
            continue
        counts["eligible"] += 1
        p = service_predicate(docs)
        if p is not None:
            counts["eligible with a service contract from " + ("the spec" if "spec" in p.params else "prose")] += 1
            print(f"  service: {r.skill_id}: POST {p.params['collection']} ({p.params.get('spec', 'prose')})")
    for k, v in counts.items():
        print(f"{k}: {v}")


if __name__ == "__main__":
    main(sys.argv[1:])
