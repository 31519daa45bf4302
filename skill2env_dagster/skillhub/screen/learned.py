"""A learned second opinion on the credentials-or-live-service verdict (issue 14).

Five rounds of keyword rules fitted the wording of the skills they were tuned on and no more. A linear text
classifier (TF-IDF over words and word pairs, logistic regression), trained only on the tune half of the labelled
screening set, catches account/live-service skills the rules miss (benchmarks/screening_set/README.md > Learned
second opinion). Its weights ship as data (`data/screening_learned.json`, rebuilt by
benchmarks/screening_set/train_learned.py), so the crawl needs no scikit-learn model file and no network.

How it combines with the rules (the seventh round's frozen design): the rules stay the first opinion and the
classifier may only ADD a verdict, never clear one (the LLM second opinion, skillhub/opinion.py, may clear only with
a quoted line and only when settings.screen.second_opinion_clears is on). It adds needs_live_service when the
rules found neither needs_external_account nor needs_live_service (and the stand-in policy did not waive one),
its probability reaches `threshold`, and a line of SKILL.md that names a remote host, a URL, an account or an
auth term (`ANCHOR`) pushes toward "needs": that line is the evidence. It never touches a
skill any finding calls malicious, nor any other code.
Why no clearing: the sixth round's opinion also cleared the rules' verdict below p 0.5. On the tune half its only
gain there was clearing stated credential requirements of self-hosting skills, and that same path cleared
developer skills from other hubs that do need a key (the shared corpus's credential tags fell from 17/21 to 10/21);
guarded so that it cleared only softer evidence, it lost more credentials-or-live skills than eligible ones it
freed on every tune-half estimate. Why the anchor: a confident document with no such line (an example log line
naming a local path such as `/api/checkout`) is a score, not evidence.
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
from skill2env_dagster.skillhub.screen.rules import book_fragments

MODEL_FILE = Path(__file__).resolve().parents[2] / "data" / "screening_learned.json"
MAX_CHARS = 20_000  # the head of SKILL.md: set-up sections come first, long reference tails add noise
MIN_EVIDENCE_CHARS = 12  # shorter lines (a bare heading, a fence) make poor evidence
CRED_LIVE = frozenset({ReasonCode.NEEDS_EXTERNAL_ACCOUNT, ReasonCode.NEEDS_LIVE_SERVICE})
RULE_ADD = "learned.needs_live_service"
# Local and placeholder hosts: the rule book's own fragments (data/screening_rules.yaml `fragments:`), one definition
_LOCAL = book_fragments()["local_host"] + r"\b"
_PLACEHOLDER = book_fragments()["placeholder_host"]
# What an evidence line must name: a URL of a remote (non-local, non-placeholder) host, a bare domain name, an
# account of the user's, or an authentication term (keys, access tokens, logins, OAuth, webhooks, credential-named
# variables). Bare "token" (LLM tokens) and "account" (a ledger account) are not enough on their own.
ANCHOR = re.compile(
    rf"https?://(?!{_LOCAL})(?!{_PLACEHOLDER})[\w-]+(\.[\w-]+)+"
    r"|(?<![\w./@-])([a-z0-9-]+\.)+(com|io|org|net|ai|dev|app|co|cloud|xyz|gov|edu|tv)\b"
    r"|\b(api[\s_-]?keys?|apikey|(access|auth|api|bot|bearer|refresh|session)[\s_-]?tokens?|personal\s+access\s+tokens?"
    r"|oauth\w*|log\s*-?\s*in|sign\s*-?\s*(in|up)|credentials?|client[\s_-]?secrets?|secret[\s_-]?keys?"
    r"|authenticat\w*|authori[sz]\w*|bearer|webhooks?|(your|an?)\s+([\w.-]+\s+)?accounts?)\b"
    r"|\b[A-Z0-9]+_(API_?KEY|APIKEY|TOKEN|SECRET|ACCESS_KEY|CLIENT_SECRET)\b",
    re.IGNORECASE)


def document(name: str | None, description: str | None, frontmatter: dict[str, Any], files: list[str],
             body: str) -> str:
    """What the classifier reads: name, description, the frontmatter as YAML, the file names and SKILL.md's body.
    The training script builds its documents with this function, so the crawl reads skills the same way."""
    fm = yaml.safe_dump(frontmatter, allow_unicode=True, sort_keys=True) if frontmatter else ""
    return f"{name or ''}\n{description or ''}\n{fm}\nFILES {' '.join(files)}\n{body[:MAX_CHARS]}"


def evidence_lines(body: str) -> list[str]:
    """The body lines that may carry the opinion's evidence: long enough and naming a remote service (`ANCHOR`).
    The experiment (learned_opinion.py) scores the same lines."""
    return [t for t in (ln.strip() for ln in body.split("\n")) if len(t) >= MIN_EVIDENCE_CHARS and ANCHOR.search(t)]


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

    def evidence(self, body: str) -> tuple[str, float] | None:
        """(line, score) of the evidence line (`evidence_lines`) pushing furthest toward 'needs'; None when none
        pushes that way."""
        scored = [(line, self.margin(line)) for line in evidence_lines(body)]
        return max((s for s in scored if s[1] > 0), key=lambda s: s[1], default=None)


@cache
def load_model(path: Path = MODEL_FILE) -> LearnedModel:
    return LearnedModel(json.loads(path.read_text(encoding="utf-8")))


def revise(findings: list[Finding], doc: str, body: str, skill_md: str, skill_file: str,
           model: LearnedModel | None = None) -> list[Finding]:
    """The rules' findings, plus needs_live_service when the classifier adds it (module docstring)."""
    if any(f.code in CRED_LIVE | {ReasonCode.MALICIOUS, ReasonCode.STANDIN_POSSIBLE} for f in findings):
        return findings  # the rules decided, or the stand-in policy did, or the skill is malicious
    m = model or load_model()
    p = m.probability(doc)
    hit = m.evidence(body) if p >= m.threshold else None
    if hit is None:
        return findings
    return [*findings, Finding(code=ReasonCode.NEEDS_LIVE_SERVICE, rule=RULE_ADD, file=skill_file,
                               line=line_of(skill_md, hit[0]), text=f"p={p:.2f}: {hit[0]}"[:200])]


_SCORED = re.compile(r"^p=(\d\.\d\d): ")


def probability_of(f: Finding) -> float | None:
    """The classifier's probability an added finding records (None for any other finding)."""
    m = _SCORED.match(f.text) if f.rule == RULE_ADD else None
    return float(m.group(1)) if m else None


def line_of_evidence(f: Finding) -> str:
    """A finding's text without the classifier's score: the part that is the skill's own words."""
    return _SCORED.sub("", f.text) if f.rule == RULE_ADD else f.text
