#!/usr/bin/env python3
"""Deduplicate a CSV by a normalised key and a survivor policy (see SKILL.md)."""
import argparse
import csv
import os
import re
import sys


def norm_email(v: str) -> str:
    v = v.strip().casefold()
    if "@" not in v:
        return v
    local, domain = v.rsplit("@", 1)
    if domain in ("gmail.com", "googlemail.com"):
        local = local.split("+", 1)[0].replace(".", "")
        domain = "gmail.com"
    return f"{local}@{domain}"


def norm(col: str, v: str) -> str:
    if col == "email":
        return norm_email(v)
    if col == "postcode":
        return re.sub(r"\s+", "", v).upper()
    if col == "phone":
        v = v.strip()
        plus = v.startswith("+") or v.startswith("00")
        digits = re.sub(r"\D", "", v)
        digits = digits[2:] if v.startswith("00") else digits
        return ("+" if plus else "") + digits
    return re.sub(r"\s+", " ", v.strip()).casefold()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--key", required=True)
    ap.add_argument("--policy", default="first")
    ap.add_argument("--out", default="out")
    a = ap.parse_args()
    with open(a.csv, newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        rows = list(reader)
    cols = a.key.split("+")
    if any(c not in header for c in cols):
        print(f"missing key column in {cols}", file=sys.stderr)
        return 2
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        parts = [norm(c, r[c] or "") for c in cols]
        key = "|".join(parts) if all(parts) else ""
        groups.setdefault(key or f"\0{i}", []).append(i)

    def score(i: int):
        r = rows[i]
        if a.policy.startswith("latest:"):
            return (r[a.policy.split(":", 1)[1]] or "", -i)
        if a.policy == "most_complete":
            return (sum(1 for v in r.values() if v and v.strip()), -i)
        return (0, -i)

    keep, dropped = set(), []
    for key, idx in groups.items():
        best = max(idx, key=score)
        keep.add(best)
        dropped += [(i + 1, key, best + 1, "duplicate") for i in idx if i != best]
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "deduped.csv"), "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=header)
        w.writeheader()
        w.writerows(rows[i] for i in sorted(keep))
    with open(os.path.join(a.out, "dropped.csv"), "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["row_number", "key", "survivor_row", "reason"])
        w.writerows(sorted(dropped))
    real_groups = sum(1 for k in groups if not k.startswith("\0"))
    print(f"rows={len(rows)} groups={real_groups} dropped={len(dropped)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
