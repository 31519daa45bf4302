# Sum hours per employee and ISO week (week computed by date -d; GNU date required).
NR > 1 {
  cmd = "date -d " $2 " +%G-W%V"; cmd | getline wk; close(cmd)
  h = int($4 * 4 + 0.5) / 4
  sum[$1 " " wk] += h
}
END { for (k in sum) printf "%s %.2f\n", k, sum[k] }
