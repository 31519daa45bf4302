"""Benchmark: retrieval probe over generated tasks x generated skills (target: 8k x 3.4k in <= 10 s).

Prints the figures; it asserts nothing about time (speed is reported, not tested). The machine has 2 cores
shared with other work, so wall time is printed next to CPU time.
Run: .venv/bin/python benchmarks/bench_probe.py [--tasks 8000] [--skills 3400] [--folders]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from skill2env_dagster.export.decontam import TextDoc, check_contamination
from skill2env_dagster.models.export import DecontamConfig
from skill2env_dagster.models.probe import ALL_MODES, BASE_MODES, ProbeConfig
from skill2env_dagster.models.skill import SkillRecord
from skill2env_dagster.probe import ProbeTask, load_tasks, probe_retrieval

DOMAINS = ["software", "data", "documents", "research", "business", "design", "security", "health", "devops",
           "finance", "marketing", "education", "productivity"]


def _words(rng: np.random.Generator, vocab: int, n: int) -> list[str]:
    # Zipf-distributed shared vocabulary, as in natural text.
    return [f"w{int(i) % vocab}" for i in rng.zipf(1.3, n)]


def make_skills(rng: np.random.Generator, n: int) -> list[SkillRecord]:
    skills = []
    for i in range(n):
        own = [f"s{i}x{k}" for k in range(12)]  # distinctive names/tools of this skill
        body = own * 3 + _words(rng, 20000, 300)
        rng.shuffle(body)
        skills.append(SkillRecord(
            skill_id=f"bench/skill-{i:05d}", source="bench", source_kind="dir", source_uri="/bench",
            rel_path=f"skill-{i:05d}", abs_path=f"/bench/skill-{i:05d}", skill_file="SKILL.md",
            name=f"skill-{i:05d}", description=" ".join(own[:4]), domain=DOMAINS[i % len(DOMAINS)],
            body=" ".join(body), bundle_digest=f"{i:064x}",
        ))
    return skills


def make_tasks(rng: np.random.Generator, skills: list[SkillRecord], n: int) -> list[ProbeTask]:
    tasks = []
    for j in range(n):
        s = skills[int(rng.integers(len(skills)))]
        own = s.body.split()
        inst = list(rng.choice(own, 30)) + _words(rng, 20000, 90)
        rub = list(rng.choice(own, 20)) + _words(rng, 20000, 40)
        tasks.append(ProbeTask(task_id=f"task-{j:05d}", source_skill=s.skill_id, instruction=" ".join(inst),
                               rubric=" ".join(rub), generator="llm" if j % 3 else "offline"))
    return tasks


def write_folders(root: Path, tasks: list[ProbeTask]) -> None:
    for t in tasks:
        d = root / t.task_id
        (d / "tests").mkdir(parents=True)
        (d / "instruction.md").write_text(t.instruction)
        (d / "tests" / "rubric.md").write_text(t.rubric)
        (d / "task.toml").write_text(
            f'[task]\nname = "bench/{t.task_id}"\n\n[metadata]\nsource_skill = "{t.source_skill}"\n'
            f'generator = "{t.generator}"\n')


def corpus_probe(corpus: Path) -> None:
    """Real skills: crawl CORPUS, plan offline, write one offline task per axis sample (no gates), probe them."""
    from skill2env_dagster.planning import plan_offline, sample_axes
    from skill2env_dagster.probe import candidate_skills
    from skill2env_dagster.skillhub.crawl import crawl_paths
    from skill2env_dagster.tasks.builder import TaskBuilder
    from skill2env_dagster.tasks.generator import OfflineGenerator, make_context
    from skill2env_dagster.tasks.pipeline import build_candidate, task_name

    wall = time.perf_counter()
    skills = candidate_skills(crawl_paths([corpus]).records)
    pins = {"minimal": "local/s2e-minimal@sha256:" + "0" * 64, "python": "local/s2e-python@sha256:" + "1" * 64}
    with tempfile.TemporaryDirectory() as tmp:
        for s in skills:
            plans = plan_offline(s, prompt_version="bench")
            workflows = {w.name: w for w in plans.workflows}
            for sample in sample_axes(plans).samples:
                name = task_name(s, sample)
                ctx = make_context(s, workflows[sample.workflow], sample, pins, name)
                build_candidate(TaskBuilder(Path(tmp) / name), ctx, OfflineGenerator())
        tasks, invalid = load_tasks(Path(tmp))
        print(f"corpus: {len(skills)} eligible skills, {len(tasks)} offline tasks written in "
              f"{time.perf_counter() - wall:.1f} s")
        report = probe_retrieval(skills, tasks, invalid=invalid)
    print(f"corpus probe: chance {report.chance:.4f}, {report.seconds:.2f} s")
    for mode, m in report.modes.items():
        print(f"  {mode:28s} top1 {m.top1:.3f}  top10 {m.top10:.3f}  mrr {m.mrr:.3f}  n {m.n}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=8000)
    ap.add_argument("--skills", type=int, default=3400)
    ap.add_argument("--folders", action="store_true", help="also time reading the tasks from Harbor folders")
    ap.add_argument("--corpus", type=Path, help="also probe offline tasks generated from real skills in this folder")
    args = ap.parse_args()
    if args.corpus:
        corpus_probe(args.corpus)
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    skills = make_skills(rng, args.skills)
    tasks = make_tasks(rng, skills, args.tasks)
    print(f"generated {len(tasks)} tasks x {len(skills)} skills in {time.perf_counter() - t0:.1f} s")
    if args.folders:
        with tempfile.TemporaryDirectory() as tmp:
            write_folders(Path(tmp), tasks)
            t1 = time.perf_counter()
            tasks, invalid = load_tasks(Path(tmp))
            print(f"load_tasks: {len(tasks)} folders in {time.perf_counter() - t1:.2f} s ({len(invalid)} invalid)")
    for label, cfg in (("3 TF-IDF modes (CLI contract)", ProbeConfig(modes=list(BASE_MODES))),
                       (f"all {len(ALL_MODES)} modes", ProbeConfig()),
                       (f"all {len(ALL_MODES)} modes, 1 worker", ProbeConfig(workers=1))):
        wall, cpu = time.perf_counter(), time.process_time()
        report = probe_retrieval(skills, tasks, cfg)
        print(f"probe_retrieval, {label}: {time.perf_counter() - wall:.2f} s wall, "
              f"{time.process_time() - cpu:.2f} s CPU (target <= 10 s wall)")
    print(f"n_skills {report.n_skills}  chance {report.chance:.5f}  top10 chance {report.chance_top10:.5f}")
    for mode, m in report.modes.items():
        print(f"  {mode:28s} top1 {m.top1:.3f}  top10 {m.top10:.3f}  mrr {m.mrr:.3f}  n {m.n}")
    print("masking drop (top-1):", {k: round(v, 3) for k, v in report.masking_drop.items()})
    bench_decontam(rng, tasks)


def bench_decontam(rng: np.random.Generator, tasks: list[ProbeTask], n_bench: int = 500, planted: int = 20) -> None:
    """Decontamination of every task instruction against generated benchmark documents, some planted in tasks."""
    bench = [TextDoc(f"bench-{i}", " ".join(_words(rng, 20000, 200))) for i in range(n_bench)]
    ours = [TextDoc(t.task_id, t.instruction) for t in tasks]
    for k in range(planted):  # a benchmark document pasted into a longer task: only containment sees it
        ours[k] = TextDoc(ours[k].doc_id, ours[k].text + " " + bench[k].text + " " + ours[-k - 1].text)
    wall = time.perf_counter()
    report = check_contamination(ours, bench, DecontamConfig())
    print(f"decontamination: {len(ours)} tasks x {n_bench} benchmark docs in {time.perf_counter() - wall:.2f} s; "
          f"flagged {len(report.flagged)} (planted {planted})")

if __name__ == "__main__":
    main()
