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


def guess_domain(name: str, description: str, body: str) -> str:
    head = f"{name} {description}".lower()
    text = body.lower()[:20000]
    votes: Counter[str] = Counter()
    for domain, words in DOMAIN_KEYWORDS.items():
        for w in words:
            pattern = r"\b" + re.escape(w)
            votes[domain] += 3 * len(re.findall(pattern, head)) + min(len(re.findall(pattern, text)), 5)
    if not votes or votes.most_common(1)[0][1] == 0:
        return "general"
    best = max(votes.items(), key=lambda kv: (kv[1], -list(DOMAIN_KEYWORDS).index(kv[0])))
    return best[0]
