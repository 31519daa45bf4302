"""A records export (tickets, requests, incidents, action items…) in which the skill's deadline rules decide which
records are late: each record's limit is its category's, counted in the rule's own unit, from its start event to
its end event (or to the export time while it is still open), extended only where the skill's extension condition
is met.

Records are planted by stratum so that no generic reading tells the late ones apart: answered well inside, exactly
at and just past the limit, long past it, still open before and after the limit, within a laxer category's limit
but past a stricter one's, saved or not by an extension, across a weekend (business days), near a month end
(calendar months), and written with other UTC offsets than their start (a local clock reading misleads).
"""

from __future__ import annotations

import calendar
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

OFFSETS = (0, 60, -300, 330, 120, -480)  # minutes east of UTC: the sites an export mixes
FIXED_UNITS = {"minutes": 1, "hours": 60, "days": 1440, "weeks": 10080}
# What a record is about, by kind of record (our own wording; a record's subject never decides its status).
SUBJECTS = {
    "ticket": ("Dashboard shows a blank page", "Charged twice this month", "SSO callback returns 403",
               "Export to PDF missing", "Cannot reset password", "Webhook deliveries delayed",
               "Report totals look wrong", "Invite email never arrived", "Search is slow on large projects",
               "API token expired unexpectedly", "Sync stops after upload", "Invoice address is wrong"),
    "request": ("Copy of all personal data", "Delete my account and history", "Correct my postal address",
                "Stop using my data for marketing", "Export my data in a portable format",
                "Restrict processing during dispute", "Which partners received my data", "Erase old support chats",
                "Object to profiling", "Access to call recordings", "Correct date of birth", "Remove my photos"),
    "incident": ("Checkout errors for some users", "Login latency above target", "Search index lagging",
                 "Email notifications delayed", "Image uploads failing", "Reports page timing out",
                 "Payment retries spiking", "Mobile app crash on start", "Webhook queue backing up",
                 "Partial outage in one region", "Stale cache after deploy", "Admin console 500 errors"),
    "breach": ("Customer emails sent to the wrong recipients", "Laptop with unencrypted HR files stolen",
               "Storage bucket exposed order history", "Support mailbox taken over by phishing",
               "Payroll export shared with the wrong vendor", "Test database with real customer data leaked",
               "Marketing list uploaded to a public folder", "Former contractor kept CRM access",
               "Backup tape lost in transit", "Password reset links logged in plain text",
               "Call recordings reachable without login", "Misaddressed medical letters"),
    "interview": ("Backend engineer - technical screen", "Staff data scientist - hiring manager call",
                  "Platform engineer - onsite loop", "Engineering manager - panel", "Site reliability engineer - "
                  "system design", "Frontend engineer - take-home review", "Security engineer - final round",
                  "ML engineer - recruiter screen", "Data engineer - pairing session", "Product engineer - "
                  "culture interview", "Solutions architect - case study", "Mobile engineer - onsite"),
}
GENERIC_SUBJECTS = ("Supplier qualification record incomplete", "Calibration log not signed", "Procedure out of date",
                    "Training record missing", "Review minutes not filed", "Risk file needs update",
                    "Document control gap", "Labelling check overdue", "Complaint trend review",
                    "Change control form incomplete", "Audit follow-up open", "Validation report pending")


def add(start: datetime, amount: int, unit: str) -> datetime:
    """`start` plus `amount` units, counted in UTC: business days skip Saturdays and Sundays and keep the clock time;
    months are calendar months (the same day, or the month's last day when it has none)."""
    start = start.astimezone(UTC)
    if unit in FIXED_UNITS:
        return start + timedelta(minutes=amount * FIXED_UNITS[unit])
    if unit == "business_days":
        day, left = start, amount
        while left:
            day += timedelta(days=1)
            left -= day.weekday() < 5
        return day
    if unit == "months":
        month = start.month - 1 + amount
        year, month = start.year + month // 12, month % 12 + 1
        return start.replace(year=year, month=month, day=min(start.day, calendar.monthrange(year, month)[1]))
    raise ValueError(f"unknown unit {unit}")


def span_minutes(amount: int, unit: str) -> int:
    """A limit's length in minutes, for planting (business days and months: their shortest length)."""
    if unit in FIXED_UNITS:
        return amount * FIXED_UNITS[unit]
    return amount * 1440 if unit == "business_days" else amount * 28 * 1440


