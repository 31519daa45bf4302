"""One hardened, throw-away container, driven through the Docker SDK (sandbox.py builds the trial API on it).

Every container runs with no network, every capability dropped but CAP_SETUID/CAP_SETGID (the verifier runs
solver code as another uid through /tests/run_as_solver, gates/solver_run.py; Docker and Harbor give both by
default; without CAP_KILL a process an agent started under another uid survives the reaper, which the trial then
reports as reap_failed, reward 0), no-new-privileges, pids/memory/CPU limits, an init
process, and tmpfs on /tmp and /logs. A task's stand-in services (services.py) run beside it in containers of
their own, hardened the same way, that join only its network namespace. Scripts run with their output piped into
a capped log, under a watchdog that acts at the deadline (by default it kills the whole container, which ends
every process it holds). Containers are tracked while alive so that Ctrl-C can kill them all; `Trial` always
removes its containers (the services first) on exit, and every one carries the run's `skill2env.gate` label.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import socket
import tarfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests.exceptions
from docker.models.containers import Container
from docker.types import LogConfig

from skill2env_dagster.gates.reap import REAP
from skill2env_dagster.gates.services import MAX_COLLECT_BYTES, ServiceSpec
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.models.task_dir import CONTAINER_TESTS
from skill2env_dagster.reasons import InfraError, InputError, ReasonCode

log = logging.getLogger(__name__)

LABEL = "skill2env.gate"
# The reap exec's own deadline. The reaper ends by itself within REAP_SECONDS of starting (gates/reap.py), but the
# exec that starts it goes through the engine, which on a loaded host takes seconds: the full suite on 3 workers
# beside other work saw Oracles fail `reap_failed` with no output (the old 15 s passed before the reaper printed a
# line) and a rollout's container killed for a slow reap (10 s). Only an exec that never returns waits this long.
REAP_EXEC_SECONDS = 60.0
SERVICE_LABEL = "skill2env.service"  # on a stand-in service's container: its service name
WITNESS_LABEL = "skill2env.witness"  # on a gate's witness container (see Witness)
OWNER_LABEL = "skill2env.owner"  # "<host>/<pid>/<start>": the process that made the container (see reap_orphans)
HOST_NAME = "S2E_HOST_NAME"  # a worker host's name (hosts sharing a network namespace share a hostname)
RAN = "s2e-ran"  # run_script's first output line: the engine did run the script
# Tries of a read-only exec whose answer came back cut (the engine loses an exec's output now and then:
# docker-py#2042, #3332).
ANSWER_READS = 3
MAX_READ = 1 << 20  # bytes of a reward file we read back; more is malformed anyway
KEPT_CAPS = ("SETUID", "SETGID")  # see the module docstring
_LIVE: set[str] = set()
_LIVE_LOCK = threading.Lock()
# Set by kill_all_live (Ctrl-C), cleared when a new batch of gates starts: a container created after the kill
# (its create call was in flight) is removed at once instead of running to its deadline.
CANCEL = threading.Event()

# REAP (gates/reap.py): kill every process except PID 1 (init), the keeper and this shell.

# Print the keeper's pid (init's child) and any grading path the image should not contain, then make log dirs.
# On a busy engine the exec can start before init has forked the keeper: wait for it (up to 10 s), because a reap
# with no keeper kills the container's only long-lived process, and the trial with it.
_SETUP = """i=0; kids=""
while [ -z "$kids" ] && [ $i -lt 200 ]; do
  kids=$(cat /proc/1/task/1/children); [ -n "$kids" ] || sleep 0.05; i=$((i+1))
