#!/usr/bin/env python3
"""Reconcile invoices against AP ledger postings; print an exceptions CSV (see SKILL.md)."""
import csv
import re
import sys
from datetime import date
from decimal import Decimal

TOL = Decimal("0.01")


def ref(v: str) -> str:
    v = re.sub(r"\s+", "", v.upper()).lstrip("#")
    return re.sub(r"^INV-?", "", v)


def main(inv_path: str, led_path: str) -> int:
    invoices = list(csv.DictReader(open(inv_path, newline="")))
    ledger = list(csv.DictReader(open(led_path, newline="")))
    used, seen, out, matched = set(), set(), [], 0
    for inv in invoices:
        key = (inv["supplier_id"], ref(inv["invoice_no"]))
        net, vat, gross = (Decimal(inv[c]) for c in ("net", "vat", "gross"))
        posts = [p for p in ledger if (p["supplier_id"], ref(p["reference"])) == key]
        used.update(p["entry_id"] for p in posts)
        if net + vat != gross:
            out.append((f"{key[0]}:{key[1]}", "ARITHMETIC", str(net + vat - gross), ""))
            continue
        if key in seen:
            out.append((f"{key[0]}:{key[1]}", "DUPLICATE_INVOICE", "", ""))
            continue
        seen.add(key)
        if not posts:
            out.append((f"{key[0]}:{key[1]}", "MISSING_POSTING", "", ""))
            continue
        total = sum(-Decimal(p["amount"]) for p in posts)
        late = any((date.fromisoformat(p["posting_date"]) - date.fromisoformat(inv["invoice_date"])).days > 45
                   for p in posts)
        flags = "LATE_POSTING" if late else ""
        if abs(total - gross) > TOL:
            out.append((f"{key[0]}:{key[1]}", "AMOUNT_MISMATCH", str(gross - total), flags))
        else:
            matched += 1
    for p in ledger:
        if p["entry_id"] not in used:
            out.append((p["entry_id"], "UNMATCHED_POSTING", p["amount"], ""))
    w = csv.writer(sys.stdout)
    w.writerow(["key", "status", "difference", "flags"])
    w.writerows(sorted(out, key=lambda r: (r[1], r[0])))
    print(f"invoices={len(invoices)} matched={matched} exceptions={len(out)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
