"""Screen the shared corpus of real skills and compare with its manual quirk tags.

Prints per-code counts, precision/recall of needs_external_account / needs_live_service / needs_hardware /
persona_only against the manifest tags (needs_credentials:, needs_live_service:, needs_hardware:, persona_only),
every malicious/harmful hit (the corpus is benign: each one is a false positive), and the screening speed.

Overfitting guard: the corpus is split into two halves by a hash of the skill id, stratified by manual tag so both
halves hold tagged skills (within each stratum, skills sorted by SHA-256 of their id alternate dev / held-out).
Rules are developed looking at the `dev` half only; the `held-out` figures are the honest ones. Skill ids behind
held-out errors are listed only with --list-held-out (so a rule author does not look at them by accident).

    .venv/bin/python benchmarks/screen_corpus_report.py [--corpus ../shared/corpus] [--show CODE] [--list-held-out]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from collections import Counter
from pathlib import Path

from skill2env_dagster.skillhub.parse import parse_skill_md
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    ap.add_argument("--show", action="append", default=[], help="print findings of this code")
    ap.add_argument("--list-held-out", action="store_true", help="also list skill ids behind held-out errors")
    args = ap.parse_args()
    manifest = json.loads((args.corpus / "manifest.json").read_text())
    settings = ScreenSettings()
    counts: Counter[str] = Counter()
    results: list[tuple[str, set[str], set[str], list]] = []
    t0, c0 = time.perf_counter(), time.process_time()
    for entry in manifest:
        texts, fm, body = read_skill(args.corpus / "skills" / entry["id"])
        findings = screen_skill(texts, fm, body, settings)
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
