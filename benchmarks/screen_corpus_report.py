"""Screen real skills and score the verdicts: the labelled development set (--set) or the shared corpus.

--set: the hand-labelled development set of benchmarks/screening_set (public hub skills in several labelling
rounds, read from local mirrors; its README says how many). Prints, for the chosen half (default: test), precision and
recall per reason code, the issue's targets (credentials-or-live-service recall, hardware recall, malicious recall and
false-positive rate among benign skills, eligible skills wrongly screened out), the same figures for a naive keyword
screen, and the crawl time. Errors are listed by id for the tune half only (unless --list-test), so rule authors never
read test errors: rules are kept or dropped on the tune half, the test half is read as aggregates (the set's README >
Discipline). --round 1-2|3|5|6|7|8|9|10 scores one labelling round, --source owner/name one repository.
--second-opinion also asks the model endpoint of S2E_LLM_* for its second opinion on each skill and prints the targets
with it, adding only and adding and clearing. --sample [SEED] asks it only on the stratified, seeded sample of the
test half that measures it (screening_set/opinion_sample.py: every eligible skill the screen as shipped screens out,
every malicious one, seeded draws of true account/live/hardware needs and of eligible skills it passes), prints the
figures on the sample and as test-half estimates (each skill weighted by its stratum), and never an id; --part k/n
asks one of n interleaved parts (one relay queue each), --results FILE appends the part's per-skill verdicts (no
ids) and --aggregate FILE... prints the figures of several parts' results without asking anything:

    .venv/bin/python benchmarks/screen_corpus_report.py --set --second-opinion --sample 28 --part 1/3 \
        --results /work/relay/opinion-1/results.jsonl
    .venv/bin/python benchmarks/screen_corpus_report.py --aggregate /work/relay/opinion-*/results.jsonl

Last measured (eighth session, test half of 530, the default crawl: rules + learned opinion; rules alone in brackets):
credentials or live recall 82.2% (77.7%), goal >= 85; hardware recall 82.6% (82.6%), goal >= 80, met; malicious recall
92.9% (92.9%), goal >= 95, missed by one skill; malicious false positives among benign 1.02% (1.02%), 5 of 488, goal
<= 1, missed by a hair; eligible wrongly screened out 20.4% (19.9%), goal <= 10. The set's README > Results has every
round.

    .venv/bin/python benchmarks/screen_corpus_report.py --set [--half tune|test|all] [--round 1-2|3|5|6|7|8|9|10]
        [--list-test] [--learned]

--learned switches on the learned second opinion (screen/learned.py; on by default in the crawl, off here so that
the figures are the rules' own unless asked; learned_opinion.py is the experiment that chose it). Its tune half is
the classifier's training data, so only its test-half figures count.

Without --set: the shared corpus, as follows.

Prints per-code counts, precision/recall of needs_external_account / needs_live_service / needs_hardware /
persona_only against the manifest tags (needs_credentials:, needs_live_service:, needs_hardware:, persona_only),
every malicious/harmful hit (the corpus is benign: each one is a false positive), and the screening speed.

Overfitting guard: the corpus is split into two halves by a hash of the skill id, stratified by manual tag so both
halves hold tagged skills (within each stratum, skills sorted by SHA-256 of their id alternate dev / held-out).
Rules are developed looking at the `dev` half only; the `held-out` figures are the honest ones. Skill ids behind
held-out errors are listed only with --list-held-out (so a rule author does not look at them by accident).

    .venv/bin/python benchmarks/screen_corpus_report.py [--corpus ../shared/corpus] [--show CODE] [--list-held-out]
        [--learned]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "screening_set"))

import opinion_sample
from evaluate import (
    CODES,
    OPINION_FAILED,
    OPINION_MODES,
    ROUND_GROUPS,
    Item,
    Score,
    load_items,
    missing_mirrors,
    model_opinion,
    score,
    screen_items,
    target_intervals,
    targets,
)

from skill2env_dagster.llm.config import from_env
from skill2env_dagster.skillhub.config import CrawlSettings
from skill2env_dagster.skillhub.parse import parse_skill_md
from skill2env_dagster.skillhub.screen import learned
from skill2env_dagster.skillhub.screen.engine import BLOCKING_CODES, ScreenSettings, screen_skill

REPO = Path(__file__).resolve().parents[1]
TAG_TO_CODE = {
    "needs_credentials": "needs_external_account",
    "needs_live_service": "needs_live_service",
    "needs_hardware": "needs_hardware",
    "persona_only": "persona_only",
}
SKILL_FILES = ("SKILL.md", "skill.md", "Skill.md")
HALVES = ("dev", "held-out")


def read_skill(folder: Path) -> tuple[dict[str, str], dict, str]:
    """Text files of a skill (nested sub-skills excluded), parsed frontmatter and body."""
    nested = {p.parent for p in folder.rglob("*") if p.name in SKILL_FILES and p.parent != folder}
    texts: dict[str, str] = {}
    for p in sorted(folder.rglob("*")):
        if not p.is_file() or any(n in p.parents for n in nested):
            continue
        try:
            texts[p.relative_to(folder).as_posix()] = p.read_text(encoding="utf-8-sig")
        except (UnicodeDecodeError, OSError):
            continue
    skill_file = next((n for n in SKILL_FILES if n in texts), "SKILL.md")
    parsed = parse_skill_md(texts.get(skill_file, ""), folder.name)
    return texts, parsed.frontmatter, parsed.body


def expected_codes(quirks: list[str]) -> set[str]:
    return {code for q in quirks for tag, code in TAG_TO_CODE.items() if q == tag or q.startswith(tag + ":")}


def split_halves(manifest: list[dict]) -> dict[str, str]:
    """skill id -> "dev" | "held-out": per stratum (rarest manual tag, else none), ids sorted by SHA-256 alternate."""
    order = ("needs_live_service", "needs_hardware", "persona_only", "needs_external_account")
    strata: dict[str, list[str]] = {}
    for e in manifest:
        exp = expected_codes(e["quirks"])
        strata.setdefault(next((c for c in order if c in exp), "none"), []).append(e["id"])
    half: dict[str, str] = {}
    for ids in strata.values():
        for k, sid in enumerate(sorted(ids, key=lambda i: hashlib.sha256(i.encode()).hexdigest())):
            half[sid] = HALVES[k % 2]
    return half


def print_scores(results: list[tuple[str, set[str], set[str], list]], title: str, list_ids: bool) -> None:
    print(f"\n{title}:{' ' * max(1, 31 - len(title))}tp  fp  fn  precision  recall")
    for code in TAG_TO_CODE.values():
        tp = sum(1 for _, exp, got, _ in results if code in exp and code in got)
        fp = sum(1 for _, exp, got, _ in results if code not in exp and code in got)
        fn = sum(1 for _, exp, got, _ in results if code in exp and code not in got)
        prec = f"{tp / (tp + fp):.2f}" if tp + fp else "n/a"
        rec = f"{tp / (tp + fn):.2f}" if tp + fn else "n/a"
        print(f"  {code:28s} {tp:3d} {fp:3d} {fn:3d}  {prec:>9s}  {rec:>6s}")
        for sid, exp, got, _ in results if list_ids else []:
            if (code in got) != (code in exp):
                print(f"      {'FP' if code in got else 'FN'} {sid}")


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:5.1f}%"


def _overall(items: list[Item]) -> list[tuple[str, Score, Score]]:
    """Two overall rows: every (skill, code) pair pooled (micro average), and the decision that matters downstream,
    screened out (any code) versus eligible."""
    rows = []
    for attr in ("got", "naive"):
        micro = Score()
        for code in CODES:
            one = score(items, lambda i, c=code, a=attr: c in getattr(i, a), lambda i, c=code: c in i.labels)
            micro.tp, micro.fp, micro.fn = micro.tp + one.tp, micro.fp + one.fp, micro.fn + one.fn
        out = score(items, lambda i, a=attr: bool(getattr(i, a)), lambda i: bool(i.labels))
        rows.append((micro, out))
    (rm, ro), (bm, bo) = rows
    return [("overall: all codes (micro)", rm, bm), ("overall: screened out", ro, bo)]


def report_set(half: str, list_errors: bool, source: str | None = None, rounds: list[str] | None = None,
               learned_on: bool = False, ask_model: bool = False) -> None:
    items = [i for i in load_items(None if half == "all" else half)
             if source in (None, i.repo) and (not rounds or ROUND_GROUPS[i.round] in rounds)]
    absent = missing_mirrors(items)
    if absent:
        print(f"screening set skipped: no local mirror for {', '.join(absent)} under $S2E_MIRROR_DIR "
              "(default /work/.mirror); fetch those repositories to run it")
        return
    opinion = None
    if ask_model:
        config = from_env()
        if config.offline:
            raise SystemExit("--second-opinion needs a model endpoint: set S2E_LLM_BASE_URL and S2E_LLM_MODEL "
                             "(and S2E_LLM_API_KEY if the server wants one)")
        opinion = model_opinion(config, Path(config.cache_dir) / "second_opinion" if config.cache_dir else None)
    seconds = screen_items(items, CrawlSettings(screen=ScreenSettings(learned_opinion=learned_on)), opinion)
    unreadable = [i.id for i in items if i.record is None or not i.record.body]
    only = "".join(f" ({x} only)" for x in (source, rounds and f"round {', '.join(rounds)}") if x)
    mode = " (rules + learned opinion)" if learned_on else ""
    print(f"screening set{only}, {half} half{mode}: {len(items)} skills crawled in {seconds:.2f} s "
          f"({len(items) / seconds:.0f} skills/s incl. bundle, parse, dedup)")
    if unreadable:
        print(f"  {len(unreadable)} entries have no readable SKILL.md body in the mirrors: {unreadable[:5]}")
    print(f"\n{'code':28s}  n   rules: tp  fp  fn  prec    recall   naive: tp  fp  fn  prec    recall")
    for code in CODES:
        n = sum(code in i.labels for i in items)
        r = score(items, lambda i, c=code: c in i.got, lambda i, c=code: c in i.labels)
        b = score(items, lambda i, c=code: c in i.naive, lambda i, c=code: c in i.labels)
        if n or r.fp or b.fp:
            print(f"{code:28s} {n:3d}  {r.tp:8d} {r.fp:3d} {r.fn:3d}  {_fmt(r.precision)}  {_fmt(r.recall)}"
                  f"   {b.tp:7d} {b.fp:3d} {b.fn:3d}  {_fmt(b.precision)}  {_fmt(b.recall)}")
    for name, r, b in _overall(items):
        print(f"{name:28s} {'':3s}  {r.tp:8d} {r.fp:3d} {r.fn:3d}  {_fmt(r.precision)}  {_fmt(r.recall)}"
              f"   {b.tp:7d} {b.fp:3d} {b.fn:3d}  {_fmt(b.precision)}  {_fmt(b.recall)}")
    print(f"\n{'target':32s} {'rules':>16s} {'95% interval':>15s} {'naive':>16s}   goal")
    goals = {"credentials_or_live_recall": ">= 85%", "hardware_recall": ">= 80%", "malicious_recall": ">= 95%",
             "malicious_false_positive_rate": "<= 1%", "eligible_wrongly_screened_out": "<= 10%"}
    ours, naive, spread = targets(items, "got"), targets(items, "naive"), target_intervals(items, "got")
    for key, goal in goals.items():
        span = spread[key]
        shown = f"{_fmt(span[0]).strip()}-{_fmt(span[1]).strip()}" if span else "n/a"
        print(f"{key:32s} {_fmt(ours[key][0]):>7s} ({ours[key][1]:>7s}) {shown:>15s} {_fmt(naive[key][0]):>7s} "
              f"({naive[key][1]:>7s})   {goal}")
    print("(95% interval: a bootstrap over the split's groups, a lure campaign counting once)")
    if ask_model:
        _print_opinion_targets(items, goals)
    if list_errors:
        print("\nerrors (label vs rules):")
        for i in items:
            if i.got != i.labels:
                extra, missed = sorted(i.got - i.labels), sorted(i.labels - i.got)
                print(f"  {i.id}\n      +{extra} -{missed}  ({i.why})")


def _print_opinion_targets(items: list[Item], goals: dict[str, str]) -> None:
    """The targets with the model's second opinion, adding only and adding and clearing (one reply each skill)."""
    failed = sum(OPINION_FAILED in i.opinion for i in items)
    print(f"\nwith the model's second opinion ({failed} failed calls score as the screen alone):")
    print(f"{'target':32s} {'adds':>16s} {'adds + clears':>16s}   goal")
    rows = {}
    for mode in OPINION_MODES:
        for i in items:
            i.opinion.setdefault(mode, i.opinion.get(OPINION_FAILED, i.got))
        rows[mode] = targets([Item(**{**i.__dict__, "got": i.opinion[mode]}) for i in items])
    for key, goal in goals.items():
        a, c = rows["adds"][key], rows["adds_and_clears"][key]
        print(f"{key:32s} {_fmt(a[0]):>7s} ({a[1]:>7s}) {_fmt(c[0]):>7s} ({c[1]:>7s})   {goal}")