done
echo "keeper ${kids:-none}"
for p in /tests /solution /logs/verifier /logs/agent; do [ -e "$p" ] && echo "$p"; done
mkdir -p /logs/agent /logs/verifier
"""


def parse_setup(code: int | None, out: bytes) -> tuple[str, list[str]]:
    """(keeper pid, grading paths the image already holds) from `_SETUP`'s output; InfraError when the keeper is
    missing (never a path taken for a pid)."""
    words = out.decode(errors="replace").split()
    if code != 0 or len(words) < 2 or words[0] != "keeper" or not words[1].isdigit():
        # Our own script printed nothing at all: the exec never ran (an engine that just restarted, a container
        # stopped under it), which is the engine's trouble and retried as such.
        reason = ReasonCode.DOCKER_UNAVAILABLE if not out.strip() else ReasonCode.INTERNAL_ERROR
        raise InfraError(reason, f"container setup failed (exit {code}): {out[-300:]!r}")
    return words[1], [w for w in words[2:] if w.startswith("/")]


@dataclass(frozen=True)
class ExecResult:
    exit_code: int | None
    timed_out: bool
    seconds: float
    output: bytes = b""
    died: bool = False  # the container stopped (or vanished) under us


def client_for(settings: GateSettings) -> docker.DockerClient:
    """A client, or InfraError(docker_unavailable) when no engine answers."""
    try:
        client = docker.DockerClient(base_url=settings.docker_url) if settings.docker_url else docker.from_env()
        client.ping()
        return client
    except (docker.errors.DockerException, OSError) as e:
        raise InfraError(ReasonCode.DOCKER_UNAVAILABLE, f"no Docker engine answers: {e}") from e


def _host() -> str:
    return os.environ.get(HOST_NAME) or socket.gethostname()


def owner_id(pid: int | None = None) -> str:
    """This process (or `pid` on this host) as "<host>/<pid>/<start time>": the start time tells a dead owner from
    a new process that got its pid."""
    pid = pid or os.getpid()
    try:
        with open(f"/proc/{pid}/stat") as f:
            start = f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        start = "gone"
    return f"{_host()}/{pid}/{start}"


def labels_for(settings: GateSettings) -> dict[str, str]:
    """The labels of every container a gate or an episode makes: the run's label and its owner process."""
    return {LABEL: settings.run_id, OWNER_LABEL: owner_id()}


def reap_orphans(client: docker.DockerClient, label: str) -> int:
    """Remove the containers carrying `label` whose owner process on this host is dead (kill -9, OOM): nothing
    else would ever stop them (a trial's watchdog lives in its owner). Containers of live processes, of other
    hosts and of other labels are left alone. Returns how many were removed."""
    host, removed = _host(), 0
    for box in client.containers.list(all=True, sparse=True, filters={"label": [f"{LABEL}={label}", OWNER_LABEL]}):
        owner = str((box.attrs.get("Labels") or {}).get(OWNER_LABEL, ""))
        parts = owner.split("/")
        if len(parts) != 3 or parts[0] != host or not parts[1].isdigit() or owner_id(int(parts[1])) == owner:
            continue
        try:
            box.remove(force=True, v=True)
            removed += 1
        except docker.errors.NotFound:
            pass
    return removed


def kill_all_live(client: docker.DockerClient) -> None:
    """Kill every trial container still running (Ctrl-C path); their owners then remove them. Containers whose
    creation is still in flight see CANCEL when they register (hardened), so none escapes."""
    with _LIVE_LOCK:
        CANCEL.set()
        ids = list(_LIVE)
    for cid in ids:
        with contextlib.suppress(docker.errors.APIError):
            client.api.kill(cid)


def _root_owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    if info.isfile() and info.name.endswith(".sh"):
        info.mode |= 0o755
    return info


def tar_dir(src: Path, dest_name: str, extra: dict[str, bytes] | None = None) -> bytes:
    """Tar `src` as top-level folder `dest_name`, scripts executable (Harbor chmods them too), plus `extra`
    files (paths relative to `dest_name`, parent folders made)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(str(src), arcname=dest_name, filter=_root_owned)
        dirs = sorted({str(p) for rel in extra or {} for p in Path(rel).parents if str(p) != "."})
        for d in dirs:
            info = tarfile.TarInfo(f"{dest_name}/{d}")
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, int(time.time())
            tar.addfile(info)
        for rel, data in (extra or {}).items():
            info = tarfile.TarInfo(f"{dest_name}/{rel}")
            info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _bytes(out: bytes | Iterator[bytes] | None) -> bytes:
    """exec_run gives bytes when not streaming; the SDK's type also allows an iterator."""
    if out is None or isinstance(out, bytes):
        return out or b""
    return b"".join(out)


def _kill_quietly(box: Container) -> None:
    with contextlib.suppress(docker.errors.APIError):
        box.kill()