def iso(t: datetime, offset: int) -> str:
    local = t.astimezone(timezone(timedelta(minutes=offset)))
    text = local.isoformat(timespec="seconds")
    return text.replace("+00:00", "Z")


def utc(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Limit:
    category: str
    amount: int
    unit: str
    ext_amount: int = 0
    ext_unit: str = ""

    def due(self, start: datetime, extended: bool) -> datetime:
        base = add(start, self.amount, self.unit)
        return add(base, self.ext_amount, self.ext_unit) if extended and self.ext_amount else base


@dataclass
class Record:
    id: str
    category: str
    start: datetime | None  # None: the start event never happened, so the rule does not cover the record
    end: datetime | None
    extended: bool
    stratum: str
    start_offset: int
    end_offset: int
    summary: str = ""
    earlier: datetime | None = None  # an earlier event the clock does not start from (when the rule names its start)


@dataclass
class DeadlineWorld:
    limits: dict[str, Limit]
    records: list[Record]
    exported_at: datetime

    def due(self, r: Record) -> datetime:
        assert r.start is not None
        return self.limits[r.category].due(r.start, r.extended)

    def late(self, r: Record) -> bool:
        if r.start is None:
            return False
        return (r.end if r.end is not None else self.exported_at) > self.due(r)

    def expected(self) -> dict[str, str]:
        return {r.id: utc(self.due(r)) for r in self.records if self.late(r)}

    def conditions(self) -> dict[str, list[str]]:
        """The records planted to test each condition of the rule, by condition (what `every_condition` grades)."""
        out: dict[str, list[str]] = {}
        for r in self.records:
            if cond := CONDITION_OF.get(r.stratum):
                out.setdefault(cond, []).append(r.id)
        return {c: sorted(ids) for c, ids in sorted(out.items())}

    def has_extensions(self) -> bool:
        return any(lim.ext_amount for lim in self.limits.values())


# Strata: (name, late?). Each plants the end relative to the due time; "open" strata leave the end empty.
STRATA = (("inside", False), ("at_limit", False), ("just_late", True), ("long_late", True),
          ("open_overdue", True), ("open_not_due", False), ("stricter_only", False), ("laxer_only", True),
          ("ext_saves", False),
          ("ext_late", True), ("weekend_trap", False), ("month_end_trap", True), ("offset_trap", True),
          ("earlier_trap", False), ("not_covered", False))

# Which condition of the rule each trap stratum tests ("inside" and "long_late" test none). Each stratum is a group
# of its own: the records whose verdict one dropped condition flips (an extension ignored turns `ext_saves` late but
# leaves `ext_late` late), so a reading that drops it scores 0 on that group.
CONDITION_OF = {"at_limit": "boundary: ending exactly at the deadline", "just_late": "boundary: one minute past",
                "open_overdue": "open: past the deadline at export", "open_not_due": "open: not yet due at export",
                "stricter_only": "category: within its own limit, past a stricter one's",
                "laxer_only": "category: past its own limit, within a laxer one's",
                "ext_saves": "extension: saved by an approved one", "ext_late": "extension: late even with one",
                "weekend_trap": "unit: business days skip a weekend", "month_end_trap": "unit: a short month",
                "offset_trap": "offsets: compared as instants", "earlier_trap": "start event: not the earlier one",
                "not_covered": "start event: never happened"}


def _strata(limits: dict[str, Limit], n: int, rng: random.Random, named_start: bool = False,
            optional_start: bool = False) -> list[str]:
    """n strata, about a third of them late, each that applies at least once when n allows."""
    units = {lim.unit for lim in limits.values()}
    applies = {"earlier_trap": named_start, "not_covered": optional_start,
               "stricter_only": len({span_minutes(x.amount, x.unit) for x in limits.values()}) > 1,
               "laxer_only": len({span_minutes(x.amount, x.unit) for x in limits.values()}) > 1
               and min(limits.values(), key=lambda x: span_minutes(x.amount, x.unit)).unit in FIXED_UNITS,
               "ext_saves": any(x.ext_amount for x in limits.values()),
               "ext_late": any(x.ext_amount for x in limits.values()),
               "weekend_trap": "business_days" in units, "month_end_trap": "months" in units,
               "offset_trap": bool(units & set(FIXED_UNITS))}
    names = [s for s, _ in STRATA if applies.get(s, True)]
    late = {s for s, is_late in STRATA if is_late}
    chosen = list(names)
    fill_ok = ["inside", "at_limit", "open_not_due", "earlier_trap" if named_start else "inside",
               "stricter_only" if applies["stricter_only"] else "inside"]
    i = 0
    while len(chosen) < n:
        chosen.append(fill_ok[i % len(fill_ok)])
        i += 1
    rng.shuffle(chosen)
    chosen = chosen[:n]
    while sum(s in late for s in chosen) * 100 > 40 * n:  # at most 40 % late: listing everything must not pay
        j = next(k for k, s in enumerate(chosen) if s in late)
        chosen[j] = "inside"
    return chosen


def _weekday(t: datetime, rng: random.Random) -> datetime:
    """A working-hours time on a weekday, no later than `t`."""
    out = t.replace(hour=rng.randrange(8, 17), minute=rng.choice((0, 5, 10, 15, 20, 30, 40, 45, 50)), second=0,
                    microsecond=0)
    while out > t or out.weekday() >= 5:
        out -= timedelta(days=1)
    return out


def _category_for(stratum: str, limits: dict[str, Limit], rng: random.Random, turn: int) -> str:
    cats = sorted(limits)
    if stratum in ("ext_saves", "ext_late"):
        cats = [c for c in cats if limits[c].ext_amount]
    elif stratum == "stricter_only":
        strictest = min(span_minutes(x.amount, x.unit) for x in limits.values())
        cats = [c for c in cats if span_minutes(limits[c].amount, limits[c].unit) > strictest]
    elif stratum == "laxer_only":  # late under the strictest category's own limit, on time under any laxer one
        strictest = min(span_minutes(x.amount, x.unit) for x in limits.values())
        cats = [c for c in cats if span_minutes(limits[c].amount, limits[c].unit) == strictest
                and limits[c].unit in FIXED_UNITS]
    elif stratum == "weekend_trap":
        cats = [c for c in cats if limits[c].unit == "business_days"]
    elif stratum == "month_end_trap":
        cats = [c for c in cats if limits[c].unit == "months"]
    elif stratum == "offset_trap":
        cats = [c for c in cats if limits[c].unit in FIXED_UNITS]
    return cats[turn % len(cats)] if stratum in ("inside", "at_limit") else rng.choice(cats)


def _plant(stratum: str, lim: Limit, export: datetime, rng: random.Random,
           limits: dict[str, Limit]) -> tuple[datetime, datetime | None, bool]:
    """(start, end or None, extended) for one record of `stratum` under `lim`."""
    longest = max(span_minutes(x.amount, x.unit) + span_minutes(x.ext_amount, x.ext_unit or "minutes")
                  for x in limits.values())
    span = span_minutes(lim.amount, lim.unit)
    step = 1 if lim.unit in ("minutes", "hours") else 60
    if stratum == "open_not_due":
        start = export - timedelta(minutes=max(step, span // 3))
        return start, None, False
    if stratum == "open_overdue":
        start = _weekday(export - timedelta(minutes=int(span * 1.8) + 2880), rng)
        return start, None, False
    start = _weekday(export - timedelta(minutes=3 * longest + rng.randrange(2880, 20160)), rng)
    if stratum == "weekend_trap":  # a Friday start: counted in calendar days it is late, in business days not
        start -= timedelta(days=(start.weekday() - 4) % 7)
        return start, lim.due(start, False) - timedelta(minutes=30), False
    if stratum == "month_end_trap":  # a start on the 31st: the next month ends sooner than 30 days later
        while start.day != 31 or start.month in (7, 12):
            start -= timedelta(days=1)
        return start, lim.due(start, False) + timedelta(days=1), False
    extended = stratum in ("ext_saves", "ext_late")
    due = lim.due(start, extended)
    if stratum == "earlier_trap":  # on time from the start event, late if counted from the earlier one
        return start, due - timedelta(minutes=step * rng.randrange(1, 20)), False
    base_due = lim.due(start, False)
    if stratum == "inside":
        end = start + (due - start) * rng.uniform(0.15, 0.8)
    elif stratum == "at_limit":
        end = due
    elif stratum == "just_late":
        end = due + timedelta(minutes=step)
    elif stratum == "long_late":
        end = due + (due - start) * rng.uniform(0.4, 1.5)
    elif stratum == "laxer_only":  # past its own limit by less than half the way to the next laxer one
        laxer = min(m for x in limits.values() if (m := span_minutes(x.amount, x.unit)) > span)
        end = due + timedelta(minutes=max(step, (laxer - span) // 2))
    elif stratum == "stricter_only":
        strict = min(span_minutes(x.amount, x.unit) for x in limits.values())
        end = start + timedelta(minutes=min(strict * 1.5 + step, (due - start).total_seconds() / 60 - step))
    elif stratum == "ext_saves":
        end = base_due + (due - base_due) * rng.uniform(0.3, 0.9)
    elif stratum == "ext_late":
        end = due + timedelta(minutes=step * rng.randrange(1, 30))
    elif stratum == "offset_trap":
        end = due + timedelta(minutes=rng.choice((20, 40, 50)))
    else:
        raise ValueError(stratum)
    return start, end.replace(second=0, microsecond=0), extended


def build(limits: dict[str, Limit], n: int, rng: random.Random, prefix: str, noun: str = "",
          examples: dict[str, list[str]] | None = None, named_start: bool = False, optional_start: bool = False,
          export: datetime = datetime(2026, 3, 20, 17, 30, tzinfo=UTC)) -> DeadlineWorld:
    """`n` records over `limits`; every record's late/on-time status is decided by its category's rule. A record's
    subject is one of the skill's own examples for its category when it lists some, else a stock subject."""
    subjects = list(SUBJECTS.get(noun, GENERIC_SUBJECTS))
    rng.shuffle(subjects)
    examples = {c: xs for c, xs in (examples or {}).items() if len(xs) >= 2}
    records: list[Record] = []
    turn = 0
    for i, stratum in enumerate(_strata(limits, n, rng, named_start, optional_start)):
        cat = _category_for(stratum, limits, rng, turn)
        turn += stratum in ("inside", "at_limit")
        if stratum == "not_covered":  # the start event never happened: the rule does not apply
            start, end, extended = None, None, False
        else:
            start, end, extended = _plant(stratum, limits[cat], export, rng, limits)
        so = rng.choice(OFFSETS)
        eo = rng.choice([o for o in OFFSETS if o != so]) if stratum == "offset_trap" else (
            so if rng.random() < 0.6 else rng.choice(OFFSETS))
        if stratum == "offset_trap":  # the end written further west than the start: local clocks shrink the gap
            so, eo = max(OFFSETS), min(OFFSETS)  # (late by under an hour, on time read as clock readings)
        subject = rng.choice(examples[cat]) if cat in examples else subjects[i % len(subjects)]
        earlier = None
        if named_start:
            anchor = start or export - timedelta(days=rng.randrange(3, 20))
            gap = limits[cat].due(anchor, False) - anchor
            earlier = anchor - gap * rng.uniform(0.3, 0.9)
            earlier = earlier.replace(second=0, microsecond=0)
        records.append(Record(f"{prefix}-{1040 + 7 * i + rng.randrange(7)}", cat, start, end, extended, stratum,
                              so, eo, subject, earlier))
    world = DeadlineWorld(limits, sorted(records, key=lambda r: r.earlier or r.start or export), export)
    problems = [r.id for r in world.records
                if world.late(r) != dict(STRATA)[r.stratum] or (r.end is not None and r.end >= export)
                or (r.start is not None and r.start >= export)]
    if problems or len({r.id for r in records}) != len(records):
        raise ValueError(f"planted records break their strata: {problems}")
    return world


def export_doc(world: DeadlineWorld, noun_plural: str, category_field: str, start_field: str, end_field: str,
               split_extensions: bool, earlier_field: str = "") -> dict[str, Any]:
    """The export as JSON-able data; the extension mark stays out when it ships in a file of its own, the category
    when there is only one."""
    rows = []
    for r in world.records:
        row: dict[str, Any] = {"id": r.id}
        if len(world.limits) > 1:
            row[category_field] = r.category
        row["subject"] = r.summary
        if earlier_field and r.earlier is not None:
            row[earlier_field] = iso(r.earlier, r.start_offset)
        row[start_field] = iso(r.start, r.start_offset) if r.start is not None else None
        row[end_field] = iso(r.end, r.end_offset) if r.end is not None else None
        if world.has_extensions() and not split_extensions:
            row["extension"] = "yes" if r.extended else "no"
        rows.append(row)
    return {"exported_at": iso(world.exported_at, 0), noun_plural: rows}
