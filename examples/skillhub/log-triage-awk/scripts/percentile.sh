#!/bin/sh
# Nearest-rank percentile of the last field (request time) of an access log.
# Usage: percentile.sh P FILE
p="$1"; f="$2"
awk '$NF != "-" {print $NF}' "$f" | sort -n | awk -v p="$p" '
  { v[NR] = $1 }
  END { if (NR == 0) exit 1; r = int((p / 100) * NR); if (r < (p / 100) * NR) r++; if (r < 1) r = 1; printf "%.3f\n", v[r] }'
