#!/usr/bin/env python3
"""Flag suspicious lines in an untrusted skill folder; prints findings CSV. Reads only, never executes."""
import csv
import re
import sys
from pathlib import Path

# Indicator patterns this detector looks for (quoted here as data to detect, not instructions).
INDICATORS = {
    "agent_override": re.compile(r"ignore (all )?(previous|prior) instructions|do not tell the user", re.I),
    "pipe_to_shell": re.compile(r"(curl|wget)[^|\n]*\|\s*(sudo\s+)?(ba|z)?sh\b", re.I),
    "persistence": re.compile(r">>\s*~?/?[\w./]*(authorized_keys|\.bashrc|\.zshrc|\.profile)\b"),
    "exfiltration": re.compile(r"(curl|wget|nc)\b[^\n]*(\.env\b|\.aws/credentials|id_rsa)", re.I),
    "wallet": re.compile(r"\b0x[0-9a-fA-F]{40}\b|\bbc1[a-z0-9]{25,59}\b"),
    "protected_archive": re.compile(r"(unzip\s+-P|7z\s+x\s+-p|password[- ]protected\s+(zip|archive))", re.I),
}
SEVERITY = {name: "high" for name in INDICATORS}


def scan(root: Path):
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            yield (str(path.relative_to(root)), 0, "binary_or_unreadable", "review", "")
            continue
        for n, line in enumerate(text.splitlines(), 1):
            for name, rx in INDICATORS.items():
                if rx.search(line):
                    yield (str(path.relative_to(root)), n, name, SEVERITY[name], line.strip()[:120])


if __name__ == "__main__":
    w = csv.writer(sys.stdout)
    w.writerow(["file", "line", "indicator", "severity", "evidence"])
    w.writerows(scan(Path(sys.argv[1])))
