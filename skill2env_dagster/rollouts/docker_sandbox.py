"""The rollout sandbox on the gates' trial API (`gates.sandbox.Sandbox`): a fresh hardened container (no network,
no capabilities but CAP_SETUID/CAP_SETGID, pids/memory/CPU limits, tmpfs /tmp and /logs, removed on exit whatever
happened; the task's stand-in services beside it, out of the agent's reach, see `gates.services`) whose `verify()`
kills what the agent left running, reads the agent's changes from the engine, refuses a tampered toolchain
(`tamper_detected`), runs the verifier with a fixed environment and parses the reward.

Each command is one `Sandbox.run`: a small wrapper runs it under `timeout` in a fresh bash in the task's working
directory, sends its output through a fifo into `head -c <cap>` (a flood is cut at the cap and its writer dies of
SIGPIPE; the capture lives on the /logs tmpfs, out of the agent's way) and prints the exit code and what was kept,
so one round trip returns a bounded answer; head and tail are cut here. We wait for the command alone, not for
processes it leaves behind (a background server keeps the fifo open: its reader gets ~0.5 s, then we read). The
wrapper spawns as few processes as it can: it is most of the harness's own cost per step. The command reaches it
in an environment variable the wrapper unsets before running it.
"""

from __future__ import annotations

import base64
import io
import logging
import posixpath
import re
import shlex
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import docker
import docker.errors
import requests

from skill2env_dagster.gates import container as ctr
from skill2env_dagster.gates.changes import Change, ChangeKind, is_under, leaves, without_runtime
from skill2env_dagster.gates.images import build_image
from skill2env_dagster.gates.sandbox import AGENT_ENV, Sandbox, TrialStatus, VerifyOutcome
from skill2env_dagster.gates.services import load_services
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.models.task_dir import TaskDir
from skill2env_dagster.models.task_toml import TaskToml
from skill2env_dagster.reasons import InfraError, ReasonCode
from skill2env_dagster.rollouts.sandbox import CommandResult, SandboxGoneError, Verification
from skill2env_dagster.rollouts.shell import ShellServer
from skill2env_dagster.rollouts.workspace import FileState, render

log = logging.getLogger(__name__)

TIMED_OUT = 124  # what coreutils `timeout` exits with
GRACE = 15.0  # the trial's own watchdog, past the command's timeout, for a wrapper that never returns
WRITE_CHUNK = 48 * 1024  # bytes of file content per exec (base64 in one variable stays below the 128 KiB limit)
MAX_WRITE = 1 << 20
DIGEST_FILES = 40
_KINDS = {ChangeKind.MODIFIED: "changed", ChangeKind.ADDED: "added", ChangeKind.DELETED: "deleted"}
_WRAP = """exec 2>/dev/null
cmd=$S2E_CMD; t=$S2E_TIMEOUT; cap=$S2E_CAP; unset S2E_CMD S2E_TIMEOUT S2E_CAP
f="/logs/agent/.s2e.$$"
mkfifo "$f.p" || { mkdir -p /logs/agent; rm -f "$f.p"; mkfifo "$f.p" || exit 97; }
stdbuf -o0 head -c "$cap" < "$f.p" > "$f" &
h=$!
timeout -k 2 "$t" bash -c "$cmd" > "$f.p" 2>&1 < /dev/null
c=$?
i=0; while kill -0 "$h" && [ "$i" -lt 100 ]; do sleep 0.005; i=$((i+1)); done
kill "$h"
echo "S2E $c $(wc -c < "$f")"
cat "$f"
rm -f "$f" "$f.p"
"""
# A new file gets 0644 whatever the agent's umask; an existing one keeps its mode; S2E_MODE (last chunk) sets it.
_WRITE = """p=$S2E_PATH; d=$S2E_DATA; op=$S2E_OP; m=$S2E_MODE; unset S2E_PATH S2E_DATA S2E_OP S2E_MODE
mkdir -p "$(dirname "$p")" || exit 1
[ "$op" = new ] && [ ! -e "$p" ] && { : > "$p" && chmod 644 "$p" || exit 1; }
if [ "$op" = new ]; then printf %s "$d" | base64 -d > "$p"; else printf %s "$d" | base64 -d >> "$p"; fi
r=$?
[ "$r" = 0 ] && [ -n "$m" ] && { chmod "$m" "$p"; r=$?; }
echo "mode=$(stat -c %a "$p" 2>/dev/null)"
echo "rc=$r"
"""
# Each regular file as "<index> <size>\n" then its first {n} bytes (the caller knows how many follow).
_FILES = """i=0
for p in "$@"; do
  i=$((i+1))
  if [ -f "$p" ] && [ ! -L "$p" ]; then
    n=$(/usr/bin/wc -c < "$p"); echo "$i $n"; /usr/bin/head -c {n} "$p"
  fi
done
"""

