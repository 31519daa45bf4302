"""The trial API: a hardened sandbox an agent (or the Oracle, a cheat, a probe) acts in, and a verify step whose
reward the agent cannot forge. The gates use it now; solver rollouts drive it the same way later.

    with Sandbox(client, image, settings, config, task.tests_dir) as sb:
        sb.exec("python3 fix.py", timeout=60)          # agent phase, as often as needed
        outcome = sb.verify()                          # status, metrics, tamper evidence; never raises for
                                                       # anything the agent did
`verify()` in order: (1) kills every process left from the agent phase (setsid daemons, double forks and fork
bombs included, see reap.REAP); (2) asks the engine what the agent phase changed on disk and stops with
`tamper_detected` (reward 0, paths as evidence) if it touched the verifier's toolchain (tamper.py); (3) copies the
files the task's stand-in services declare out of those services (services.py: they run in containers of their
own, which the agent cannot reach but through their port), empties /logs/verifier and copies tests/ to /tests with
those files under /tests/services/; (4) runs /tests/test.sh with a fixed environment; (5) parses the reward.

Step 1 runs before step 2 on purpose: both the reaper and every command used up to the verifier are resolved from
absolute paths in protected places, so anything that interferes with them leaves a change the engine reports,
while a diff taken before the reaper would miss a leftover process planting a file after the diff.

The verifier's environment is the image's own ENV, plus task.toml `[environment].env` (set on the container, as
Harbor does), plus `[verifier].env`, plus PYTHONNOUSERSITE=1 and PYTHONDONTWRITEBYTECODE=1. Each exec starts
from the container's environment, so nothing an agent exported (LD_PRELOAD, BASH_ENV, ENV, PYTHONPATH) reaches it.
The agent and solution phases run with PYTHONDONTWRITEBYTECODE=1 (see tamper.py for why bytecode matters).
"""

from __future__ import annotations

import contextlib
import io
import logging
import shlex
import tarfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Any

import docker
import docker.errors
from docker.models.containers import Container

from skill2env_dagster.gates.changes import (
    Change,
    ChangeKind,
    engine_changes,
    fast_view,
    is_under,
    parent_of,
    top_level,
)
from skill2env_dagster.gates.container import LABEL, MAX_READ, ExecResult, Trial, labels_for, tar_dir
from skill2env_dagster.gates.reap import REAP
from skill2env_dagster.gates.reward import Reward, parse_reward
from skill2env_dagster.gates.services import ServiceSpec
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.gates.tamper import TamperPolicy
from skill2env_dagster.models.task_dir import (
    CONTAINER_REWARD_JSON,
    CONTAINER_REWARD_TXT,
    CONTAINER_SOLUTION,
    CONTAINER_TESTS,
    CONTAINER_VERIFIER_LOGS,
)
from skill2env_dagster.models.task_toml import TaskToml
from skill2env_dagster.reasons import InfraError, ReasonCode

log = logging.getLogger(__name__)

COMMIT_REPO = "s2e-gate-state"
AGENT_ENV = {"PYTHONDONTWRITEBYTECODE": "1"}
DYING_SECONDS = 15.0  # how long a reaper cut short may wait for its container to go down before it is a reap failure
VERIFIER_ENV = {"PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1"}
VERIFIER_LOG = f"{CONTAINER_VERIFIER_LOGS}/test-stdout.txt"
# What a run leaves on the tmpfs mounts, which the engine's view of changes cannot see: emptied between runs that
# share a container (then /logs/agent and /logs/verifier are made again).
SCRATCH = "/tmp/* /tmp/.[!.]* /tmp/..?* /dev/shm/* /dev/shm/.[!.]* /dev/shm/..?*"
EPHEMERAL = f"{SCRATCH} /logs/*"
REMAKE_LOGS = "mkdir -p /logs/agent /logs/verifier"


def wipe_command(paths: Sequence[str] = ()) -> str:
    """One shell step of a reset: remove `paths` and what the tmpfs mounts hold, then remake the log folders."""
    quoted = " ".join(shlex.quote(p) for p in paths)
    return f"rm -rf -- {quoted} {EPHEMERAL} 2>/dev/null\n{REMAKE_LOGS}"


