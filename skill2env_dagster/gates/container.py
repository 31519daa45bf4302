"""One hardened, throw-away container per trial, driven through the Docker SDK.

Every trial container runs with no network, all capabilities dropped, no-new-privileges, pids/memory/CPU limits,
an init process, and tmpfs on /tmp and /logs. Scripts run with their output piped into a capped log, under a
watchdog that kills the whole container at the deadline (which ends every process it holds). Containers are
tracked while alive so that Ctrl-C can kill them all; `Trial` always removes its container on exit.
"""

from __future__ import annotations

import io
import logging
import tarfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors
from docker.models.containers import Container

from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.models.task_dir import CONTAINER_REWARD_JSON, CONTAINER_REWARD_TXT, CONTAINER_VERIFIER_LOGS
from skill2env_dagster.reasons import InfraError, ReasonCode

log = logging.getLogger(__name__)

LABEL = "skill2env.gate"
MAX_READ = 1 << 20  # bytes of a reward file we read back; more is malformed anyway
_LIVE: set[str] = set()
_LIVE_LOCK = threading.Lock()

# Kill every process except PID 1 (init), the keeper and this shell, until none is left (a fork bomb respawns).
_REAP = """keep="1 $KEEPER $$"
for round in 1 2 3 4 5 6 7 8 9 10; do
  n=0
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    case " $keep " in *" $p "*) continue;; esac
    kill -9 "$p" 2>/dev/null && n=$((n+1))
  done
  [ "$n" -eq 0 ] && break
done
"""

# Print the keeper's pid (init's child) and any grading path the image should not contain, then make log dirs.
_SETUP = """cat /proc/1/task/1/children
for p in /tests /solution /logs/verifier /logs/agent; do [ -e "$p" ] && echo "$p"; done
mkdir -p /logs/agent /logs/verifier
"""


@dataclass(frozen=True)
class ExecResult:
    exit_code: int | None
    timed_out: bool
    seconds: float
    output: bytes = b""


def client_for(settings: GateSettings) -> docker.DockerClient:
    """A client, or InfraError(docker_unavailable) when no engine answers."""
    try:
        client = docker.DockerClient(base_url=settings.docker_url) if settings.docker_url else docker.from_env()
        client.ping()
        return client
    except (docker.errors.DockerException, OSError) as e:
        raise InfraError(ReasonCode.DOCKER_UNAVAILABLE, f"no Docker engine answers: {e}") from e


def kill_all_live(client: docker.DockerClient) -> None:
    """Kill every trial container still running (Ctrl-C path); their owners then remove them."""
    with _LIVE_LOCK:
        ids = list(_LIVE)
    for cid in ids:
        try:
            client.api.kill(cid)
        except docker.errors.APIError:
            pass


