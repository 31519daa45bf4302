"""The rollout sandbox on the gates' hardened container (`gates.container.Trial`): no network, no capabilities,
pids/memory/CPU limits, tmpfs /tmp and /logs, removed on exit whatever happened.

Each command is one `docker exec`: it runs under `timeout` in a fresh bash in the task's working directory, its
output goes through a fifo into `head -c <cap>` (a flood is cut at the cap and its writer dies of SIGPIPE; the
capture lives on the /logs tmpfs, out of the agent's way), and the exec prints the exit code and what was kept,
so one round trip returns a bounded answer; head and tail are cut here. We wait for the command alone, not for
processes it leaves behind (a background server keeps the fifo open: its reader gets ~0.5 s, then we read). The
script spawns as few processes as it can: it is most of the harness's own cost per step.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import posixpath
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import docker
import docker.errors
import requests
from docker.models.containers import Container

from skill2env_dagster.gates import container as ctr
from skill2env_dagster.gates.images import build_image
from skill2env_dagster.gates.reward import parse_reward
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.models.task_dir import CONTAINER_TESTS, TaskDir
from skill2env_dagster.models.task_toml import TaskToml
from skill2env_dagster.reasons import InfraError, ReasonCode
from skill2env_dagster.rollouts.sandbox import CommandResult, SandboxGoneError, Verification

log = logging.getLogger(__name__)

TIMED_OUT = 124  # what coreutils `timeout` exits with
WRITE_CHUNK = 48 * 1024  # bytes of file content per exec (base64 in argv stays far below the 128 KiB arg limit)
MAX_WRITE = 1 << 20
DIGEST_FILE_HEAD = 300
# Paths whose changes say nothing about the agent's work.
_NOISE = ("/proc", "/sys", "/dev", "/run", "/var/cache", "/var/lib/apt", "/var/log", "/root/.cache", "/tmp",
          "/logs", "/usr/sbin/docker-init")
_WRAP = """exec 2>/dev/null
f="/logs/agent/.s2e.$$"
mkfifo "$f.p" || { mkdir -p /logs/agent; rm -f "$f.p"; mkfifo "$f.p" || exit 97; }
stdbuf -o0 head -c "$2" < "$f.p" > "$f" &
h=$!
timeout -k 2 "$1" bash -c "$0" > "$f.p" 2>&1 < /dev/null
c=$?
i=0; while kill -0 "$h" && [ "$i" -lt 100 ]; do sleep 0.005; i=$((i+1)); done
kill "$h"
echo "$c"
cat "$f"
rm -f "$f" "$f.p"
"""
_WRITE = 'mkdir -p "$(dirname "$0")" && printf %s "$1" | base64 -d {op} "$0"'
_DIGEST = """for p in "$@"; do
  [ -f "$p" ] || continue
  echo "--- $p ($(wc -c < "$p") bytes)"
  if [ ! -s "$p" ] || grep -Iq . "$p"; then head -c {n} "$p"; echo; else echo "(binary)"; fi
