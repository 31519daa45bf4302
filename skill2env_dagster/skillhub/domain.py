"""A coarse domain label per skill from its vocabulary, for corpus mix and per-domain probe breakdowns.

Keyword voting is crude but transparent and stable; the label never gates anything, it only groups statistics.
"""

from __future__ import annotations

import re
from collections import Counter

DOMAIN_KEYWORDS: dict[str, tuple[str, ...]] = {
    "software-eng": ("code", "refactor", "git", "pull request", "unit test", "api", "typescript", "python",
                     "compiler", "debug", "repository", "function", "library", "lint"),
    "devops-sre": ("nginx", "kubernetes", "docker", "deploy", "incident", "log", "latency", "terraform", "server",
                   "ci/cd", "monitoring", "uptime", "config"),
    "data": ("csv", "sql", "dataset", "etl", "pipeline", "dataframe", "parquet", "query", "schema", "dedup",
             "spreadsheet", "table", "join"),
    "finance": ("invoice", "ledger", "accounting", "revenue", "budget", "valuation", "portfolio", "tax",
                "reconcil", "financial", "payment", "cash flow"),
    "science": ("experiment", "molecule", "protein", "assay", "unit conversion", "laboratory", "physics",
                "chemistry", "genom", "sample", "measurement"),
    "ml-research": ("model", "training", "fine-tun", "transformer", "gradient", "dataset", "inference",
                    "benchmark", "embedding", "llm"),
    "security": ("vulnerab", "malicious", "exploit", "secret", "injection", "attack", "threat", "audit",
                 "cve", "phishing", "credential"),
    "writing": ("markdown", "document", "copy", "editorial", "style guide", "proofread", "prose", "readme",
                "headings", "changelog"),
    "marketing": ("campaign", "seo", "brand", "audience", "conversion", "landing page", "newsletter", "ads"),
    "design": ("figma", "layout", "typography", "color", "ui", "ux", "wireframe", "accessibility", "svg"),
    "legal-compliance": ("contract", "compliance", "gdpr", "clause", "policy", "regulation", "legal", "nda"),
    "hr": ("timesheet", "payroll", "hiring", "candidate", "employee", "onboarding", "interview", "leave"),
    "productivity": ("meeting", "notes", "calendar", "todo", "summary", "agenda", "email", "task list"),
    "sales": ("lead", "crm", "pipeline stage", "prospect", "quota", "deal", "outreach"),
    "education": ("lesson", "student", "curriculum", "quiz", "teaching", "course", "grading"),
    "hardware": ("arduino", "microcontroller", "serial port", "firmware", "gpio", "sensor"),
}


_KEYWORD_DOMAINS: dict[str, list[str]] = {}
for _domain, _words in DOMAIN_KEYWORDS.items():
    for _w in _words:
        _KEYWORD_DOMAINS.setdefault(_w, []).append(_domain)
# One alternation, longest keywords first, matched at word starts: a single pass over the text.
_KEYWORDS = re.compile(r"\b(" + "|".join(re.escape(w) for w in sorted(_KEYWORD_DOMAINS, key=len, reverse=True)) + ")")
_ORDER = {d: i for i, d in enumerate(DOMAIN_KEYWORDS)}


def _keyword_counts(text: str) -> Counter[str]:
    return Counter(_KEYWORDS.findall(text))


def guess_domain(name: str, description: str, body: str) -> str:
    votes: Counter[str] = Counter()
    for kw, n in _keyword_counts(f"{name} {description}".lower()).items():
        for d in _KEYWORD_DOMAINS[kw]:
            votes[d] += 3 * n
    for kw, n in _keyword_counts(body.lower()[:20000]).items():
        for d in _KEYWORD_DOMAINS[kw]:
            votes[d] += min(n, 5)
    if not votes:
        return "general"
    return max(votes.items(), key=lambda kv: (kv[1], -_ORDER[kv[0]]))[0]
