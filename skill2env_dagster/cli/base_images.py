"""`skill2env base-images`: start the engine and registry if needed, build/push the approved bases, print pins."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from skill2env_dagster.gates.base_images import ensure_base_images
from skill2env_dagster.gates.registry import LOCAL_REGISTRY
from skill2env_dagster.reasons import Skill2EnvError

DOCKER_UP = Path(__file__).resolve().parents[2] / "scripts" / "docker-up.sh"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("base-images", help="build the approved base images into the local registry; print pins")
    p.add_argument("--state-dir", type=Path, help="where base-images.json is recorded (default $S2E_STATE_DIR or var)")
    p.add_argument("--registry", default=LOCAL_REGISTRY, help=f"registry to push to (default {LOCAL_REGISTRY})")
    p.add_argument("--rebuild", action="store_true", help="rebuild even when the registry has the images")
    p.add_argument("--no-docker-up", action="store_true", help="do not run scripts/docker-up.sh first")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not args.no_docker_up and DOCKER_UP.is_file():
        done = subprocess.run(["bash", str(DOCKER_UP)], stdout=sys.stderr)
        if done.returncode != 0:
            print("skill2env base-images: scripts/docker-up.sh failed", file=sys.stderr)
            return 2
    try:
        pins = ensure_base_images(args.state_dir, args.registry, rebuild=args.rebuild)
    except Skill2EnvError as e:
        print(f"skill2env base-images: {e}", file=sys.stderr)
        return 2
    print(json.dumps(pins, indent=2, sort_keys=True))
    return 0
