"""Instruction wording: the same brief said the way a given persona would ask, in a given tone and for a given
expertise — a natural request of 2–3 short paragraphs, never a step list."""

from __future__ import annotations

import random

_ROLE = {
    "software_engineer": "on the engineering team", "platform_engineer": "looking after the platform",
    "site_reliability_engineer": "on call this week", "quality_engineer": "doing QA on this",
    "data_engineer": "maintaining the pipelines", "data_analyst": "putting together the numbers",
    "security_engineer": "on the security team", "security_auditor": "running the audit",
    "technical_writer": "owning the docs", "researcher": "working on the study",
    "product_manager": "planning the release", "support_engineer": "handling the support queue",
    "compliance_officer": "preparing the compliance review", "executive": "preparing tomorrow's briefing",
}


def _role(persona: str) -> str:
    return _ROLE.get(persona, f"working as a {persona.replace('_', ' ')}")


def _prose(rules: list[str]) -> str:
    """Rules joined as flowing sentences (connectives, not bullets)."""
    links = ["", "Also, ", "On top of that, ", "Finally, "]
    out = []
    for i, r in enumerate(rules):
        link = links[min(i, len(links) - 1)] if i else ""
        out.append(link + (r[0].lower() + r[1:] if link else r))
    return " ".join(out)


def compose(brief, persona: str, tone: str, expertise: str, seed: int, context: str = "") -> str:
    """2–3 paragraphs; persona sets the voice, tone the framing, expertise how much orientation is given.
    `context` (the skill's method in its own terms) closes the first paragraph."""
    rng = random.Random(seed)
    ask = brief.ask[0].upper() + brief.ask[1:]
    hint = f" {brief.novice_hint}" if expertise == "novice" and brief.novice_hint else ""
    terse = expertise == "expert"
    rules = _prose(brief.rules)
    if tone == "first_person_ask":
        opener = rng.choice(["Hi!", "Hey,", "Quick favour:"])
        p1 = f"{opener} I'm {_role(persona)} and could use a hand with {brief.topic}. {brief.situation}"
        p2 = f"Could you {brief.ask}? {rules}"
        p3 = f"{brief.deliverable}{hint}" + ("" if terse else " Thanks — I'll check the result directly.")
    elif tone == "imperative_brief":
        p1 = f"{ask}. {brief.situation}"
        p2 = rules
        p3 = f"{brief.deliverable}{hint}"
    elif tone == "ticket_snippet":
        ticket = f"OPS-{rng.randint(1000, 9999)}"
        p1 = f"Ticket {ticket} — {brief.topic} (filed by someone {_role(persona)}). {brief.situation}"
        p2 = f"Requested: {brief.ask}. {rules}"
        p3 = f"Acceptance: {brief.deliverable[0].lower()}{brief.deliverable[1:]}{hint}"
    else:  # example_driven
        p1 = f"I'm {_role(persona)} and need you to {brief.ask}. {brief.situation}"
        p2 = f"{rules} {brief.deliverable}"
        p3 = f"For illustration only, a result line looks like `{brief.example.splitlines()[-1]}`." + hint
    p1 = f"{p1} {context}" if context else p1
    paragraphs = [p1, p2, p3] if not terse or tone == "example_driven" else [p1, f"{p2} {p3}"]
    return "\n\n".join(" ".join(p.split()) for p in paragraphs) + "\n"