# The tmpfs part of a reset, for a container whose disk the engine shows unchanged (see Sandbox.untouched).
WIPE = wipe_command() + "\n"
# Empty the reward folder (a forged reward.txt/json, or a symlink in place of the folder, goes with it).
CLEAN = f"rm -rf {CONTAINER_VERIFIER_LOGS}; mkdir -p {CONTAINER_VERIFIER_LOGS}\n"
# Print `<path>\n<bytes>` of the reward file (json wins over txt, as in Harbor), or nothing.
PRINT_REWARD = (
    f'for f in {CONTAINER_REWARD_JSON} {CONTAINER_REWARD_TXT}; do '
    f'if [ -f "$f" ]; then echo "$f"; head -c {MAX_READ} "$f"; break; fi; done'
)


class TrialStatus(StrEnum):
    """How a trial ended. Only `ok` carries metrics; every other status means reward 0."""

    OK = "ok"  # the verifier ran and wrote a usable reward
    REWARD_UNUSABLE = "reward_unusable"  # the verifier ran; its reward is missing, empty or invalid
    TAMPER_DETECTED = "tamper_detected"  # the agent phase changed the verifier's toolchain; verifier not run
    SOLUTION_TIMEOUT = "solution_timeout"  # a solution script ran past its limit; verifier not run
    VERIFIER_TIMEOUT = "verifier_timeout"
    CONTAINER_DIED = "container_died"  # e.g. the agent killed the keeper process
    REAP_FAILED = "reap_failed"  # the leftover processes could not be stopped (e.g. a full process table)


@dataclass(frozen=True)
class VerifyOutcome:
    status: TrialStatus
    reward: Reward = field(default_factory=Reward)
    tamper: tuple[str, ...] = ()
    changes: tuple[Change, ...] = ()  # what the agent phase changed (engine view); empty when nothing ran
    seconds: float = 0.0
    detail: str = ""
    work: tuple[str, ...] | None = None  # a solution script's work (script_batch.WORK_FIND); None: not measured

    @property
    def metrics(self) -> dict[str, float]:
        return dict(self.reward.metrics) if self.status is TrialStatus.OK else {}

    @property
    def value(self) -> float:
        """The scalar reward for training: the mean metric when ok, else 0."""
        m = self.metrics
        return sum(m.values()) / len(m) if m else 0.0

    def describe(self) -> str:
        if self.status is TrialStatus.OK:
            return f"metrics {self.metrics}"
        if self.status is TrialStatus.REWARD_UNUSABLE:
            return f"{self.reward.reason}: {self.reward.problem}"
        if self.status is TrialStatus.TAMPER_DETECTED:
            return "tamper_detected: " + "; ".join(self.tamper)[:1500]
        return f"{self.status.value}{': ' + self.detail if self.detail else ''}"


@dataclass(frozen=True)
class Settled:
    status: TrialStatus
    changes: tuple[Change, ...] = ()
    tamper: tuple[str, ...] = ()
    detail: str = ""


def unfinished(reaped: ExecResult) -> bool:
    """The reaper returned without its last line (`reaped` or `still alive: …`): its shell was killed, as happens
    when the container is going down under it."""
    return not reaped.timed_out and b"reaped" not in reaped.output and b"still alive" not in reaped.output


def reward_from(output: bytes) -> Reward:
    """The verifier exec prints `<path>\\n<bytes>` of the reward file it found, or nothing."""
    if not output:
        return parse_reward(None, None)
    path, _, data = output.partition(b"\n")
    return parse_reward(Path(path.decode(errors="replace")).name, data)


def image_policy(client: docker.DockerClient, image: str, config: TaskToml) -> TamperPolicy:
    """The tamper policy for this image (its PATH, working directory) and task (declared toolchain writes)."""
    cfg = client.images.get(image).attrs.get("Config") or {}
    env = dict(e.split("=", 1) for e in cfg.get("Env") or [] if "=" in e)
    path_dirs = tuple(d for d in env.get("PATH", "").split(":") if d)
    workdir = config.environment.workdir or cfg.get("WorkingDir") or None
    return TamperPolicy(path_dirs=path_dirs, workdir=workdir, waivers=tuple(config.toolchain_writes))


