"""A bash script as the top-level commands an agent would run one by one (the Oracle reference's steps).

`split_commands` scans the text (it never runs it): quotes, `$'…'`, backslash escapes and continuations, comments,
here-documents (`<<`, `<<-`, quoted delimiters), subshells and `$(…)`, `{ … }` groups and the compound keywords
(if/fi, case/esac, for|while|until|select … done). A command ends at a newline outside all of those, unless the
line ends in `|`, `&&` or `||`. Comment and blank lines stay with the command that follows. Anything it does not
understand (an unbalanced keyword, a quote or here-document left open) gives None: the caller then runs the script
whole.

`agent_steps` turns the commands into what each fresh bash call needs: state-only commands (`set -e`, `cd`,
`export`, plain assignments, function definitions) are not steps of their own but are repeated before each later
step, because every call of the agent's `bash` tool starts a new shell.
"""

from __future__ import annotations

import re

_OPEN = {"if": "fi", "case": "esac", "for": "done", "while": "done", "until": "done", "select": "done", "{": "}"}
_CLOSE = {"fi", "esac", "done", "}"}
# After these words the next word is again in command position.
_LEAD = {"then", "do", "else", "elif", "if", "while", "until", "!", "time", "{"}
_HEREDOC = re.compile(r"<<(-?)[ \t]*(?:'([^'\n]*)'|\"([^\"\n]*)\"|\\?([A-Za-z0-9_.-]+))")
_STATE = re.compile(r"^(?:set|shopt|umask|export|cd|source|\.|alias|declare|typeset|readonly)\b"
                    r"|^[A-Za-z_][A-Za-z0-9_]*=\S*$|^(?:function\s+)?[A-Za-z_][A-Za-z0-9_-]*\s*\(\)")


class _UnreadableError(Exception):
    """The scanner met something it does not model."""


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text, self.i = text, 0
        self.stack: list[str] = []
        self.word = ""
        self.command_position = True
        self.pending_heredocs: list[tuple[str, bool]] = []
        self.trailing_operator = False

    # -- words and keywords ------------------------------------------------------------------------------
    def end_word(self) -> None:
        w, self.word = self.word, ""
        if not w:
            return
        if self.command_position and w in _OPEN:
            self.stack.append(_OPEN[w])
        elif self.command_position and w in _CLOSE:
            if not self.stack or self.stack[-1] != w:
                raise _UnreadableError(f"unexpected {w!r}")
            self.stack.pop()
        self.command_position = w in _LEAD
        self.trailing_operator = False

    def operator(self, op: str) -> None:
        self.end_word()
        self.command_position = op in (";", "&", "&&", "||", "|", ";;", "(", "|&")
        self.trailing_operator = op in ("|", "&&", "||", "|&")

    # -- quoted text -------------------------------------------------------------------------------------
    def skip_single(self) -> None:
        end = self.text.find("'", self.i)
        if end < 0:
            raise _UnreadableError("open single quote")
        self.word += self.text[self.i - 1:end + 1]
        self.i = end + 1

    def skip_ansi_c(self) -> None:
        while self.i < len(self.text):
            c = self.text[self.i]
            self.i += 2 if c == "\\" else 1
            if c == "'":
                return
        raise _UnreadableError("open $' quote")

    def skip_double(self, close: str) -> None:
        """Inside "…" or `…`: escapes, and $( … ) nested (its own quotes)."""
        while self.i < len(self.text):
            c = self.text[self.i]
            if c == "\\":
                self.i += 2
                continue
            self.i += 1
            if c == close:
                self.word += "x"
                return
            if c == "$" and self.text.startswith("(", self.i):
                self.i += 1
                self.skip_substitution()
        raise _UnreadableError(f"open {close} quote")

    def skip_substitution(self) -> None:
        """After `$(`: up to its matching `)`, quotes and nested substitutions included."""
        depth = 1
        while self.i < len(self.text):
            c = self.text[self.i]
            self.i += 1
            if c == "\\":
                self.i += 1
            elif c == "'":
                end = self.text.find("'", self.i)
                if end < 0:
                    raise _UnreadableError("open quote in $( )")
                self.i = end + 1
            elif c in "\"`":
                self.skip_double(c)
            elif c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    self.word += "x"
                    return
        raise _UnreadableError("open $(")

    # -- here-documents ----------------------------------------------------------------------------------
    def read_heredoc_bodies(self) -> None:
        for delim, strip in self.pending_heredocs:
            while True:
                if self.i >= len(self.text):
                    raise _UnreadableError(f"here-document {delim!r} not closed")
                end = self.text.find("\n", self.i)
                end = len(self.text) if end < 0 else end
                line = self.text[self.i:end]
                self.i = end + 1
                if (line.lstrip("\t") if strip else line) == delim:
                    break
        self.pending_heredocs = []

    # -- the scan ----------------------------------------------------------------------------------------
    def commands(self) -> list[str]:
        out: list[str] = []
        start = 0
        t = self.text
        while self.i < len(t):
            c = t[self.i]
            if c == "\\":
                self.word += t[self.i:self.i + 2]
                self.i += 2
            elif c == "'":
                self.i += 1
                self.skip_single()
            elif c == "$" and t.startswith("'", self.i + 1):
                self.i += 2
                self.skip_ansi_c()
                self.word += "x"
            elif c in "\"`":
                self.i += 1
                self.skip_double(c)
            elif c == "$" and t.startswith("(", self.i + 1):
                self.i += 2
                self.skip_substitution()
            elif c == "#" and not self.word:
                end = t.find("\n", self.i)
                self.i = len(t) if end < 0 else end
            elif t.startswith("<<<", self.i):  # a here-string: its word follows on the same line
                self.end_word()
                self.i += 3
            elif c == "<" and t.startswith("<<", self.i):
                m = _HEREDOC.match(t, self.i)
                if m is None:
                    raise _UnreadableError("here-document without a delimiter")
                self.end_word()
                delim = next(g for g in m.groups()[1:] if g is not None)
                self.pending_heredocs.append((delim, m.group(1) == "-"))
                self.i = m.end()
            elif c == "\n":
                self.end_word()
                self.i += 1
                self.read_heredoc_bodies()
                if not self.stack and not self.trailing_operator:
                    out.append(t[start:self.i])
                    start = self.i
                self.command_position = True
            elif c in " \t":
                self.end_word()
                self.i += 1
            elif c in ";&|":
                op = t[self.i:self.i + 2] if t[self.i:self.i + 2] in (";;", "&&", "||", "|&") else c
                self.operator(op)
                self.i += len(op)
            elif c == "(":
                self.operator("(")
                self.stack.append(")")
                self.i += 1
            elif c == ")":
                self.end_word()
                if self.stack and self.stack[-1] == ")":
                    self.stack.pop()
                elif not (self.stack and self.stack[-1] == "esac"):  # a case pattern's `x)`
                    raise _UnreadableError("unbalanced )")
                self.command_position = True
                self.i += 1
            elif c in "<>":
                self.end_word()
                self.i += 1
            else:
                self.word += c
                self.i += 1
        self.end_word()
        if self.stack or self.pending_heredocs or self.trailing_operator:
            raise _UnreadableError(f"script ends inside {self.stack or self.pending_heredocs or 'an operator'}")
        if start < len(t):
            out.append(t[start:])
        return out