# Shell builtins only (an agent may have shadowed find/ls on PATH): the verifier's output folder's entries.
_FORGED = """d=/logs/verifier
[ -L "$d" ] && echo "$d (a symlink)"
for f in "$d"/* "$d"/.[!.]*; do if [ -e "$f" ] || [ -L "$f" ]; then echo "$f"; fi; done
"""


@dataclass(frozen=True)
class OutputLimits:
    head: int = 3000
    tail: int = 3000
    cap: int = 1 << 20


def _verification(outcome: VerifyOutcome) -> Verification:
    """The trial's verdict in the harness's terms (see `rollouts.sandbox.Verification`)."""
    s = outcome.status
    if s is TrialStatus.OK:
        return Verification(dict(outcome.metrics), seconds=outcome.seconds)
    if s is TrialStatus.CONTAINER_DIED:
        raise SandboxGoneError(outcome.detail or "container stopped before the verifier")
    if s is TrialStatus.REWARD_UNUSABLE:
        return Verification(reason=outcome.reward.reason or ReasonCode.REWARD_INVALID,
                            evidence=outcome.reward.problem, seconds=outcome.seconds)
    if s is TrialStatus.VERIFIER_TIMEOUT:
        return Verification(reason=ReasonCode.VERIFIER_TIMEOUT, evidence=outcome.detail, seconds=outcome.seconds)
    # The agent's own doing: a tampered toolchain, or processes that could not be stopped (e.g. a fork bomb).
    reason = ReasonCode.TAMPER_DETECTED if s is TrialStatus.TAMPER_DETECTED else ReasonCode.REAP_FAILED
    return Verification(reason=reason, evidence=outcome.describe()[:1500], zero=True, seconds=outcome.seconds)


