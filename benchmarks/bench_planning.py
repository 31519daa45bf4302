"""Print planning-stage figures: offline planner and axis sampling over the shared corpus, and LLM client
latency for a cold call vs a cache hit against the loopback fake server.

Usage: .venv/bin/python benchmarks/bench_planning.py [CORPUS_SKILLS_DIR]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from skill2env_dagster.catalogue import load_axes  # noqa: E402
from skill2env_dagster.llm import LLMClient, LLMConfig  # noqa: E402
from skill2env_dagster.planning import PlanReply, coverage_table, extract_facts, plan_offline, sample_axes  # noqa: E402
from skill2env_dagster.planning.llm_planner import plan_messages  # noqa: E402
from tests.support.fake_openai import FakeOpenAI  # noqa: E402
from tests.unit.test_planning_llm import canned_plan  # noqa: E402
from tests.unit.test_planning_offline import make_record  # noqa: E402


def corpus_figures(skills_dir: Path) -> list:
    records = [make_record(md.parent, skill_id=f"s{i}") for i, md in enumerate(sorted(skills_dir.rglob("SKILL.md")))]
    t0 = time.perf_counter()
    facts_ms = []
    for r in records:
        t = time.perf_counter()
        extract_facts(r)
        facts_ms.append((time.perf_counter() - t) * 1000)
    t1 = time.perf_counter()
    plans = [plan_offline(r, prompt_version="bench") for r in records]
    t2 = time.perf_counter()
    samples = [sample_axes(p, global_seed=0, variants_per_workflow=2) for p in plans]
    t3 = time.perf_counter()
    n = len(records)
    print(f"skills                         {n}")
    print(f"extract_facts total / median   {t1 - t0:.2f} s / {statistics.median(facts_ms):.1f} ms")
    print(f"plan_offline total / per skill {t2 - t1:.2f} s / {(t2 - t1) / n * 1000:.1f} ms")
    print(f"sample_axes total / per skill  {t3 - t2:.3f} s / {(t3 - t2) / n * 1000:.2f} ms")
    print(f"workflows per skill (mean)     {statistics.mean(len(p.workflows) for p in plans):.2f}")
    distinct = len({tuple(w.name for w in p.workflows) for p in plans})
    print(f"distinct workflow-name sets    {distinct} / {n}")
    table = coverage_table(samples)
    for axis in ("complexity", "capability_dimension", "primary_verifier_pattern"):
        print(f"coverage {axis:<22}{dict(sorted(table[axis].items(), key=lambda kv: -kv[1]))}")
    unused = [k for k, v in table["difficulty_pattern"].items() if v == 0]
    pool = len(table["difficulty_pattern"])
    print(f"difficulty patterns used       {pool - len(unused)} / {pool}")
    return records


def llm_figures(record) -> None:
    messages = plan_messages(record, extract_facts(record), load_axes())
    with FakeOpenAI(canned_plan) as srv, tempfile.TemporaryDirectory() as cache:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="m", cache_dir=cache))
        t0 = time.perf_counter()
        client.complete_json(messages, PlanReply, purpose="bench")
        t1 = time.perf_counter()
        hits = 50
        for _ in range(hits):
            client.complete_json(messages, PlanReply, purpose="bench")
        t2 = time.perf_counter()
        print(f"llm cold call (loopback)       {(t1 - t0) * 1000:.1f} ms, HTTP requests {srv.count}")
        print(f"llm cache hit (mean of {hits})    {(t2 - t1) / hits * 1000:.2f} ms, HTTP requests {srv.count}")
        print(f"prompt size (chars)            {sum(len(m['content']) for m in messages)}")


def main() -> None:
    skills = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO.parent / "shared" / "corpus" / "skills"
    if not skills.is_dir():
        sys.exit(f"corpus not found at {skills}")
    records = corpus_figures(skills)
    llm_figures(max(records, key=lambda r: len(r.body)))


if __name__ == "__main__":
    main()
