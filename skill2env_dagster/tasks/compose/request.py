"""instruction.md for the rule-decided shapes: whole sentences the shape writes (what the work is, where the inputs
are, every rule the verifier grades with its conditions, the conventions it grades by, the deliverable), arranged
by tone, persona and expertise. Nothing is stitched from fragments: the only inserted values are paths, file
fields, numbers and the skill's own sentences in quotation marks."""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass
class Request:
    """What an instruction must say, each part one or more complete sentences."""

    situation: str  # why the work is wanted, naming the inputs
    rules: str  # every graded rule, with its conditions (the skill's sentences quoted)
    conventions: str  # how the verifier reads the answer: boundaries, units, scope, format details
    deliverable: str  # the output path(s) and their exact layout
    ask: str  # one short imperative sentence: "Find the late tickets."
    extra: list[str] = field(default_factory=list)  # e.g. "Leave the export as it is."
    hint: str = ""  # for novices


def render(r: Request, persona: str, tone: str, expertise: str, seed: int) -> str:
    """The request in one of the tones. No persona line ("I'm on the engineering team"): the role an axis draws
    rarely fits the skill's domain (an engineer auditing GDPR notifications, blind review 2), and a real request
    says what is wanted, not who asks; `persona` stays in the task's metadata."""
    rng = random.Random(seed)
    extra = " ".join(r.extra)
    hint = f" {r.hint}" if expertise == "novice" and r.hint else ""
    ask = r.ask[:1].lower() + r.ask[1:].rstrip(".")
    if tone == "first_person_ask":
        opener = rng.choice(["Hi!", "Hello!", "Hi all!"])
        paras = [f"{opener} {r.situation}", f"{r.rules} {r.conventions}",
                 f"Could you {ask}? {r.deliverable} {extra}{hint}"]
    elif tone == "ticket_snippet":
        paras = [f"Ticket OPS-{rng.randint(1000, 9999)}: {r.ask} {r.situation}",
                 f"{r.rules} {r.conventions}", f"{r.deliverable} {extra}{hint}"]
    elif tone == "example_driven":
        paras = [f"{r.situation} {r.ask}", f"{r.rules} {r.conventions}", f"{r.deliverable} {extra}{hint}"]
    else:  # imperative_brief
        paras = [f"{r.ask} {r.situation}", f"{r.rules} {r.conventions} {r.deliverable} {extra}{hint}"]
    if expertise == "expert" and len(paras) == 3:
        paras = [paras[0], f"{paras[1]} {paras[2]}"]
    return "\n\n".join(" ".join(p.split()) for p in paras) + "\n"
