"""A small grammar check for the phrases the composer builds from extracted fragments: a subject that names what
a rule is about must be a complete noun phrase, or the sentence reads as word salad ("the rules in play concern
greatest iso- and exists disk"). No tagger is installed offline, so the check is lexical: it rejects the classes
of fragment the extractors produce (a dangling hyphen or prefix, a verb or auxiliary at the start, a preposition
or article at the end, a file-extension stub, a lone generic word, a phrase the source never wrote contiguously)."""

from __future__ import annotations

import re

from skill2env_dagster.knowledge.procedures import VERBS


def _set(words: str) -> frozenset[str]:
    """A word list written as text (it reads better than a list literal)."""
    return frozenset(words.split())


_AUX = _set("""
is are was were be been being do does did done not no has have had having can could will would shall should must may
might need needs exists exist saw seen get gets got make makes made use uses used keep keeps see sees
""")
_FUNCTION = _set("""
a an the and or but nor of to in on at by for from with without into onto via per as than that which who whom whose
this these those it its their our your my his her if when while because so such any each every all some more most
less least very also only just even e.g i.e etc vs
""")
_EXTENSION = _set("md py js ts json yaml yml toml txt csv tsv sh")
# One word that says nothing about what a rule concerns.
_GENERIC = _set("""
convention conventions name names essentials rule rules value values item items thing things part parts code
section sections field fields entry entries content note notes example examples detail details general setting
settings option options data information info file files text line lines word words number numbers use usage
""")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'’]*(?:-[A-Za-z0-9]+)*")
# In prose only the stubs that are never English words on their own ('csv module', 'sh script' are fine).
_EXT_STUB = re.compile(r"(?<![.\w`/])(?:md|ya?ml|toml|py)(?![\w`])")
_DANGLING_HYPHEN = re.compile(r"(?<=\w)-(?=[\s,;.]|$)")


def with_article(noun: str) -> str:
    """`a`/`an` by the noun's first letters ("an analyte", "a key", "an update"): column names from skills are any
    words, and a fixed "a {noun}" wrote "a analyte". A "u" takes "a" where it sounds like "you" (unit, user, URL)."""
    low = noun.lower()
    vowel = low[:1] in "aeio" or (low[:1] == "u" and not low.startswith(("uni", "use", "usa", "usu", "uti", "ur")))
    return ("an " if vowel else "a ") + noun


def noun_phrase_problem(phrase: str, source: str = "") -> str:
    """Why `phrase` is not a complete noun phrase ('' when it is). With `source`, the phrase must also occur in it
    contiguously (case-insensitive), so words stitched from across a sentence are caught."""
    words = phrase.split()
    if not 1 <= len(words) <= 5:
        return f"{len(words)} words"
    if bad := [w for w in words if not _WORD.fullmatch(w)]:
        return f"fragment {bad[0]!r}"
    low = [w.lower() for w in words]
    if low[0] in _AUX or low[0] in _FUNCTION:
        return f"starts with {words[0]!r}"
    if low[-1] in _FUNCTION or low[-1] in _AUX:
        return f"ends with {words[-1]!r}"
    if any(w in _EXTENSION for w in low):
        return "a file-extension stub"
    if len(words) == 1 and (low[0] in _GENERIC or len(low[0]) < 4):
        return f"a lone generic word {words[0]!r}"
    if not source:
        return ""
    m = re.search(r"(?<![\w-])" + r"\s+".join(map(re.escape, words)) + r"(?![\w-])", source, re.I)
    if not m:
        return "not written contiguously in the rule"
    opens = re.fullmatch(r"(?:.*[:.!?])?[\s\W]*", source[:m.start()], re.S) is not None
    if opens and (len(words) == 1 or low[0] in VERBS):
        return f"starts with the rule's imperative verb {words[0]!r}"  # 'Breach notification: Notify supervisory …'
    return ""


def as_written(phrase: str, source: str) -> str:
    """The phrase with the letter case it has in `source` (extracted subjects are lower-cased: 'sla' → 'SLA')."""
    m = re.search(r"(?<![\w-])" + r"\s+".join(map(re.escape, phrase.split())) + r"(?![\w-])", source, re.I)
    if not m:
        return phrase
    out = " ".join(m.group(0).split())
    first = out.split()[0]
    if first[1:].islower() and re.fullmatch(r"(?:.*[:.!?])?[\s\W]*", source[:m.start()], re.S):
        out = out[0].lower() + out[1:]  # capitalised only because it opens the sentence ('Written marking …')
    return out


def salad(text: str) -> list[str]:
    """Word-salad marks in composed prose (code spans and paths ignored): a dangling hyphen ('greatest iso-'), a bare
    file-extension stub ('skill md'), and a list after 'concern' whose items are not noun phrases."""
    prose = re.sub(r"`[^`]*`", "Snippet", text)  # placeholders that are noun phrases themselves
    prose = re.sub(r"“[^”]*”|\"[^\"]*\"", "Quotation", prose)
    prose = re.sub(r"(?<!\w)/[\w./@+-]+", "Path", prose)
    out = [f"dangling hyphen near {prose[max(0, m.start() - 15):m.end()].strip()!r}"
           for m in _DANGLING_HYPHEN.finditer(prose)]
    out += [f"file-extension stub {prose[max(0, m.start() - 15):m.end()].strip()!r}" for m in _EXT_STUB.finditer(prose)]
    for m in re.finditer(r"\bconcerns? ([^.;:!?]+)", prose):
        for item in re.split(r",\s*|\s+and\s+", m.group(1)):
            item = re.sub(r"^(?:the use of|the rule|the|a|an)\s+", "", item.strip(), flags=re.I)
            if item and (why := noun_phrase_problem(item)):
                out.append(f"not a noun phrase after 'concern': {item!r} ({why})")
    return out