class Sandbox:
    """One trial container. `exec` is the agent phase; `verify` ends it (see the module docstring)."""

    def __init__(self, client: docker.DockerClient, image: str, settings: GateSettings, config: TaskToml,
                 tests_dir: Path, policy: TamperPolicy | None = None, services: Sequence[ServiceSpec] = ()) -> None:
        self.client, self.image, self.settings, self.config, self.tests_dir = client, image, settings, config, tests_dir
        self.policy = policy or image_policy(client, image, config)
        self.trial = Trial(client, image, settings, config.environment.workdir, config.environment.env, services)
        self.collected: dict[str, bytes] = {}  # the services' files for the verifier, read after the agent phase
        self.dirty = False
        self._settled: Settled | None = None

    def __enter__(self) -> Sandbox:
        self.trial.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.trial.__exit__(*exc)

    @property
    def preexisting(self) -> list[str]:
        return self.trial.preexisting

    # --- agent phase -------------------------------------------------------------------------------------------
    def exec(self, command: str, timeout: float, env: dict[str, str] | None = None,
             log_path: str = "/logs/agent/exec.log") -> ExecResult:
        """Run a shell command as the agent. At the timeout every agent process is killed (the files stay);
        if even that fails the container is killed, and `verify()` then reports `container_died`."""
        self._touch()
        return self.trial.run_script(["/bin/sh", "-c", command], log_path, timeout,
                                     env={**AGENT_ENV, **(env or {})}, on_timeout=self.trial.reap_or_kill)

    def run(self, command: str, timeout: float, env: dict[str, str] | None = None) -> ExecResult:
        """Agent-phase command whose stdout the caller reads (short probes; no log, output not capped)."""
        self._touch()
        return self.trial.sh(command, timeout, {**AGENT_ENV, **(env or {})}, on_timeout=self.trial.reap_or_kill)

    def run_solution(self, solution_dir: Path, script: str, timeout: float) -> ExecResult:
        """Copy solution/ to /solution and run one of its scripts like Harbor's Oracle ([solution].env set).
        At the timeout the container is killed: a solution that overruns is judged, not waited for."""
        self._touch()
        self.trial.put_dir(solution_dir, CONTAINER_SOLUTION.strip("/"))
        env = {**self.config.solution.env, **AGENT_ENV}
        return self.trial.run_script([f"{CONTAINER_SOLUTION}/{script}"], "/logs/agent/solve.log", timeout, env=env)

    def put_dir(self, src: Path, dest_name: str) -> None:
        self._touch()
        self.trial.put_dir(src, dest_name)

    def load(self, tar: bytes, deleted: Sequence[str] = ()) -> None:
        """Another run's work as an agent phase of this sandbox: remove `deleted`, then unpack `tar` (rooted at /).
        verify() judges it like any agent phase."""
        self._touch()
        if deleted:
            self.trial.sh("rm -rf -- " + " ".join(shlex.quote(p) for p in deleted), 60)
        if tar:
            self.trial.put_tar(tar, "/")

    def touch(self) -> None:
        """The agent phase ran a command by a route of its own (the rollouts' shell server): settle again."""
        self._touch()

    def _touch(self) -> None:
        self.dirty, self._settled = True, None

    # --- verify ------------------------------------------------------------------------------------------------
    def settle(self) -> Settled:
        """End the agent phase: reap its processes, then read its changes from the engine and judge them."""
        if self._settled is not None:
            return self._settled
        if not self.dirty:
            self._settled = Settled(TrialStatus.OK)
            return self._settled
        if not self.trial.alive():
            return self._settle(Settled(TrialStatus.CONTAINER_DIED, detail="container stopped in the agent phase"))
        try:
            res = self.trial.reap()
        except docker.errors.APIError as e:
            return self._settle(self._unresponsive(f"reaper could not start: {e}"))
        if res.died or not self.trial.alive() or (unfinished(res) and self.trial.stops_within(DYING_SECONDS)):
            return self._settle(Settled(TrialStatus.CONTAINER_DIED, detail="container stopped while reaping"))
        if res.timed_out or b"reaped" not in res.output:
            return self._settle(Settled(TrialStatus.REAP_FAILED, detail=res.output[-300:].decode(errors="replace")))
        try:
            changes = tuple(engine_changes(self.trial.box, self.settings.read_upper_dir))
        except docker.errors.NotFound:
            return self._settle(Settled(TrialStatus.CONTAINER_DIED, detail="container vanished"))
        tamper = tuple(self.policy.evidence(list(changes)))
        status = TrialStatus.TAMPER_DETECTED if tamper else TrialStatus.OK
        return self._settle(Settled(status, changes, tamper))

    def _settle(self, settled: Settled) -> Settled:
        self._settled, self.dirty = settled, False
        return settled

    def _unresponsive(self, detail: str) -> Settled:
        """The container runs but takes no command: the agent's doing (e.g. a full process table), unless the
        engine itself is down, which is ours (raised as infrastructure)."""
        try:
            self.client.ping()
        except (docker.errors.DockerException, OSError) as e:
            raise InfraError(ReasonCode.DOCKER_UNAVAILABLE, f"engine stopped answering: {e}") from e
        if not self.trial.alive():
            return Settled(TrialStatus.CONTAINER_DIED, detail=detail)
        self.trial.kill()
        return Settled(TrialStatus.REAP_FAILED, detail=detail[:300])

    def verify(self, collected: dict[str, bytes] | None = None, *, as_harbor: bool = False) -> VerifyOutcome:
        """`collected`: the services' files to give the verifier instead of what this sandbox's own services
        recorded (a replay of another run's work, see untampered.py). `as_harbor`: run the verifier even on tamper
        evidence, as a runner without our engine-side check does (the tamper kit's site-hook attack)."""
        start = time.perf_counter()
        settled = self.settle()
        if as_harbor and settled.status is TrialStatus.TAMPER_DETECTED:
            settled = Settled(TrialStatus.OK, settled.changes, settled.tamper)
        if settled.status is not TrialStatus.OK:
            return VerifyOutcome(settled.status, Reward(), settled.tamper, settled.changes,
                                 time.perf_counter() - start, settled.detail)
        timeout = min(self.config.verifier.timeout_sec, self.settings.timeout_cap_sec or float("inf"))
        try:
            self.collected = self.trial.collect() if collected is None else collected
            self.trial.put_tar(self.tests_tar())
            # The tests leave with the verifier: a later agent phase in this sandbox must not see them.
            # Leftovers of the verifier are reaped too, so a reset() needs no reaper of its own.
            res = self.trial.run_script([f"{CONTAINER_TESTS}/test.sh"], VERIFIER_LOG, timeout, REAP + CLEAN,
                                        f"{PRINT_REWARD}\nrm -rf {CONTAINER_TESTS}\n{REAP}",
                                        env={**VERIFIER_ENV, **self.config.verifier.env}, reread=PRINT_REWARD)
        except docker.errors.APIError as e:
            if self.trial.alive():
                raise
            res = ExecResult(None, False, 0.0, b"", died=True)
            log.debug("container died before the verifier: %s", e)
        seconds = time.perf_counter() - start
        if res.died:
            return VerifyOutcome(TrialStatus.CONTAINER_DIED, Reward(), (), settled.changes, seconds,
                                 "container stopped before the verifier finished")
        if res.timed_out:
            return VerifyOutcome(TrialStatus.VERIFIER_TIMEOUT, Reward(), (), settled.changes, seconds,
                                 f"test.sh ran past {timeout}s")
        reward = reward_from(res.output)
        status = TrialStatus.OK if reward.ok else TrialStatus.REWARD_UNUSABLE
        return VerifyOutcome(status, reward, (), settled.changes, seconds)

    def tests_tar(self, name: str = CONTAINER_TESTS.strip("/")) -> bytes:
        """tests/ as folder `name`, with the files collected from the services since the agent phase."""
        return tar_dir(self.tests_dir, name, self.collected)

    # --- state -------------------------------------------------------------------------------------------------
    def reset(self, image: ImageReader) -> bool:
        """Back to the image's filesystem after a verify, for another solution run in this container (cheaper
        than a fresh one): what the runs added is removed, what they changed or deleted is put back from the
        image, /tmp, /dev/shm and /logs are emptied. Needs the fast engine view, and checks its work with it:
        False (use a fresh container) when anything but the restored copies still differs from the image, or
        when a copy would have to be restored into the toolchain (the next run's tamper check could not tell a
        restored copy from a changed one)."""
        if self.dirty or not self.settings.read_upper_dir or not fast_view(self.trial.box):
            return False
        plan = restore_plan(self.policy, image, engine_changes(self.trial.box))
        if plan is None:
            return False
        res = self.trial.sh(f"{wipe_command(plan.paths)} && echo reset", 30)
        if b"reset" not in res.output:
            return False
        for p, data in plan.originals.items():
            self.trial.put_tar(data, parent_of(p))
        after = engine_changes(self.trial.box)
        self._settled, self.collected = None, {}
        self.trial.restart_services()
        return all(c.kind is ChangeKind.MODIFIED and any(is_under(c.path, r) for r in plan.originals) for c in after)

    def untouched(self) -> bool:
        """After a verify: the engine's fast view shows no change on disk, so what a reset() would still do is
        WIPE (tmpfs), which the caller runs in its next exec instead of a round trip of its own. False for a
        task with stand-in services (a reset restarts them) and without the fast view."""
        if self.dirty or self.trial.services or not self.settings.read_upper_dir or not fast_view(self.trial.box):
            return False
        return not engine_changes(self.trial.box)

    def commit(self) -> str:
        """Snapshot the container's filesystem (tmpfs mounts excluded) as an image; the caller removes it."""
        tag = uuid.uuid4().hex[:16]
        img = self.trial.box.commit(repository=COMMIT_REPO, tag=tag, conf={"Labels": {LABEL: self.settings.run_id}})
        return str(img.id)

    def read_tree(self, path: str, max_bytes: int) -> dict[str, tuple[bytes | None, int]] | None:
        """{absolute path: (content, or None for a folder; mode)} of `path` and everything below it, read through
        the engine; None when the files hold more than `max_bytes` together. Symlinks and devices are skipped."""
        return read_archive(self.trial.box, path, max_bytes)


