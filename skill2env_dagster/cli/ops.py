"""`skill2env ops`: day-to-day operations against a running Dagster webserver, through its GraphQL API.

Dagster's own CLI can backfill a job's partitions but cannot ask "which partitions are stale?" — after a prompt
edit that is exactly the question. These commands ask the webserver (the same answer the UI shows), and launch one
asset backfill covering exactly the stale (asset, partition) pairs, so untouched partitions are not re-run.
Plain HTTP: no dagster import, so it also works from a machine that only reaches the webserver.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from skill2env_dagster.reasons import InfraError, ReasonCode, Skill2EnvError

DEFAULT_URL = os.environ.get("S2E_DAGSTER_URL", "http://127.0.0.1:3000")
DEFAULT_LOCATION = "skill2env"

NODES_QUERY = """
query Nodes { assetNodes { assetKey { path } isPartitioned isMaterializable } }
"""

# Only partitioned assets may be asked for staleStatusByPartition (an unpartitioned one makes the server fail).
STALE_QUERY = """
query StaleByPartition($keys: [AssetKeyInput!]) {
  assetNodes(assetKeys: $keys) { assetKey { path } partitionKeys staleStatusByPartition }
}
"""

LAUNCH_BACKFILL = """
mutation Backfill($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message }
    ... on InvalidSubsetError { message }
    ... on UnauthorizedError { message }
  }
}
"""

RELOAD = """
mutation Reload($name: String!) {
  reloadRepositoryLocation(repositoryLocationName: $name) {
    __typename
    ... on WorkspaceLocationEntry { locationOrLoadError { __typename ... on PythonError { message } } }
    ... on PythonError { message }
    ... on RepositoryLocationNotFound { message }
  }
}
"""

BACKFILL_STATUS = """
query Status($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    __typename
    ... on PartitionBackfill { status numCancelable }
    ... on PythonError { message }
    ... on BackfillNotFoundError { message }
  }
}
"""

BACKFILL_DONE = {"COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"}


@dataclass(frozen=True)
class StalePartition:
    asset: str
    partition: str


def graphql(url: str, query: str, variables: dict | None = None, timeout: float = 60.0) -> dict:
    """POST one GraphQL request; an unreachable webserver or a GraphQL error is an InfraError naming the URL."""
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    req = urllib.request.Request(f"{url.rstrip('/')}/graphql", data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            payload = json.loads(resp.read())
    except urllib.error.HTTPError as e:
        detail = e.read().decode(errors="replace")[:2000]
        raise InfraError(ReasonCode.INTERNAL_ERROR, f"Dagster webserver at {url} answered {e.code}: {detail}") from e
    except (urllib.error.URLError, TimeoutError, json.JSONDecodeError) as e:
        raise InfraError(ReasonCode.INTERNAL_ERROR, f"Dagster webserver at {url} did not answer: {e}") from e
    if payload.get("errors"):
        raise InfraError(ReasonCode.INTERNAL_ERROR, f"GraphQL error from {url}: {payload['errors']}")
    return payload["data"]


def stale_partitions(url: str, assets: list[str] | None = None) -> list[StalePartition]:
    """Every (asset, partition) the webserver reports STALE; MISSING and FRESH partitions are left alone."""
    wanted = set(assets or [])
    keys = [n["assetKey"] for n in graphql(url, NODES_QUERY)["assetNodes"]
            if n["isPartitioned"] and n["isMaterializable"]
            and (not wanted or "/".join(n["assetKey"]["path"]) in wanted)]
    if not keys:
        return []
    found: list[StalePartition] = []
    for node in graphql(url, STALE_QUERY, {"keys": keys})["assetNodes"]:
        name = "/".join(node["assetKey"]["path"])
        statuses = node["staleStatusByPartition"] or []
        pairs = zip(node["partitionKeys"], statuses, strict=False)
        found += [StalePartition(name, k) for k, s in pairs if s == "STALE"]
    return found


def launch_backfill(url: str, stale: list[StalePartition], title: str = "stale partitions") -> str:
    """One asset backfill over exactly these (asset, partition) pairs; returns the backfill id."""
    by_asset: dict[str, list[str]] = {}
    for item in stale:
        by_asset.setdefault(item.asset, []).append(item.partition)
    params = {
        "title": title,
        "partitionsByAssets": [
            {"assetKey": {"path": asset.split("/")}, "partitions": {"ranges": [{"start": k, "end": k} for k in keys]}}
            for asset, keys in sorted(by_asset.items())
        ],
    }
    result = graphql(url, LAUNCH_BACKFILL, {"params": params})["launchPartitionBackfill"]
    if result["__typename"] != "LaunchBackfillSuccess":
        raise InfraError(ReasonCode.INTERNAL_ERROR, f"backfill refused: {result.get('message', result)}")
    return result["backfillId"]


def backfill_status(url: str, backfill_id: str) -> str:
    result = graphql(url, BACKFILL_STATUS, {"id": backfill_id})["partitionBackfillOrError"]
    if result["__typename"] != "PartitionBackfill":
        raise InfraError(ReasonCode.INTERNAL_ERROR, f"backfill {backfill_id}: {result.get('message', result)}")
    return result["status"]


def wait_backfill(url: str, backfill_id: str, timeout: float = 600.0, poll: float = 2.0) -> str:
    """Poll until the backfill reaches a terminal status (the daemon, not this process, runs it)."""
    deadline = time.monotonic() + timeout
    status = backfill_status(url, backfill_id)
    while status not in BACKFILL_DONE and time.monotonic() < deadline:
        time.sleep(poll)
        status = backfill_status(url, backfill_id)
    return status


def reload_location(url: str, location: str = DEFAULT_LOCATION) -> None:
    """Re-import the code location, so edited prompt templates become new code versions."""
    result = graphql(url, RELOAD, {"name": location})["reloadRepositoryLocation"]
    error = result.get("message") or (result.get("locationOrLoadError") or {}).get("message")
    if result["__typename"] != "WorkspaceLocationEntry" or error:
        raise InfraError(ReasonCode.INTERNAL_ERROR, f"reload of {location!r} failed: {error or result}")


def _guarded(cmd: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """An unreachable webserver or a refused mutation is a one-line JSON error and exit 2, not a traceback."""

    def run(args: argparse.Namespace) -> int:
        try:
            return cmd(args)
        except Skill2EnvError as e:
            print(json.dumps({"error": str(e), "reason": e.reason.value}), file=sys.stderr)
            return 2

    return run


def _cmd_stale(args: argparse.Namespace) -> int:
    stale = stale_partitions(args.url, args.asset)
    print(json.dumps([vars(s) for s in stale], indent=2))
    return 0


def _cmd_backfill_stale(args: argparse.Namespace) -> int:
    """One backfill per round; a refreshed asset can make its downstream partitions stale, hence --rounds."""
    if args.reload:
        reload_location(args.url, args.location)
    rounds: list[dict] = []
    for _ in range(max(1, args.rounds)):
        stale = stale_partitions(args.url, args.asset)
        if not stale:
            break
        entry: dict = {"stale": [vars(s) for s in stale], "backfill_id": None, "status": None}
        rounds.append(entry)
        if args.dry_run:
            break
        entry["backfill_id"] = launch_backfill(args.url, stale, args.title)
        if not (args.wait or args.rounds > 1):
            break
        entry["status"] = wait_backfill(args.url, entry["backfill_id"], timeout=args.timeout)
        if entry["status"] not in ("COMPLETED", "COMPLETED_SUCCESS"):
            break
    last = rounds[-1] if rounds else {"stale": [], "backfill_id": None, "status": None}
    print(json.dumps({**last, "rounds": rounds}, indent=2))
    return 1 if last["status"] not in (None, "COMPLETED", "COMPLETED_SUCCESS") else 0


def _cmd_reload(args: argparse.Namespace) -> int:
    reload_location(args.url, args.location)
    print(json.dumps({"reloaded": args.location}))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    ops = subparsers.add_parser("ops", help="operate a running Dagster webserver (stale partitions, backfills)")
    sub = ops.add_subparsers(dest="ops_command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--url", default=DEFAULT_URL, help="webserver URL (default $S2E_DAGSTER_URL or :3000)")
    common.add_argument("--location", default=DEFAULT_LOCATION, help="code location name in workspace.yaml")

    p = sub.add_parser("stale", parents=[common], help="list STALE (asset, partition) pairs as JSON")
    p.add_argument("--asset", action="append", help="only this asset (repeatable); default all")
    p.set_defaults(func=_guarded(_cmd_stale))

    p = sub.add_parser("backfill-stale", parents=[common], help="launch one backfill of every stale partition")
    p.add_argument("--asset", action="append", help="only this asset (repeatable); default all")
    p.add_argument("--reload", action="store_true", help="reload the code location first (after editing prompts)")
    p.add_argument("--dry-run", action="store_true", help="list what would be backfilled, launch nothing")
    p.add_argument("--wait", action="store_true", help="wait for the backfill; exit 1 unless it succeeds")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds to wait with --wait")
    p.add_argument("--rounds", type=int, default=1,
                   help="repeat (waiting each time) until nothing is stale, at most N backfills: a refreshed "
                        "asset can turn its downstream partitions stale")
    p.add_argument("--title", default="stale partitions", help="backfill title shown in the UI")
    p.set_defaults(func=_guarded(_cmd_backfill_stale))

    p = sub.add_parser("reload", parents=[common], help="reload the code location (picks up edited prompts)")
    p.set_defaults(func=_guarded(_cmd_reload))
