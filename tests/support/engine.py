"""A private Docker engine for fault tests and benchmarks: a second `dockerd` of our own (its own socket,
--data-root, --exec-root, --pidfile, managed containerd and bridge; no iptables rules), which may be stopped and
restarted mid-gate without touching the machine's shared engine or anyone else's containers. It pulls the base
images from the local registry (127.0.0.1:5000) like any engine does, on the first build that needs them.

Why a bridge of its own and never `--bridge none`: a dockerd started with the bridge disabled deletes the link
named `docker0` of its network namespace (Moby's configureNetworking calls removeDefaultBridgeInterface), which is
the SHARED engine's bridge here; every default-network build and container on the machine then failed with "could
not find bridge docker0" until the shared engine was restarted (seen three times on 4 Dec 2026)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors


class EngineUnavailableError(RuntimeError):
    """dockerd is missing or did not answer: the caller skips (or fails under CI) with this."""


@dataclass
class PrivateEngine:
    root: Path
    log: Path | None = None

    @property
    def sock(self) -> Path:
        return self.root / "docker.sock"

    @property
    def url(self) -> str:
        return f"unix://{self.sock}"

    @property
    def pidfile(self) -> Path:
        return self.root / "docker.pid"

    @property
    def bridge(self) -> str:
        """This engine's own bridge link (<= 15 characters, from its root)."""
        return "s2e" + hashlib.sha1(str(self.root).encode()).hexdigest()[:10]

    @property
    def bridge_cidr(self) -> str:
        """Its address, given before dockerd starts: left to choose, dockerd takes 172.17.0.0/16 whenever the shared
        engine's docker0 is down or restarting, and the two engines' networks then collide."""
        return f"10.213.{int(hashlib.sha1(str(self.root).encode()).hexdigest()[10:14], 16) % 250 + 1}.1/24"

    def argv(self) -> list[str]:
        r = self.root
        (r / "daemon.json").write_text("{}\n")  # none of the machine's /etc/docker/daemon.json
        return ["dockerd", "--config-file", str(r / "daemon.json"), "-H", self.url, "--data-root", str(r / "data"),
                "--exec-root", str(r / "exec"), "--pidfile", str(self.pidfile), "--bridge", self.bridge,
                "--iptables=false", "--ip-forward=false", "--ip-masq=false", "--userland-proxy=false",
                "--cgroup-parent", f"/s2e-engine-{r.name}", "--shutdown-timeout", "5"]

    def client(self, timeout: int = 120) -> docker.DockerClient:
        return docker.DockerClient(base_url=self.url, timeout=timeout)

    def start(self, wait: float = 120.0) -> None:
        if shutil.which("dockerd") is None:
            raise EngineUnavailableError("no dockerd on PATH (scripts/docker-up.sh installs docker.io)")
        self.root.mkdir(parents=True, exist_ok=True)
        if subprocess.run(["ip", "link", "show", self.bridge], capture_output=True).returncode != 0:
            made = subprocess.run(f"ip link add name {self.bridge} type bridge && ip addr add {self.bridge_cidr} "
                                  f"dev {self.bridge}", shell=True, capture_output=True, text=True)
            if made.returncode != 0:
                raise EngineUnavailableError(f"could not create the private engine's bridge {self.bridge}: "
                                             f"{made.stderr.strip()}")
        with open(self.log or self.root / "dockerd.log", "ab") as out:
            subprocess.Popen(self.argv(), stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                self.client(timeout=5).ping()
                return
            except (docker.errors.DockerException, OSError):
                time.sleep(0.2)
        raise EngineUnavailableError(f"the private dockerd at {self.sock} did not answer in {wait:.0f}s "
                                f"(log: {self.log or self.root / 'dockerd.log'})")

    def pid(self) -> int | None:
        try:
            pid = int(self.pidfile.read_text().strip())
            os.kill(pid, 0)
            return pid
        except (OSError, ValueError):
            return None

    def stop(self, wait: float = 60.0) -> None:
        """SIGTERM, as a service manager restarting the engine does: dockerd stops every container it runs."""
        pid = self.pid()
        if pid is None:
            return
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and self.pid() == pid:
            time.sleep(0.1)
        if self.pid() == pid:
            os.kill(pid, signal.SIGKILL)
            time.sleep(1)

    def restart(self) -> None:
        self.stop()
        self.start()

    def remove(self) -> None:
        """Stop the engine and delete its data (its containers and images go with it)."""
        self.stop()
        subprocess.run(["umount", "-R", str(self.root / "exec")], capture_output=True)
        subprocess.run(["bash", "-c", f"grep -o ' {self.root}/[^ ]*' /proc/mounts | sort -r | xargs -r -n1 umount -l"],
                       capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)
        subprocess.run(["ip", "link", "delete", self.bridge], capture_output=True)


class RestartOnExec:
    """Restart `engine` once, as soon as it starts an exec whose command contains `needle` (the engine's own event
    stream is the trigger, never a delay): e.g. the Oracle's solve.sh, mid-gate. `restarted` is set when the
    engine answers again; `error` holds what went wrong in the watcher."""

    def __init__(self, engine: PrivateEngine, needle: str, times: int = 1) -> None:
        self.engine, self.needle, self.times = engine, needle, times
        self.restarts = 0
        self.restarted = threading.Event()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._watch, daemon=True, name="restart-on-exec")
        self._events = engine.client(timeout=600).events(decode=True, filters={"event": "exec_start"})

    def __enter__(self) -> RestartOnExec:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            self._events.close()
        self._thread.join(timeout=120)

    def _watch(self) -> None:
        try:
            while self.restarts < self.times:
                for event in self._events:
                    if self.needle in str(event.get("Action", "")):
                        break
                else:
                    return  # the stream was closed (__exit__)
                self.engine.restart()
                self.restarts += 1
                self.restarted.set()
                if self.restarts < self.times:
                    self._events = self.engine.client(timeout=600).events(decode=True,
                                                                           filters={"event": "exec_start"})
        except Exception as e:  # the stream ends with a connection error when closed by __exit__: not a fault
            if self.restarts < self.times:
                self.error = e
