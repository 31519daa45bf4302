#!/bin/sh
# Thin curl wrapper for the local inventory API. Usage: inventory.sh low|reserve FILE|release
set -eu
BASE="${INVENTORY_BASE_URL:-http://localhost:8080/api/v1}"
case "$1" in
  low) curl -fsS "$BASE/items?below=${2:-5}" ;;
  reserve) curl -fsS -X POST -H 'Content-Type: application/json' --data @"$2" "$BASE/reservations" ;;
  release)
    curl -fsS "$BASE/reservations?expired=true" | python3 -c 'import json,sys; [print(r["id"]) for r in json.load(sys.stdin)]' |
      while read -r id; do curl -fsS -X DELETE "$BASE/reservations/$id"; done ;;
  *) echo "usage: $0 low [N] | reserve FILE | release" >&2; exit 2 ;;
esac