@dataclass(frozen=True)
class RestorePlan:
    """How to take a container's changes back to the image."""

    added: tuple[str, ...]  # top-level paths to remove
    originals: dict[str, bytes]  # top-level paths to remove, then put back from the image's copy (a tar rooted at
    # the path's name)

    @property
    def paths(self) -> tuple[str, ...]:
        return self.added + tuple(self.originals)


def restore_plan(policy: TamperPolicy, image: ImageReader, changes: Sequence[Change]) -> RestorePlan | None:
    """The plan for `changes`; None when a path to put back lies in the toolchain (the next run's tamper check
    could not tell a restored copy from a changed one) or the image has no copy of it."""
    added = top_level([c.path for c in changes if c.kind is ChangeKind.ADDED])
    restore = top_level([c.path for c in changes if c.kind is not ChangeKind.ADDED])
    if any(policy.rule(p) for p in restore):
        return None
    archives = {p: image.archive(p) for p in restore}
    copies = {p: a for p, a in archives.items() if a is not None}
    return RestorePlan(tuple(added), copies) if len(copies) == len(archives) else None


class ImageReader:
    """A created, never started container of an image: the image's own files, read through the engine."""

    def __init__(self, client: docker.DockerClient, image: str, settings: GateSettings) -> None:
        self.client, self.image, self.settings = client, image, settings
        self.box: Container | None = None

    def __enter__(self) -> ImageReader:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.box is not None:
            with contextlib.suppress(docker.errors.APIError):
                self.box.remove(force=True)

    def _container(self) -> Container:
        if self.box is None:  # made on first use: most resets have nothing to put back
            self.box = self.client.containers.create(self.image, entrypoint=["true"], network_mode="none",
                                                     labels=labels_for(self.settings))
        return self.box

    def archive(self, path: str) -> bytes | None:
        """The tar `docker cp` gives for `path` (rooted at its name), or None when the image has no such path."""
        try:
            stream, _ = self._container().get_archive(path)
        except docker.errors.NotFound:
            return None
        return b"".join(stream)

    def files(self, paths: list[str], max_bytes: int) -> dict[str, bytes]:
        """The image's version of some regular files (missing or larger ones are left out)."""
        out: dict[str, bytes] = {}
        for p in paths:
            try:
                entries = read_archive(self._container(), p, max_bytes) or {}
            except docker.errors.NotFound:
                continue
            if isinstance(data := entries.get(p, (None, 0))[0], bytes):
                out[p] = data
        return out