def report_sample(seed: int, part: str, results: Path | None, dry_run: bool) -> None:
    """The second opinion on the measurement sample (module docstring); only aggregates are printed."""
    items = load_items("test")
    absent = missing_mirrors(items)
    if absent:
        raise SystemExit(f"no local mirror for {', '.join(absent)} under $S2E_MIRROR_DIR (default /work/.mirror)")
    settings = CrawlSettings()  # the screen as shipped: rules + learned opinion
    screen_items(items, settings)
    sample = opinion_sample.draw(items, seed)
    k, n = (int(x) for x in part.split("/"))
    mine = opinion_sample.part(sample, k, n)
    sizes = Counter(d.stratum for d in sample)
    print(f"sample (seed {seed}, digest {opinion_sample.digest(sample)}): {len(sample)} of {len(items)} test-half "
          f"skills: {dict(sizes)}; part {part}: {len(mine)}")
    for name, _, _ in opinion_sample.STRATA:
        w = next((d.weight for d in sample if d.stratum == name), 0.0)
        print(f"  {name:24s} drawn {sizes[name]:3d}, weight {w:.2f} (population {round(w * sizes[name])})")
    if dry_run:
        chars: list[int] = []
        screen_items([d.item for d in mine], settings, lambda rec: _prompt_size(rec, chars))
        print(f"prompt characters per request: median {sorted(chars)[len(chars) // 2]}, max {max(chars)}, "
              f"total {sum(chars)}")
        return
    config = from_env()
    if config.offline:
        raise SystemExit("--sample needs a model endpoint: set S2E_LLM_BASE_URL and S2E_LLM_MODEL")
    opinion = model_opinion(config, Path(config.cache_dir) / "second_opinion" if config.cache_dir else None)
    t0 = time.perf_counter()
    screen_items([d.item for d in mine], settings, opinion)
    print(f"asked {len(mine)} skills in {time.perf_counter() - t0:.0f} s")
    if results is not None:
        opinion_sample.write_results(results, mine, entry_ids=False)
    print_sample_figures([opinion_sample.result_of(d) for d in mine])