done
"""


@dataclass(frozen=True)
class OutputLimits:
    head: int = 3000
    tail: int = 3000
    cap: int = 1 << 20


class DockerSandbox:
    """One fresh hardened container for one episode (see module docstring)."""

    def __init__(self, client: docker.DockerClient, task_dir: Path, settings: GateSettings,
                 limits: OutputLimits) -> None:
        self.client, self.task, self.settings, self.limits = client, TaskDir(task_dir), settings, limits
        self.config = TaskToml.from_toml(self.task.config.read_text(encoding="utf-8"))
        self.workdir = self.config.environment.workdir or "/"
        self._trial: ctr.Trial | None = None

    # -- lifecycle ------------------------------------------------------------------------------
    def __enter__(self) -> DockerSandbox:
        image, _ = build_image(self.client, self.task.environment_dir, self.settings.build_network,
                               self.config.environment.build_timeout_sec)
        try:
            self._trial = ctr.Trial(self.client, image, self.settings, self.config.environment.workdir).__enter__()
        except (docker.errors.DockerException, requests.RequestException) as e:
            raise InfraError(ReasonCode.DOCKER_UNAVAILABLE, f"could not start a container from {image}: {e}") from e
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        if self._trial is not None:
            self._trial.__exit__(et, e, tb)

    @property
    def container_id(self) -> str:
        return self._container().id or ""

    def _container(self) -> Container:
        if self._trial is None or self._trial.container is None:
            raise SandboxGoneError("sandbox not open")
        return self._trial.container

    def _running(self) -> bool:
        try:
            return bool(self.client.api.inspect_container(self.container_id)["State"]["Running"])
        except (docker.errors.APIError, requests.RequestException):
            return False

    def _exec(self, argv: list[str]) -> bytes:
        """One exec, output as bytes; SandboxGoneError when the container is no longer there to answer."""
        try:
            exec_id = self.client.api.exec_create(self.container_id, argv, workdir=self.workdir)["Id"]
            out = self.client.api.exec_start(exec_id)
        except (docker.errors.APIError, requests.RequestException) as e:
            if not self._running():
                raise SandboxGoneError(f"container stopped: {type(e).__name__}") from e
            raise InfraError(ReasonCode.DOCKER_UNAVAILABLE, f"docker exec failed: {e}") from e
        return out if isinstance(out, bytes) else b""

    # -- the protocol ---------------------------------------------------------------------------
    def exec(self, command: str, timeout: float) -> CommandResult:
        lim = self.limits
        start = time.perf_counter()
        out = self._exec(["sh", "-c", _WRAP, command, f"{max(1, round(timeout))}", str(lim.cap)])
        seconds = time.perf_counter() - start
        header, _, body = out.partition(b"\n")
        if not header.strip().isdigit():
            if not self._running():
                raise SandboxGoneError("container stopped during the command")
            return CommandResult(None, head=out[:lim.head], seconds=seconds)
        code, size = int(header), len(body)
        head, tail = (body, b"") if size <= lim.head + lim.tail else (body[:lim.head], body[-lim.tail:])
        return CommandResult(code, head, tail, size, capped=size >= lim.cap,
                             timed_out=code == TIMED_OUT and seconds >= timeout * 0.95, seconds=seconds)

    def write_file(self, path: str, content: bytes) -> CommandResult:
        start = time.perf_counter()
        target = posixpath.normpath(posixpath.join(self.workdir, path))
        if len(content) > MAX_WRITE or "\0" in path:
            return CommandResult(2, head=f"refused: {len(content)} bytes (max {MAX_WRITE})".encode())
        chunks = [content[i:i + WRITE_CHUNK] for i in range(0, len(content), WRITE_CHUNK)] or [b""]
        out = b""
        for i, chunk in enumerate(chunks):
            script = _WRITE.format(op=">" if i == 0 else ">>") + '; echo "rc=$?"'
            out = self._exec(["sh", "-c", script, target, base64.b64encode(chunk).decode()])
            if not out.rstrip().endswith(b"rc=0"):
                break
        ok = out.rstrip().endswith(b"rc=0")
        text = f"wrote {len(content)} bytes to {target}" if ok else f"could not write {target}: {out[-300:]!r}"
        return CommandResult(0 if ok else 1, head=text.encode(), seconds=time.perf_counter() - start)

    def upload_dir(self, src: Path, dest: str) -> None:
        assert self._trial is not None
        self._trial.put_dir(src, dest.strip("/"))

    def workspace_digest(self, limit: int) -> str:
        try:
            changes = [(str(c["Path"]), int(c["Kind"])) for c in self._container().diff() or []]
        except (docker.errors.APIError, requests.RequestException):
            return "(workspace diff unavailable)"
        kinds = {0: "changed", 1: "added", 2: "deleted"}
        rows = [(p, kinds.get(k, "?")) for p, k in changes
                if not any(p == n or p.startswith(n + "/") for n in _NOISE)]
        paths = {p for p, _ in changes}
        # A changed folder is listed because something inside it changed: keep only the leaves.
        rows = [(p, k) for p, k in rows if not (k == "changed" and any(q.startswith(p.rstrip("/") + "/")
                                                                       for q in paths))]
        rows.sort(key=lambda r: (not r[0].startswith(self.workdir.rstrip("/") + "/"), r[0]))
        listing = "\n".join(f"{kind}: {path}" for path, kind in rows[:200]) or "(no changes outside /tmp)"
        files = [p for p, k in rows if k != "deleted"][:40]
        heads = ""
        if files:
            try:
                heads = self._exec(["sh", "-c", _DIGEST.format(n=DIGEST_FILE_HEAD), "digest", *files]).decode(
                    "utf-8", "replace")
            except SandboxGoneError:
                heads = "(file heads unavailable)"
        text = f"{len(rows)} path(s) changed\n{listing}\n\nFile heads:\n{heads}"
        return text if len(text) <= limit else text[: limit - 40] + "\n[... digest truncated ...]"

    def kill(self) -> None:
        with contextlib.suppress(docker.errors.APIError, requests.RequestException, SandboxGoneError):
            self._container().kill()

    def revive(self) -> None:
        container = self._container()
        try:
            container.wait(timeout=30)  # the kill is asynchronous: starting a dying container would be a no-op
            container.start()
        except (docker.errors.APIError, requests.RequestException) as e:
            raise SandboxGoneError(f"could not restart the container: {e}") from e
        out = self._exec(["sh", "-c", "cat /proc/1/task/1/children; mkdir -p /logs/agent /logs/verifier"])
        assert self._trial is not None
        self._trial.keeper = (out.decode(errors="replace").split() or [""])[0]

    def verify(self) -> Verification:
        trial = self._trial
        assert trial is not None
        cap = self.settings.timeout_cap_sec or float("inf")
        timeout = min(self.config.verifier.timeout_sec, cap)
        start = time.perf_counter()
        try:
            trial.put_dir(self.task.tests_dir, CONTAINER_TESTS.strip("/"))
            res = trial.run_verifier(timeout)
        except (docker.errors.APIError, requests.RequestException) as e:
            if not self._running():
                raise SandboxGoneError("container stopped before the verifier") from e
            raise InfraError(ReasonCode.DOCKER_UNAVAILABLE, f"verifier exec failed: {e}") from e
        seconds = time.perf_counter() - start
        if res.timed_out:
            return Verification(reason=ReasonCode.VERIFIER_TIMEOUT, evidence=f"test.sh ran past {timeout}s",
                                seconds=seconds)
        path, _, data = res.output.partition(b"\n")
        reward = parse_reward(Path(path.decode(errors="replace")).name, data) if res.output else \
            parse_reward(None, None)
        return Verification(reward.metrics, reward.reason, reward.problem, seconds)


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
