"""The offline task generator on a whole corpus, through the real gates: coverage, variety, honesty, speed.

Usage:
  .venv/bin/python benchmarks/bench_generation.py [SKILLS_DIR ...] [--variants 3] [--concurrency 2]
        [--no-gates] [--limit N | --sample N] [--json FILE] [--keep DIR]
Default SKILLS_DIR: ../shared/corpus/skills (then examples/skillhub if absent).

For every eligible skill: knowledge → offline plan → axis samples → up to --variants candidates (frozen-order
builder), then every candidate through the full gates (static checks, Oracle = 1, no-op = 0, wrong.sh < 1,
mutation testing, the creator's cheats, the tamper kit) at --concurrency. Prints:
- coverage: eligible skills with ≥ 1 retained task, and the reason for every other skill;
- realised archetype/verifier combinations among retained tasks, and how often the sampled one was realised;
- template smell: the share of the most common normalised verifier skeleton (tests/*.sh + tests/*.py with
  identifiers, strings and numbers replaced by placeholders; data files excluded);
- retrieval probe of the retained tasks against the corpus skills (TF-IDF, rubric only, masked controls);
- the highest mean reward any cheat or trivial mutant earned per retained task (the gate rejects above 0.5);
- creation seconds per task; ten random retained tasks with their blueprint and what makes them hard.
Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import random
import re
import shutil
import sys
import tempfile
import time
import tokenize
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from skill2env_dagster.knowledge import extract_knowledge
from skill2env_dagster.models.gate import GateVerdict
from skill2env_dagster.planning import plan_offline, sample_axes
from skill2env_dagster.skillhub.crawl import crawl_paths
from skill2env_dagster.tasks.builder import TaskBuilder
from skill2env_dagster.tasks.generator import OfflineGenerator, make_context
from skill2env_dagster.tasks.grounding import ground
from skill2env_dagster.tasks.pipeline import build_candidate, task_name

REPO = Path(__file__).resolve().parents[1]
CODE_SUFFIXES = (".sh", ".py")
SHELL_WORDS = {"if", "then", "fi", "for", "do", "done", "else", "while", "case", "esac", "in", "function", "return",
               "exit", "set", "mkdir", "cat", "python3", "echo", "printf"}


def skeleton(tests_dir: Path) -> str:
    """The verifier's code with identifiers, strings and numbers replaced by placeholders (data files skipped)."""
    parts = []
    for p in sorted(tests_dir.rglob("*")):
        if not p.is_file() or p.suffix not in CODE_SUFFIXES or "hidden" in p.parts:
            continue
        text = p.read_text(errors="replace")
        parts.append(p.suffix + ":" + (_py_skeleton(text) if p.suffix == ".py" else _sh_skeleton(text)))
    return "\n".join(parts)


def _py_skeleton(text: str) -> str:
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.NAME:
                out.append(tok.string if tok.string in KEYWORDS else "ID")
            elif tok.type == tokenize.STRING:
                out.append("S")
            elif tok.type == tokenize.NUMBER:
                out.append("N")
            elif tok.type in (tokenize.OP, tokenize.INDENT, tokenize.DEDENT, tokenize.NEWLINE):
                out.append(tok.string.strip() or tokenize.tok_name[tok.type])
    except (tokenize.TokenError, IndentationError):
        return "unparsable"
    return " ".join(out)


def _sh_skeleton(text: str) -> str:
    text = re.sub(r"#[^\n]*", "", text)
    text = re.sub(r"'[^']*'|\"(?:\\.|[^\"\\])*\"", "S", text)
    text = re.sub(r"\b\d+(\.\d+)?\b", "N", text)
    return " ".join("ID" if re.fullmatch(r"[A-Za-z_][\w-]*", w) and w not in SHELL_WORDS else w
                    for w in re.findall(r"[\w-]+|\S", text))


KEYWORDS = set(__import__("keyword").kwlist)


def _pins(no_gates: bool) -> dict[str, str]:
    if no_gates:
        return {f: f"127.0.0.1:5000/s2e-{f}@sha256:" + "0" * 64 for f in ("minimal", "python")}
    from skill2env_dagster.gates.base_images import load_base_images

    return load_base_images()