def split_commands(script: str) -> list[str] | None:
    """The script's top-level commands (see module docstring), comments kept with the command that follows."""
    body = script[script.index("\n") + 1:] if script.startswith("#!") and "\n" in script else script
    try:
        chunks = _Scanner(body if body.endswith("\n") else body + "\n").commands()
    except (_UnreadableError, IndexError):
        return None
    out: list[str] = []
    lead = ""
    for chunk in chunks:
        if all(not ln.strip() or ln.lstrip().startswith("#") for ln in chunk.splitlines()):
            lead += chunk
            continue
        out.append((lead + chunk).strip("\n"))
        lead = ""
    return out


def _code(command: str) -> str:
    """The command without its leading comment lines."""
    return "\n".join(ln for ln in command.splitlines() if ln.strip() and not ln.lstrip().startswith("#"))


def is_state(command: str) -> bool:
    """A command whose only effect is on the shell it runs in (to be repeated before each later step)."""
    code = _code(command)
    if re.match(r"^(?:function\s+)?[A-Za-z_][A-Za-z0-9_-]*\s*\(\)", code):
        return True  # a function definition, however long
    return "\n" not in code and not re.search(r"&&|\|\||;|\||\$\(|`", code) and bool(_STATE.match(code))


_ASSIGNED = re.compile(r"(?:^|[\s;&|(])([A-Za-z_][A-Za-z0-9_]*)(?:\[[^\]]*\])?\+?=|\bread\s+(?:-\w+\s+)*([A-Za-z_]\w*)")
_USED = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
# A work command that also changes the shell for what follows (cd in a chain, set, export, trap …).
_CHANGES_SHELL = re.compile(r"(?:^|[;&|{]\s*|\n\s*|\b(?:then|do|else)\s+)(?:cd|pushd|popd|export|set|shopt|source|trap|"
                            r"umask|alias|declare|typeset|readonly)\b")


def _assigned(command: str) -> set[str]:
    return {a or b for a, b in _ASSIGNED.findall(_code(command))}


def _ranges(commands: list[str], state: list[bool]) -> list[tuple[int, int]]:
    """Contiguous runs of the commands that must share one shell: each work command alone, unless a later one
    reads a variable it set (then everything between runs together) or it changes the shell (then it runs with
    everything after it)."""
    work = [k for k, st in enumerate(state) if not st]
    ranges = [(k, k) for k in work]
    for k in work:
        if _CHANGES_SHELL.search(_code(commands[k])):
            return _merge(ranges, k, len(commands) - 1)
    for j in work:
        used = set(_USED.findall(commands[j]))
        first = next((i for i in work if i < j and _assigned(commands[i]) & used), None)
        if first is not None:
            ranges = _merge(ranges, first, j)
    return ranges


def _merge(ranges: list[tuple[int, int]], lo: int, hi: int) -> list[tuple[int, int]]:
    inside = [r for r in ranges if r[1] >= lo and r[0] <= hi]
    if not inside:
        return ranges
    merged = (min(lo, inside[0][0]), max(hi, inside[-1][1]))
    return sorted([r for r in ranges if r not in inside] + [merged])


def agent_steps(commands: list[str], prelude: list[str] | None = None) -> list[str]:
    """The bash calls that do the script's work in fresh shells: each preceded by the state set before it (and
    by `prelude`, e.g. the solution's environment); see `_ranges` for the commands that must run together."""
    state = [is_state(c) for c in commands]
    steps = []
    for lo, hi in _ranges(commands, state):
        before = [*(prelude or []), *(_code(commands[k]) for k in range(lo) if state[k])]
        steps.append("\n".join([*before, *commands[lo:hi + 1]]))
    return steps
