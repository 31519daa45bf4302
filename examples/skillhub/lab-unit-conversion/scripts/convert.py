#!/usr/bin/env python3
"""Convert lab results to target units with significant-figure rounding (see SKILL.md)."""
import csv
import json
import sys
from decimal import ROUND_HALF_EVEN, Decimal

FACTOR_TO = {
    ("mg/dL", "mmol"): ("mmol/L", Decimal(10)),
    ("mg/dL", "umol"): ("µmol/L", Decimal(10000)),
}
MICRO = {"creatinine"}


def sig(x: Decimal, n: int) -> Decimal:
    if x == 0:
        return x
    exp = x.adjusted() - n + 1
    return x.quantize(Decimal(1).scaleb(exp), rounding=ROUND_HALF_EVEN)


def nsig(text: str) -> int:
    digits = text.replace(".", "").lstrip("0") or "0"
    return len(digits)


def convert(analyte: str, raw: str, unit: str, masses: dict) -> tuple[str, str, str]:
    qual = raw[0] if raw[:1] in "<>" else ""
    text = raw[1:] if qual else raw
    v, n = Decimal(text), nsig(text)
    if unit == "degF":
        return qual + str(sig((v - 32) * 5 / 9, n)), "degC", "ok"
    if unit == "mmHg":
        return qual + str(sig(v * Decimal("0.133322"), n)), "kPa", "ok"
    if unit == "mg/dL" and analyte in masses:
        m = Decimal(str(masses[analyte]))
        target, f = FACTOR_TO[("mg/dL", "umol" if analyte in MICRO else "mmol")]
        return qual + str(sig(v * f / m, n)), target, "ok"
    return raw, unit, "unconvertible"


def main() -> int:
    masses = json.load(open(sys.argv[2]))
    w = csv.writer(sys.stdout)
    w.writerow(["sample_id", "analyte", "value", "unit", "status"])
    for r in csv.DictReader(open(sys.argv[1], newline="")):
        w.writerow([r["sample_id"], r["analyte"], *convert(r["analyte"], r["value"], r["unit"], masses)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