def create_all(skills: list, variants: int, pins: dict[str, str], out: Path) -> tuple[list[dict], dict[str, str]]:
    """Candidates for every skill: (records, skill -> reason when a skill produced none)."""
    records: list[dict] = []
    reasons: dict[str, str] = {}
    gen = OfflineGenerator()
    for skill in skills:
        knowledge = extract_knowledge(skill)
        plans = plan_offline(skill, prompt_version="bench", knowledge=knowledge)
        axes = sample_axes(plans)
        workflows = {w.name: w for w in plans.workflows}
        grounding = ground(skill)
        made = 0
        fail: Counter[str] = Counter()
        for s in axes.samples[:variants]:
            name = task_name(skill, s)
            wf = workflows[s.workflow]
            ctx = make_context(skill, wf, s, pins, name, grounding, knowledge, wf.focus)
            start = time.perf_counter()
            try:
                builder = TaskBuilder(out / name)
                build_candidate(builder, ctx, gen)
            except Exception as e:
                reason = getattr(e, "reason", None)
                fail[reason.value if reason else type(e).__name__] += 1
                shutil.rmtree(out / name, ignore_errors=True)
                continue
            bp = gen.blueprint(ctx)
            records.append({"skill": skill.skill_id, "task": name, "path": str(out / name),
                            "seconds": time.perf_counter() - start, "shape": bp.shape,
                            "combo": (bp.archetype, bp.primary_verifier_pattern),
                            "sampled": (s.archetype, s.primary_verifier_pattern),
                            "fallback": bp.axes.fallback_reason, "pattern_fallback": bp.axes.pattern_fallback_reason,
                            "blueprint": bp.model_dump(mode="json")})
            made += 1
        if not made:
            reasons[skill.skill_id] = ", ".join(f"{k}×{v}" for k, v in fail.items()) or "no samples"
    return records, reasons


def probe(records: list[dict], skills: list, retained: set[str]) -> None:
    from skill2env_dagster.probe import candidate_skills, load_tasks, probe_retrieval

    with tempfile.TemporaryDirectory(prefix="probe-") as tmp:
        for r in records:
            if r["task"] in retained:
                shutil.copytree(r["path"], Path(tmp) / r["task"])
        tasks, invalid = load_tasks(Path(tmp))
        report = probe_retrieval(candidate_skills(skills), tasks, invalid=invalid)
    print(f"\nretrieval probe: {len(tasks)} retained tasks vs {len(candidate_skills(skills))} skills, "
          f"chance {report.chance:.4f}")
    for mode, m in report.modes.items():
        print(f"  {mode:28s} top1 {m.top1:.3f}  top10 {m.top10:.3f}  mrr {m.mrr:.3f}")