def _prompt_size(record, chars: list[int]) -> dict:
    from skill2env_dagster.skillhub.opinion import opinion_messages, opinion_view

    chars.append(sum(len(m["content"]) for m in opinion_messages(opinion_view(record))))
    return {}


def print_sample_figures(results: list[opinion_sample.Result]) -> None:
    """Per stratum what the opinion changed; the targets on the sample and as test-half estimates."""
    print(f"\n{'stratum':24s} drawn failed cleared newly_out changed")
    for name, row in opinion_sample.strata_summary(results).items():
        print(f"{name:24s} {row['drawn']:5d} {row['failed']:6d} {row['cleared']:7d} {row['newly_screened_out']:9d} "
              f"{row['codes_changed']:7d}")
    for weighted in (False, True):
        title = "test-half estimate (weighted by stratum)" if weighted else "on the sample"
        print(f"\n{title}:\n{'target':32s} {'screen':>17s} {'adds':>17s} {'adds + clears':>17s}")
        for key, row in opinion_sample.figures(results, weighted).items():
            print(f"{key:32s} " + " ".join(f"{_fmt(row[v][0]):>7s} ({row[v][1]:>7s})"
                                           for v in opinion_sample.VERDICTS))
    for verdict, changes in opinion_sample.code_changes(results).items():
        print(f"codes changed ({verdict}): {dict(changes.most_common()) or 'none'}")
    print(f"recorded differences: {opinion_sample.differences(results) or 'none'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", action="store_true", help="score the labelled development set instead of the corpus")
    ap.add_argument("--half", choices=["tune", "test", "all"], default="test")
    ap.add_argument("--list-test", action="store_true", help="also list ids behind test-half errors")
    ap.add_argument("--source", help="only the set's entries from this repository (owner/name)")
    ap.add_argument("--round", choices=sorted(set(ROUND_GROUPS.values())), dest="rounds", action="append",
                    help="only the entries of these labelling rounds (1-2: the first 467; 3, 5, 6, 7, 8, 9, 10: "
                         "the third to tenth); repeat it for several rounds")
    ap.add_argument("--learned", action="store_true",
                    help="switch on the learned second opinion (screen/learned.py; its tune half is training data)")
    ap.add_argument("--second-opinion", action="store_true",
                    help="with --set: also ask the model endpoint of S2E_LLM_* for its second opinion on each skill "
                         "(one cached call per skill) and print the targets with it, adding only and adding and "
                         "clearing (settings.screen.second_opinion_clears)")
    ap.add_argument("--sample", type=int, nargs="?", const=opinion_sample.DEFAULT_SEED, default=None, metavar="SEED",
                    help="with --set --second-opinion: only the stratified seeded sample of the test half "
                         f"(screening_set/opinion_sample.py; default seed {opinion_sample.DEFAULT_SEED})")
    ap.add_argument("--part", default="1/1", metavar="K/N", help="with --sample: the k-th of n interleaved parts")
    ap.add_argument("--results", type=Path, help="with --sample: append the part's per-skill verdicts (no ids)")
    ap.add_argument("--dry-run", action="store_true", help="with --sample: sizes and prompt lengths, no model call")
    ap.add_argument("--aggregate", type=Path, nargs="+", metavar="FILE", help="print the figures of --results files")
    ap.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    ap.add_argument("--show", action="append", default=[], help="print findings of this code")
    ap.add_argument("--list-held-out", action="store_true", help="also list skill ids behind held-out errors")
    args = ap.parse_args()
    if args.aggregate:
        results = opinion_sample.read_results(args.aggregate)
        print(f"{len(results)} skills from {len(args.aggregate)} results files")
        print_sample_figures(results)
        return
    if args.set and args.sample is not None:
        report_sample(args.sample, args.part, args.results, args.dry_run)
        return
    if args.set:
        report_set(args.half, list_errors=args.half == "tune" or args.list_test, source=args.source,
                   rounds=args.rounds, learned_on=args.learned, ask_model=args.second_opinion)
        return
    manifest = json.loads((args.corpus / "manifest.json").read_text())
    settings = ScreenSettings()
    counts: Counter[str] = Counter()
    results: list[tuple[str, set[str], set[str], list]] = []
    t0, c0 = time.perf_counter(), time.process_time()
    for entry in manifest:
        texts, fm, body = read_skill(args.corpus / "skills" / entry["id"])
        findings = screen_skill(texts, fm, body, settings)
        if args.learned:  # the crawl reads name/description from the parsed record; the frontmatter's are the same
            doc = learned.document(fm.get("name"), fm.get("description"), fm, sorted(texts), body)
            skill_file = next((n for n in SKILL_FILES if n in texts), "SKILL.md")
            findings = learned.revise(findings, doc, body, texts.get(skill_file, ""), skill_file)
        got = {f.code.value for f in findings}
        counts.update(got)
        results.append((entry["id"], expected_codes(entry["quirks"]), got, findings))
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"screened {len(results)} skills (incl. reading files) in {elapsed:.2f} s wall, {cpu:.2f} s CPU "
          f"({len(results) / cpu:.1f} skills/s per core)")
    blocked = sum(1 for _, _, got, _ in results if got & {c.value for c in BLOCKING_CODES})
    print(f"screened out (any blocking code): {blocked}/{len(results)}")
    print("\nper-code counts:")
    for code, n in counts.most_common():
        print(f"  {code:24s} {n}")
    half = split_halves(manifest)
    for name in HALVES:
        part = [r for r in results if half[r[0]] == name]
        print_scores(part, f"{name} half ({len(part)} skills) vs manual tags",
                     list_ids=name == "dev" or args.list_held_out)
    print_scores(results, f"all {len(results)} skills vs manual tags", list_ids=False)
    for code in ["malicious", "harmful", *args.show]:
        hits = [(sid, f) for sid, _, _, fs in results for f in fs if f.code.value == code]
        print(f"\n{code} hits on the corpus: {len(hits)}")
        for sid, f in hits:
            print(f"  {sid} {f.rule} {f.file}:{f.line} {f.text[:110]}")


if __name__ == "__main__":
    main()
