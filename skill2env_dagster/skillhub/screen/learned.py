"""A learned second opinion on the credentials-or-live-service verdict (issue 14).

Five rounds of keyword rules fitted the wording of the skills they were tuned on and no more. A linear text
classifier (TF-IDF over words and word pairs, logistic regression), trained only on the tune half of the labelled
screening set, generalised better on skills neither had seen (benchmarks/screening_set/README.md > Learned second
opinion). Its weights ship as data (`data/screening_learned.json`, rebuilt by
benchmarks/screening_set/train_learned.py), so the crawl needs no scikit-learn model file and no network.

How it combines with the rules (the frozen design): the rules stay the first opinion and the classifier decides
the needs_external_account / needs_live_service verdict both ways -
- it clears the rules' cred/live findings when its probability is below `threshold`, unless one of them comes from
  a frontmatter requirement (`req.*`), recording an evidence-only `cleared_by_model` finding on the line that
  pushed it furthest toward "local";
- it adds needs_live_service when the rules found neither code (and the stand-in policy did not waive one), its
  probability reaches `threshold` and a line of SKILL.md pushes toward "needs" (that line is the evidence);
- it never touches a skill any finding calls malicious, nor any other code.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from skill2env_dagster.models.skill import Finding
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.skillhub.screen.context import line_of

MODEL_FILE = Path(__file__).resolve().parents[2] / "data" / "screening_learned.json"
MAX_CHARS = 20_000  # the head of SKILL.md: set-up sections come first, long reference tails add noise
MIN_EVIDENCE_CHARS = 12  # shorter lines (a bare heading, a fence) make poor evidence
CRED_LIVE = frozenset({ReasonCode.NEEDS_EXTERNAL_ACCOUNT, ReasonCode.NEEDS_LIVE_SERVICE})
RULE_ADD = "learned.needs_live_service"
RULE_CLEAR = "learned.local"


def document(name: str | None, description: str | None, frontmatter: dict[str, Any], files: list[str],
             body: str) -> str:
    """What the classifier reads: name, description, the frontmatter as YAML, the file names and SKILL.md's body.
    The training script builds its documents with this function, so the crawl reads skills the same way."""
    fm = yaml.safe_dump(frontmatter, allow_unicode=True, sort_keys=True) if frontmatter else ""
    return f"{name or ''}\n{description or ''}\n{fm}\nFILES {' '.join(files)}\n{body[:MAX_CHARS]}"


class LearnedModel:
    """scikit-learn's TfidfVectorizer (lower-cased, `token_pattern`, n-grams, sublinear tf, idf, L2 norm) and a
    logistic regression's coefficients, re-implemented over the exported vocabulary (the training script checks
    that both give the same probabilities)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.token = re.compile(data["token_pattern"])
        self.ngrams = tuple(data["ngram_range"])
        self.index = {t: k for k, t in enumerate(data["terms"])}
        self.idf: list[float] = data["idf"]
        self.coef: list[float] = data["coef"]
        self.intercept = float(data["intercept"])
        self.threshold = float(data["threshold"])

    def _features(self, text: str) -> dict[int, float]:
        tokens = self.token.findall(text.lower())
        grams: Counter[int] = Counter()
        for n in range(self.ngrams[0], self.ngrams[1] + 1):
            for k in range(len(tokens) - n + 1):
                j = self.index.get(" ".join(tokens[k:k + n]))
                if j is not None:
                    grams[j] += 1
        x = {j: (1.0 + math.log(c)) * self.idf[j] for j, c in grams.items()}
        norm = math.sqrt(sum(v * v for v in x.values()))
        return {j: v / norm for j, v in x.items()} if norm else {}

    def margin(self, text: str) -> float:
        """The linear score without the intercept: how far `text`'s terms push toward 'needs'."""
        return sum(v * self.coef[j] for j, v in self._features(text).items())

    def probability(self, doc: str) -> float:
        return 1.0 / (1.0 + math.exp(-(self.margin(doc) + self.intercept)))

    def evidence(self, body: str, sign: int) -> tuple[str, float] | None:
        """(line, score) of the body line pushing furthest in `sign`'s direction (+1 needs, -1 local)."""
        best: tuple[str, float] | None = None
        for line in body.split("\n"):
            text = line.strip()
            if len(text) < MIN_EVIDENCE_CHARS:
                continue
            s = sign * self.margin(text)
            if s > 0 and (best is None or s > best[1]):
                best = (text, s)
        return best


@cache
def load_model(path: Path = MODEL_FILE) -> LearnedModel:
    return LearnedModel(json.loads(path.read_text(encoding="utf-8")))


def revise(findings: list[Finding], doc: str, body: str, skill_md: str, skill_file: str,
           model: LearnedModel | None = None) -> list[Finding]:
    """The rules' findings with the classifier's verdict on cred/live applied (module docstring)."""
    if any(f.code == ReasonCode.MALICIOUS for f in findings):
        return findings
    m = model or load_model()
    p = m.probability(doc)
    cred_live = [f for f in findings if f.code in CRED_LIVE]
    if cred_live and p < m.threshold and not any(f.rule.startswith("req.") for f in cred_live):
        line, _ = m.evidence(body, -1) or ("", 0.0)
        rules = ", ".join(sorted({f.rule.split("@")[0] for f in cred_live}))
        note = Finding(code=ReasonCode.CLEARED_BY_MODEL, rule=RULE_CLEAR, file=skill_file,
                       line=line_of(skill_md, line), text=f"p={p:.2f} cleared ({rules}): {line}"[:200])
        return [f for f in findings if f.code not in CRED_LIVE] + [note]
    waived = any(f.code == ReasonCode.STANDIN_POSSIBLE for f in findings)  # the stand-in policy decided it
    if not cred_live and not waived and p >= m.threshold:
        hit = m.evidence(body, +1)
        if hit is not None:
            return [*findings, Finding(code=ReasonCode.NEEDS_LIVE_SERVICE, rule=RULE_ADD, file=skill_file,
                                       line=line_of(skill_md, hit[0]), text=f"p={p:.2f}: {hit[0]}"[:200])]
    return findings