def describe(r: dict) -> str:
    bp = r["blueprint"]
    rules = "; ".join(f"{p['id']} {p['kind']} «{p['statement'][:90]}» ({p['source']['file']}:{p['source']['line']})"
                      for p in bp["predicates"])
    hard = "; ".join(c["instantiation"] for c in bp["challenges"]) or "-"
    discover = "; ".join(bp["boundary"]["discover"])
    cx = bp["complexity"]
    return (f"- {r['task']}\n  skill {r['skill']} · {bp['shape']} ({bp['archetype']}/{bp['primary_verifier_pattern']}) "
            f"· {cx['level']} · {cx['files_to_read']} files, {cx['rules_in_play']} rules, "
            f"{cx['dependent_steps']} dependent steps, {cx['items']} items\n  objective: {bp['objective']}\n"
            f"  rules: {rules}\n  hard because: {hard}; must discover: {discover}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("sources", nargs="*", type=Path)
    ap.add_argument("--variants", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--no-gates", action="store_true")
    ap.add_argument("--limit", type=int, default=0, help="only the first N eligible skills (for quick looks)")
    ap.add_argument("--sample", type=int, default=0, help="a seeded random sample of N eligible skills")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--keep", type=Path, help="copy retained tasks here")
    args = ap.parse_args()
    sources = args.sources or [p for p in (REPO.parent / "shared" / "corpus" / "skills",
                                           Path("/work/shared/corpus/skills"), REPO / "examples" / "skillhub")
                               if p.is_dir()][:1]
    crawl = crawl_paths(sources).records
    skills = [r for r in crawl if r.is_eligible][: args.limit or None]
    if args.sample:
        skills = sorted(random.Random(0).sample(skills, min(args.sample, len(skills))), key=lambda s: s.skill_id)
    with tempfile.TemporaryDirectory(prefix="bench-gen-") as tmp:
        t0 = time.perf_counter()
        records, empty = create_all(skills, args.variants, _pins(args.no_gates), Path(tmp))
        t1 = time.perf_counter()
        verdicts: dict[str, str] = {}
        shortcut: dict[str, float] = {}
        if not args.no_gates:
            from skill2env_dagster.gates.runner import run_gates
            from skill2env_dagster.gates.settings import GateSettings

            settings = GateSettings(concurrency=args.concurrency)
            reports = run_gates([r["path"] for r in records], settings)
            for r, rep in zip(records, reports, strict=True):
                verdicts[r["task"]] = rep.verdict.value if rep.verdict is GateVerdict.RETAINED else \
                    f"{rep.verdict.value}:{rep.reason.value if rep.reason else '?'}"
                tried = [a for a in rep.cheats + rep.mutants if a.kind == "cheat" or a.family == "trivial"]
                r["shortcuts"] = {a.name: round(a.mean, 3) for a in tried}
                shortcut[r["task"]] = max((a.mean for a in tried), default=0.0)
        else:
            verdicts = {r["task"]: "retained" for r in records}
        t2 = time.perf_counter()
        retained = {t for t, v in verdicts.items() if v == "retained"}
        kept = [r for r in records if r["task"] in retained]
        by_skill = {r["skill"] for r in kept}
        print(f"skills: {len(skills)} eligible; candidates {len(records)}; retained {len(kept)} "
              f"({len(kept) / max(1, len(records)):.0%})")
        print(f"coverage: {len(by_skill)}/{len(skills)} = {len(by_skill) / max(1, len(skills)):.1%} of eligible "
              "skills have >= 1 retained task")
        rejected = Counter(v for v in verdicts.values() if v != "retained")
        print(f"rejections: {dict(rejected)}")
        for sid in sorted(s.skill_id for s in skills if s.skill_id not in by_skill):
            why = empty.get(sid) or ", ".join(sorted({verdicts[r['task']] for r in records if r['skill'] == sid}))
            print(f"  no task: {sid}: {why}")
        combos = Counter(tuple(r["combo"]) for r in kept)
        print(f"\nrealised archetype/verifier combinations: {len(combos)}")
        for (a, v), n in combos.most_common():
            print(f"  {a}/{v}: {n}")
        same = sum(tuple(r["combo"]) == tuple(r["sampled"]) for r in records)
        print(f"sampled combination realised: {same}/{len(records)}; fallbacks recorded: "
              f"{sum(bool(r['fallback']) for r in records)}; pattern fallbacks: "
              f"{sum(bool(r['pattern_fallback']) for r in records)}")
        skels = Counter(hashlib.sha256(skeleton(Path(r["path"]) / "tests").encode()).hexdigest()[:12] for r in kept)
        top = skels.most_common(1)[0][1] if skels else 0
        print(f"\ntemplate smell: {len(skels)} distinct verifier skeletons over {len(kept)} tasks; the most "
              f"common is used by {top} ({top / max(1, len(kept)):.1%})")
        shapes = Counter(r["shape"] for r in kept)
        print(f"shapes: {dict(shapes.most_common())}")
        secs = [r["seconds"] for r in records]
        print(f"\ncreation: {len(records)} candidates in {t1 - t0:.1f} s (incl. planning); "
              f"{sum(secs) / max(1, len(secs)):.3f} s per task (blueprint + files); gates {t2 - t1:.1f} s")
        if shortcut:
            best = [shortcut[r["task"]] for r in kept]
            print(f"shortcuts (cheats + trivial mutants) on retained tasks: max mean reward "
                  f"{max(best, default=0):.2f}, median {sorted(best)[len(best) // 2] if best else 0:.2f}")
        if kept:
            probe(records, skills, retained)
            print("\nten random retained tasks:")
            for r in random.Random(11).sample(kept, min(10, len(kept))):
                print(describe(r))
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            for r in kept:
                shutil.copytree(r["path"], args.keep / r["task"], dirs_exist_ok=True)
        if args.json:
            args.json.write_text(json.dumps({"records": [{k: v for k, v in r.items() if k != "path"}
                                                         for r in records], "verdicts": verdicts,
                                             "no_task": empty}, indent=1))


if __name__ == "__main__":
    main()
