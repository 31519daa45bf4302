# 5xx count and ratio per minute from a combined-format access log.
{
  split($4, t, ":")            # [12/Mar/2024 HH MM SS
  minute = t[2] ":" t[3]
  total[minute]++
  if ($9 ~ /^5/) err[minute]++
}
END {
  for (m in total) printf "%s %d %d %.2f\n", m, total[m], err[m], err[m] / total[m] | "sort"
}