def tar_dir(src: Path, dest_name: str) -> bytes:
    """Tar `src` as top-level folder `dest_name`, scripts executable (Harbor chmods them too)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        def _filter(info: tarfile.TarInfo) -> tarfile.TarInfo:
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            if info.isfile() and info.name.endswith(".sh"):
                info.mode |= 0o755
            return info

        tar.add(str(src), arcname=dest_name, filter=_filter)
    return buf.getvalue()


class Trial:
    """Context manager for one fresh container from `image`; removed on exit whatever happened."""

    def __init__(self, client: docker.DockerClient, image: str, settings: GateSettings, workdir: str | None) -> None:
        self.client, self.image, self.settings, self.workdir = client, image, settings, workdir
        self.container: Container | None = None
        self.keeper = ""
        self.preexisting: list[str] = []  # grading paths the image already contained (it must contain none)

    def __enter__(self) -> Trial:
        s = self.settings
        self.container = self.client.containers.create(
            self.image,
            entrypoint=["sleep", "infinity"],
            command=[],
            init=True,
            network_mode="none",
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            pids_limit=s.pids_limit,
            mem_limit=f"{s.memory_mb}m",
            memswap_limit=f"{s.memory_mb}m",
            nano_cpus=int(s.cpus * 1e9),
            tmpfs={"/tmp": f"size={s.tmp_mb}m", "/logs": f"size={s.logs_mb}m"},
            log_config={"type": "json-file", "config": {"max-size": "1m", "max-file": "1"}},
            labels={LABEL: s.run_id},
            working_dir=self.workdir or None,
            detach=True,
        )
        with _LIVE_LOCK:
            _LIVE.add(self.container.id)
        try:
            self.container.start()
            code, out = self.container.exec_run(["sh", "-c", _SETUP])
            words = out.decode(errors="replace").split()
            if code != 0 or not words:
                raise InfraError(ReasonCode.INTERNAL_ERROR, f"container setup failed: {out[-300:]!r}")
            self.keeper, self.preexisting = words[0], words[1:]
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.container is None:
            return
        try:
            self.container.remove(force=True, v=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as e:
            log.warning("could not remove container %s: %s", self.container.id[:12], e)
        finally:
            with _LIVE_LOCK:
                _LIVE.discard(self.container.id)

    def put_dir(self, src: Path, dest_name: str) -> None:
        """Copy a host folder to /<dest_name> inside the container."""
        assert self.container is not None
        if not self.container.put_archive("/", tar_dir(src, dest_name)):
            raise InfraError(ReasonCode.INTERNAL_ERROR, f"could not copy {src} into the container")

    def run_script(self, script: str, log_path: str, timeout: float, prelude: str = "", epilogue: str = "") -> ExecResult:
        """Run `script` with output capped into `log_path`; on timeout kill the container (the whole tree).

        The exec's own output is the script's exit code, then whatever `epilogue` prints (e.g. the reward file),
        so a trial needs no extra round trip; files on the tmpfs mounts cannot be read with `docker cp` anyway.
        """
        assert self.container is not None
        cap = self.settings.output_cap_bytes
        # Output goes through a fifo into `head -c`, and we wait for the script alone: processes it leaves behind
        # may hold the fifo open forever, yet must not keep us waiting (the verifier reaps them later).
        body = (
            f'{prelude}\nrm -f "$1.fifo"; mkfifo "$1.fifo" || exit 97\n'
            f'head -c {cap} < "$1.fifo" > "$1" 2>/dev/null &\n'
            f'"$0" > "$1.fifo" 2>&1 < /dev/null; echo $?\n{epilogue}\nexit 0'
        )
        fired = threading.Event()

        def _kill() -> None:
            fired.set()
            try:
                self.container.kill()  # type: ignore[union-attr]
            except docker.errors.APIError:
                pass

        timer = threading.Timer(timeout, _kill)
        start = time.perf_counter()
        timer.start()
        out = b""
        try:
            _, out = self.container.exec_run(["sh", "-c", body, script, log_path], environment={"KEEPER": self.keeper})
        except docker.errors.APIError:
            if not fired.is_set():
                raise
        finally:
            timer.cancel()
        seconds = time.perf_counter() - start
        if fired.is_set():
            return ExecResult(None, True, seconds)
        first, _, rest = (out or b"").partition(b"\n")
        code = int(first) if first.strip().isdigit() else None
        return ExecResult(code, False, seconds, rest)

    def run_verifier(self, timeout: float) -> ExecResult:
        """Stop leftovers of the agent, delete any reward it wrote, run /tests/test.sh, print the reward file.

        `output` is then `<reward path>\n<bytes>` (json wins over txt, as in Harbor), or empty when neither exists.
        """
        prelude = _REAP + f"rm -rf {CONTAINER_VERIFIER_LOGS}; mkdir -p {CONTAINER_VERIFIER_LOGS}"
        epilogue = (
            f'for f in {CONTAINER_REWARD_JSON} {CONTAINER_REWARD_TXT}; do '
            f'if [ -f "$f" ]; then echo "$f"; head -c {MAX_READ} "$f"; break; fi; done'
        )
        return self.run_script("/tests/test.sh", f"{CONTAINER_VERIFIER_LOGS}/test-stdout.txt", timeout, prelude,
                               epilogue)

    def read_file(self, path: str, limit: int = MAX_READ) -> bytes | None:
        """First `limit` bytes of a regular file in the container, or None when there is none (works on tmpfs)."""
        assert self.container is not None
        code, out = self.container.exec_run(["sh", "-c", f'[ -f "$0" ] || exit 3; head -c {limit} "$0"', path])
        return None if code == 3 else out