class DockerSandbox:
    """One fresh hardened trial for one episode (see module docstring)."""

    def __init__(self, client: docker.DockerClient, task_dir: Path, settings: GateSettings,
                 limits: OutputLimits, persistent_shell: bool = True) -> None:
        self.client, self.task, self.settings, self.limits = client, TaskDir(task_dir), settings, limits
        self.persistent_shell = persistent_shell
        self._shell: ShellServer | None = None
        self.config = TaskToml.from_toml(self.task.config.read_text(encoding="utf-8"))
        self.workdir = self.config.environment.workdir or "/"
        self._sb: Sandbox | None = None
        self.image = ""

    # -- lifecycle ------------------------------------------------------------------------------
    def __enter__(self) -> DockerSandbox:
        image, _ = build_image(self.client, self.task.environment_dir, self.settings.build_network,
                               self.config.environment.build_timeout_sec)
        self.image = image
        try:
            self._sb = Sandbox(self.client, image, self.settings, self.config, self.task.tests_dir,
                               services=load_services(self.task.environment_dir, image)).__enter__()
        except (docker.errors.DockerException, requests.RequestException) as e:
            raise InfraError(ReasonCode.DOCKER_UNAVAILABLE, f"could not start a container from {image}: {e}") from e
        if self.persistent_shell:
            trial = self._sb.trial
            self._shell = ShellServer(self.client.api, trial.cid, _WRAP, {"KEEPER": trial.keeper, **AGENT_ENV})
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        if self._shell is not None:
            self._shell.close()
        if self._sb is not None:
            self._sb.__exit__(et, e, tb)

    @property
    def sandbox(self) -> Sandbox:
        if self._sb is None:
            raise SandboxGoneError("sandbox not open")
        return self._sb

    @property
    def container_id(self) -> str:
        return self.sandbox.trial.cid

    def _run(self, body: str, timeout: float, env: dict[str, str]) -> bytes:
        """An agent-phase command; SandboxGoneError when the container is no longer there to answer."""
        try:
            res = self.sandbox.run(body, timeout, env)
        except (docker.errors.APIError, requests.RequestException) as e:
            if not self.sandbox.trial.alive():
                raise SandboxGoneError(f"container stopped: {type(e).__name__}") from e
            raise InfraError(ReasonCode.DOCKER_UNAVAILABLE, f"docker exec failed: {e}") from e
        if res.died:
            raise SandboxGoneError("container stopped during the command")
        return res.output

    # -- the protocol ---------------------------------------------------------------------------
    def exec(self, command: str, timeout: float) -> CommandResult:
        """Through the episode's shell server (`rollouts.shell`), else as an exec of its own."""
        lim = self.limits
        start = time.perf_counter()
        out, state = self._shell_run(command, timeout)
        if state == "unavailable":
            out = self._run(_WRAP, timeout + GRACE, {"S2E_CMD": command, "S2E_TIMEOUT": f"{max(1, round(timeout))}",
                                                     "S2E_CAP": str(lim.cap)})
        seconds = time.perf_counter() - start
        header, _, body = (out or b"").partition(b"\n")
        fields = header.split()
        if len(fields) != 3 or not fields[1].lstrip(b"-").isdigit():  # killed, or reaped at the deadline
            return CommandResult(None, head=(out or b"")[:lim.head], timed_out=seconds >= timeout, seconds=seconds)
        code, size = int(fields[1]), len(body)
        head, tail = (body, b"") if size <= lim.head + lim.tail else (body[:lim.head], body[-lim.tail:])
        return CommandResult(code, head, tail, size, capped=size >= lim.cap,
                             timed_out=code == TIMED_OUT and seconds >= timeout * 0.95, seconds=seconds)

    def _script(self, body: str, timeout: float, env: dict[str, str]) -> bytes:
        """A harness script's output: through the shell server when there is one, else as an exec."""
        assigns = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        out, state = self._shell_run(f"{assigns} /bin/sh -c {shlex.quote(body)}", timeout)
        if state == "unavailable":
            return self._run(body, timeout, env)
        head, _, rest = (out or b"").partition(b"\n")
        return rest if head.startswith(b"S2E ") else b""

    def _shell_run(self, command: str, timeout: float) -> tuple[bytes | None, str]:
        if self._shell is None:
            return None, "unavailable"
        self.sandbox.touch()
        out, state = self._shell.run(command, timeout, self.limits.cap, timeout + GRACE)
        if state == "timeout":  # as the exec's watchdog would: stop what runs, the files stay
            self.sandbox.trial.reap_or_kill()
        if state in ("lost", "timeout") and not self.sandbox.trial.alive():
            raise SandboxGoneError("container stopped during the command")
        return out, state

    def write_file(self, path: str, content: bytes, mode: str | None = None) -> CommandResult:
        start = time.perf_counter()
        target = posixpath.normpath(posixpath.join(self.workdir, path))
        if len(content) > MAX_WRITE or "\0" in path:
            return CommandResult(2, head=f"refused: {len(content)} bytes (max {MAX_WRITE})".encode())
        chunks = [content[i:i + WRITE_CHUNK] for i in range(0, len(content), WRITE_CHUNK)] or [b""]
        out = b""
        for i, chunk in enumerate(chunks):
            out = self._script(_WRITE, 60, {"S2E_PATH": target, "S2E_DATA": base64.b64encode(chunk).decode(),
                                            "S2E_OP": "new" if i == 0 else "append",
                                            "S2E_MODE": mode if mode and i == len(chunks) - 1 else ""})
            if not out.rstrip().endswith(b"rc=0"):
                break
        ok = out.rstrip().endswith(b"rc=0")
        got = re.search(rb"mode=([0-7]+)", out)
        shown = f" (mode {int(got.group(1), 8):04o})" if got else ""
        text = f"wrote {len(content)} bytes to {target}{shown}" if ok else f"could not write {target}: {out[-300:]!r}"
        return CommandResult(0 if ok else 1, head=text.encode(), seconds=time.perf_counter() - start)

    def upload_dir(self, src: Path, dest: str) -> None:
        self.sandbox.put_dir(src, dest.strip("/"))

    def workspace_digest(self, limit: int) -> str:
        """The judge's view of the final workspace (`rollouts.workspace`): from the engine's view of the changes
        (the trial settles: the agent's processes are stopped first), every file written or changed read whole up
        to `limit`, a changed file's original read from the image."""
        settled = self.sandbox.settle()
        rows = sorted(leaves(without_runtime(list(settled.changes))),
                      key=lambda c: (not is_under(c.path, self.workdir), c.path))
        listing = [f"{_KINDS[c.kind]}: {c.path}" for c in rows[:200]]
        kept = [c for c in rows if c.kind is not ChangeKind.DELETED][:DIGEST_FILES]
        files = self._read(kept, limit) if kept and self.sandbox.trial.alive() else []
        files.sort(key=lambda f: (not is_under(f.path, self.workdir), f.size))
        return render(listing, files, limit)

    def _read(self, changes: list[Change], cap: int) -> list[FileState]:
        res = self.sandbox.trial.sh(_FILES.format(n=cap), 60, args=tuple(c.path for c in changes))
        out, data, pos = [], res.output, 0
        while pos < len(data):
            end = data.find(b"\n", pos)
            head = data[pos:end].split() if end >= 0 else []
            if len(head) != 2 or not head[0].isdigit() or not head[1].isdigit():
                break
            change, size = changes[int(head[0]) - 1], int(head[1])
            body = data[end + 1:end + 1 + min(size, cap)]
            pos = end + 1 + len(body)
            kind = _KINDS[change.kind]
            out.append(FileState(change.path, kind, size, body))
        changed = [f.path for f in out if f.kind == "changed"]
        originals = self._originals(changed, cap) if changed else {}
        return [FileState(f.path, f.kind, f.size, f.final, originals.get(f.path)) for f in out]

    def _originals(self, paths: list[str], cap: int) -> dict[str, bytes]:
        """The task's own version of changed files, from its image (a created, never started container)."""
        box = self.client.containers.create(self.image, labels=ctr.labels_for(self.settings),
                                            network_disabled=True)
        found: dict[str, bytes] = {}
        try:
            for path in paths:
                try:
                    stream, _ = box.get_archive(path)
                except docker.errors.NotFound:
                    continue
                with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
                    member = next((m for m in tar.getmembers() if m.isfile()), None)
                    fh = tar.extractfile(member) if member else None
                    if fh is not None:
                        found[path] = fh.read(cap)
        finally:
            box.remove(force=True)
        return found

    def kill(self) -> None:
        """Every agent process is stopped (the trial's reaper); the container itself if even that fails."""
        self.sandbox.trial.reap_or_kill()

    def revive(self) -> None:
        """After kill() the files are still there: nothing to do, unless the container had to be killed."""
        if not self.sandbox.trial.alive():
            raise SandboxGoneError("the container had to be killed at the deadline")

    def verify(self) -> Verification:
        try:
            forged = self.forged_reward()
            if forged:
                return Verification(reason=ReasonCode.TAMPER_DETECTED, zero=True,
                                    evidence=f"the agent wrote the verifier's output folder: {forged}"[:1500])
            return _verification(self.sandbox.verify())
        except (docker.errors.APIError, requests.RequestException) as e:
            raise InfraError(ReasonCode.DOCKER_UNAVAILABLE, f"verifier exec failed: {e}") from e

    def forged_reward(self) -> str:
        """What the agent phase left in /logs/verifier (a forged reward.txt/json, or a symlink in place of the
        folder), read after its processes are stopped; empty when nothing. The gates' verify empties the folder
        anyway, so a forgery never scores; this makes it evidence (tamper_detected), not a silent 0."""
        if self.sandbox.settle().status is not TrialStatus.OK or not self.sandbox.trial.alive():
            return ""
        listing = self.sandbox.trial.read_whole(_FORGED, 30)  # it only reads: asked again when it came back cut
        if listing is None:
            if not self.sandbox.trial.alive():
                return ""
            raise InfraError(ReasonCode.DOCKER_UNAVAILABLE, "the engine returned no whole answer for the listing "
                             f"of /logs/verifier ({ctr.ANSWER_READS} tries)")
        return listing.decode("utf-8", "replace").strip().replace("\n", ", ")


class DockerSandboxFactory:
    """Opens `DockerSandbox`es on one engine client (its read timeout outlasts the longest silent exec)."""

    def __init__(self, settings: GateSettings, limits: OutputLimits, client: docker.DockerClient | None = None,
                 read_timeout: float = 3600.0) -> None:
        self.settings, self.limits = settings, limits
        if client is None:
            ctr.client_for(settings)  # InfraError(docker_unavailable) when no engine answers
            client = docker.DockerClient(base_url=settings.docker_url, timeout=int(read_timeout)) \
                if settings.docker_url else docker.from_env(timeout=int(read_timeout))
        self.client = client

    def __call__(self, task_dir: Path) -> DockerSandbox:
        return DockerSandbox(self.client, task_dir, self.settings, self.limits)