def _remove(box: Container) -> None:
    try:
        box.remove(force=True, v=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as e:
        log.warning("could not remove container %s: %s", str(box.id)[:12], e)
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(str(box.id))


def _read_file(box: Container, path: str, limit: int) -> bytes | None:
    """The regular file at `path` in `box` (None when missing, not a file, or over `limit` bytes)."""
    try:
        stream, stat = box.get_archive(path)
    except docker.errors.NotFound:
        return None
    if int((stat or {}).get("size", 0)) > limit:
        return None
    raw = b""
    for chunk in stream:
        raw += chunk
        if len(raw) > limit + 4096:
            return None
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        member = tar.next()
        f = tar.extractfile(member) if member is not None and member.isfile() else None
        return f.read() if f is not None else None


def _is_gone(e: docker.errors.APIError) -> bool:
    """409 'is not running' / 404: the container stopped or was removed, not an engine failure."""
    return isinstance(e, docker.errors.NotFound) or e.status_code == 409 or "is not running" in str(e)


def hardened(client: docker.DockerClient, s: GateSettings, image: str, labels: dict[str, str],
             **kw: Any) -> Container:
    """A created (not started) container with the trial limits, tracked for Ctrl-C until removed."""
    box = client.containers.create(
        image, init=True, cap_drop=["ALL"], cap_add=list(KEPT_CAPS), security_opt=["no-new-privileges"],
        pids_limit=s.pids_limit,
        mem_limit=f"{s.memory_mb}m", memswap_limit=f"{s.memory_mb}m", nano_cpus=int(s.cpus * 1e9),
        cpuset_cpus=s.cpuset,
        log_config=LogConfig(type="json-file", config={"max-size": "1m", "max-file": "1"}),
        labels={**labels_for(s), **labels}, detach=True, **kw)
    with _LIVE_LOCK:
        _LIVE.add(str(box.id))
        cancelled = CANCEL.is_set()
    if cancelled:
        _remove(box)
        raise InfraError(ReasonCode.CANCELLED, "gates cancelled")
    return box


class Witness:
    """A container of ours beside a gate's trials that runs nothing of the task's (the image's `sleep`, no
    network). An engine that restarts or stops (without live-restore) stops every container, so a witness found
    stopped, replaced or unreachable at the end of a gate means the engine failed during it: a trial that "died"
    or a check that failed since may be the engine's doing, not the task's, and the gate is no verdict."""

    def __init__(self, client: docker.DockerClient, image: str, settings: GateSettings) -> None:
        self.client, self.image, self.settings = client, image, settings
        self.box: Container | None = None
        self.started_at = ""

    def __enter__(self) -> Witness:
        self.box = hardened(self.client, self.settings, self.image, {WITNESS_LABEL: "1"},
                            entrypoint=["sleep", "infinity"], command=[], network_mode="none")
        try:
            self.box.start()
            self.box.reload()
            self.started_at = str(self.box.attrs["State"]["StartedAt"])
        except BaseException:
            _remove(self.box)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.box is not None:
            with contextlib.suppress(docker.errors.DockerException, OSError):
                _remove(self.box)

    def intact(self) -> bool:
        """Still running since it was started (the engine answered and never stopped it)."""
        if self.box is None:
            return False
        try:
            state = self.client.api.inspect_container(str(self.box.id))["State"]
        except (docker.errors.DockerException, OSError):
            return False
        return bool(state.get("Running")) and str(state.get("StartedAt")) == self.started_at


class Trial:
    """Context manager for one fresh container from `image`; removed on exit whatever happened."""

    def __init__(self, client: docker.DockerClient, image: str, settings: GateSettings, workdir: str | None,
                 env: dict[str, str] | None = None, services: Sequence[ServiceSpec] = ()) -> None:
        self.client, self.image, self.settings, self.workdir = client, image, settings, workdir
        self.env = dict(env or {})
        self.services = list(services)
        self.sidecars: dict[str, Container] = {}
        self.container: Container | None = None
        self.cid = ""
        self.keeper = ""
        self._reaping = threading.Lock()
        self.preexisting: list[str] = []  # grading paths the image already contained (it must contain none)

    def _hardened(self, image: str, labels: dict[str, str], **kw: Any) -> Container:
        return hardened(self.client, self.settings, image, labels, **kw)

    def __enter__(self) -> Trial:
        s = self.settings
        self.container = self._hardened(
            self.image, {}, entrypoint=["sleep", "infinity"], command=[], network_mode="none",
            tmpfs={"/tmp": f"size={s.tmp_mb}m", "/logs": f"size={s.logs_mb}m"},
            working_dir=self.workdir or None, environment=self.env or None)
        self.cid = str(self.container.id)
        try:
            self.container.start()
            code, raw = self.container.exec_run(["sh", "-c", _SETUP])
            self.keeper, self.preexisting = parse_setup(code, _bytes(raw))
            self.start_services()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_services()
        if self.container is not None:
            _remove(self.container)

    # --- stand-in services -------------------------------------------------------------------------------------
    def start_services(self) -> None:
        """Start every service in the trial's network namespace, then wait until each is healthy; InputError
        (service_failed) when one stops or stays unhealthy."""
        for spec in self.services:
            box = self._hardened(spec.image, {SERVICE_LABEL: spec.name}, command=spec.command,
                                 network_mode=f"container:{self.cid}",
                                 tmpfs={"/tmp": f"size={self.settings.tmp_mb}m"})
            self.sidecars[spec.name] = box
            box.start()
        for spec in self.services:
            self._wait_healthy(spec, self.sidecars[spec.name])

    def _wait_healthy(self, spec: ServiceSpec, box: Container) -> None:
        deadline = time.monotonic() + self.settings.service_start_sec
        while time.monotonic() < deadline:
            box.reload()
            if box.status != "running":
                break
            if not spec.health or self._probe(box, spec.health, deadline - time.monotonic()):
                return
            time.sleep(0.1)
        logs = _bytes(box.logs(tail=5)).decode(errors="replace")
        raise InputError(ReasonCode.SERVICE_FAILED,
                         f"service {spec.name} is {box.status}, not healthy after {self.settings.service_start_sec}s: "
                         f"{logs[-300:]}")

    @staticmethod
    def _probe(box: Container, command: list[str], timeout: float) -> bool:
        """One health check; a check still running at the start deadline kills the service (a task's own health
        command must not hold the gate: the service is then reported as not healthy)."""
        timer = threading.Timer(max(0.5, timeout), lambda: _kill_quietly(box))
        timer.start()
        try:
            return box.exec_run(command)[0] == 0
        except docker.errors.APIError:
            return False
        finally:
            timer.cancel()

    def stop_services(self) -> None:
        for box in self.sidecars.values():
            _remove(box)
        self.sidecars = {}

    def restart_services(self) -> None:
        """Fresh services (their state back to the image's) for another run in this container."""
        self.stop_services()
        self.start_services()

    def collect(self) -> dict[str, bytes]:
        """{path relative to /tests: bytes} of every file the services declare for the verifier, read through
        the engine (a stopped service too). A missing file, or files over MAX_COLLECT_BYTES in all, are left out:
        the verifier then finds nothing, never a partial file."""
        out: dict[str, bytes] = {}
        total = 0
        for spec in self.services:
            box = self.sidecars.get(spec.name)
            for path in spec.collect:
                data = _read_file(box, path, MAX_COLLECT_BYTES - total) if box is not None else None
                if data is not None:
                    out[spec.collected_path(path).removeprefix(f"{CONTAINER_TESTS}/")] = data
                    total += len(data)
        return out

    @property
    def box(self) -> Container:
        if self.container is None:
            raise InfraError(ReasonCode.INTERNAL_ERROR, "trial container used outside its `with` block")
        return self.container

    def alive(self) -> bool:
        try:
            self.box.reload()
        except docker.errors.NotFound:
            return False
        return self.box.status == "running"

    def stops_within(self, seconds: float) -> bool:
        """Whether the container stops within `seconds`: a container whose keeper was killed is being torn down
        while the engine still reports it running; its stop is the marker waited for, not a delay."""
        try:
            self.box.wait(timeout=seconds, condition="not-running")
        except docker.errors.NotFound:
            return True
        except (docker.errors.APIError, requests.exceptions.RequestException):
            return not self.alive()
        return True

    def kill(self) -> None:
        with contextlib.suppress(docker.errors.APIError):
            self.box.kill()

    def put_tar(self, data: bytes, dest: str = "/") -> None:
        if not self.box.put_archive(dest, data):
            raise InfraError(ReasonCode.INTERNAL_ERROR, f"could not copy files into the container at {dest}")

    def put_dir(self, src: Path, dest_name: str) -> None:
        """Copy a host folder to /<dest_name> inside the container."""
        self.put_tar(tar_dir(src, dest_name))

    def sh(self, body: str, timeout: float, env: dict[str, str] | None = None, args: tuple[str, ...] = (),
           on_timeout: Callable[[], None] | None = None) -> ExecResult:
        """Run `sh -c body` with `args` as $1… (absolute /bin/sh: PATH cannot redirect it) under a watchdog.

        At the deadline `on_timeout` runs (default: kill the container, which ends the whole process tree).
        The container stopping under us is reported as `died`, never raised.
        """
        fired = threading.Event()

        def _fire() -> None:
            fired.set()
            (on_timeout or self.kill)()

        timer = threading.Timer(timeout, _fire)
        start = time.perf_counter()
        timer.start()
        out, code, died = b"", None, False
        try:
            code, raw = self.box.exec_run(["/bin/sh", "-c", body, "s2e", *args],
                                          environment={"KEEPER": self.keeper, **(env or {})})
            out = _bytes(raw)
        except docker.errors.APIError as e:
            if not fired.is_set() and not _is_gone(e):
                raise
            died = not fired.is_set()
        finally:
            timer.cancel()
            if fired.is_set():
                # The exec returns as soon as its own processes die, while the reap may go on killing for another
                # round: the next command must not start until it is done, or the reap kills that one too.
                timer.join()
        seconds = time.perf_counter() - start
        return ExecResult(code, fired.is_set(), seconds, out or b"", died)

    def run_script(self, argv: list[str], log_path: str, timeout: float, prelude: str = "", epilogue: str = "",
                   env: dict[str, str] | None = None, on_timeout: Callable[[], None] | None = None,
                   reread: str = "") -> ExecResult:
        """Run `argv` with output capped into `log_path`; the watchdog acts at the deadline (see `sh`).

        The exec's own output is the program's exit code, then whatever `epilogue` prints (e.g. the reward file),
        so a trial needs no extra round trip; files on the tmpfs mounts cannot be read with `docker cp` anyway.
        An answer without the `RAN` line is the engine's failure: when the exec still ended with the script's own
        `exit 0`, the output was lost on the way (docker-py#2042, #3332) and `reread`, a read-only script that
        prints the epilogue's answer again (the reward file), gives it (exit code None); with a `reread` that cannot,
        InfraError - a verdict must not rest on it. Without `reread`, and when a program killed the script's shell,
        the exit code is None and the output empty.
        """
        cap = self.settings.output_cap_bytes
        # Output goes through a fifo into `head -c`, and we wait for the program alone: processes it leaves behind
        # may hold the fifo open forever, yet must not keep us waiting (the verifier reaps them later).
        body = (
            f'echo {RAN}\n{prelude}\nlog="$1"; shift; rm -f "$log.fifo"; mkfifo "$log.fifo" || exit 97\n'
            f'head -c {cap} < "$log.fifo" > "$log" 2>/dev/null &\n'
            f'"$@" > "$log.fifo" 2>&1 < /dev/null; echo $?\n{epilogue}\nexit 0'
        )
        res = self.sh(body, timeout, env, (log_path, *argv), on_timeout)
        if res.timed_out or res.died:
            return res
        ran, _, out = res.output.partition(b"\n")
        if ran != RAN.encode():
            # Not even the line printed before anything else: the engine lost the answer (or never ran the script),
            # so no program of the task's can have caused it.
            if not reread:  # the caller reads a missing exit code as it always did (e.g. the creator's commands)
                return ExecResult(None, False, res.seconds, b"")
            again = self.read_whole(reread) if res.exit_code == 0 else None
            if again is not None:
                return ExecResult(None, False, res.seconds, again)
            if not self.alive():
                return ExecResult(None, False, res.seconds, b"", died=True)
            raise InfraError(ReasonCode.DOCKER_UNAVAILABLE, f"an exec returned without running its script (exit "
                             f"{res.exit_code}): {res.output[-200:]!r}")
        first, _, rest = out.partition(b"\n")
        code = int(first) if first.strip().isdigit() else None
        return ExecResult(code, False, res.seconds, rest)

    def read_whole(self, script: str, timeout: float = REAP_EXEC_SECONDS) -> bytes | None:
        """What read-only `script` prints, from an answer that came back whole (its last line is ours); None when
        none did in ANSWER_READS tries, or the container stopped."""
        for _ in range(ANSWER_READS):
            res = self.sh(f"{script}\necho {RAN}", timeout)
            if res.died or res.timed_out:
                return None
            if res.output.endswith(RAN.encode() + b"\n"):
                return res.output[:-len(RAN) - 1]
        return None

    def reap(self, timeout: float = REAP_EXEC_SECONDS) -> ExecResult:
        """Kill every process but init and the keeper (see REAP). One reap at a time: a reaper stops and kills
        every process it does not keep, a second reaper's shell included (a command's watchdog and a rollout's
        deadline can fire together)."""
        with self._reaping:
            return self.sh(REAP + '[ "${left:-0}" = 0 ] && echo reaped || echo "still alive: $s2e_why"', timeout)

    def reap_or_kill(self) -> None:
        """Stop every agent process; kill the container when even that fails (the files stay readable)."""
        res = self.reap()
        if res.died or res.timed_out or b"reaped" not in res.output:
            self.kill()