def read_archive(box: Container, path: str, max_bytes: int) -> dict[str, tuple[bytes | None, int]] | None:
    """See Sandbox.read_tree; works on a container that never started, too (the image's own files)."""
    stream, _ = box.get_archive(path)
    parent = str(PurePosixPath(path).parent).rstrip("/")
    out: dict[str, tuple[bytes | None, int]] = {}
    total = 0
    with tarfile.open(fileobj=_Chunks(stream), mode="r|") as tar:
        for info in tar:
            dest = f"{parent}/{info.name}"
            if info.isdir():
                out[dest] = (None, info.mode)
            elif info.isfile():
                total += info.size
                if total > max_bytes:
                    return None
                f = tar.extractfile(info)
                out[dest] = (f.read() if f else b"", info.mode)
    return out


class _Chunks(io.RawIOBase):
    """A file object over the engine's chunk iterator, so a large archive streams instead of loading at once."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._it, self._buf = iter(chunks), b""

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while not self._buf:
            try:
                self._buf = next(self._it)
            except StopIteration:
                return 0
        n = min(len(b), len(self._buf))
        b[:n], self._buf = self._buf[:n], self._buf[n:]
        return n


def remove_image(client: docker.DockerClient, image_id: str) -> None:
    try:
        client.images.remove(image_id, force=True, noprune=False)
    except docker.errors.ImageNotFound:
        pass
    except docker.errors.APIError as e:
        log.warning("could not remove committed state %s: %s", image_id[:19], e)
