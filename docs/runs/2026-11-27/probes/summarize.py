"""Medians of paired.sh's per-round ratios to wrk: python3 summarize.py LOG"""
import collections, statistics, sys

wrk, rows = {}, collections.defaultdict(list)
for line in open(sys.argv[1]):
    if line.startswith("#") or not line.strip():
        continue
    fields = line.split()
    rnd, name = fields[0], fields[1]
    rps, cpu = (float(f.split("=")[1]) for f in fields[2:4])
    if name == "wrk":
        wrk[rnd] = (rps, cpu)
    elif rnd in wrk:
        rows[name].append((rps / wrk[rnd][0], cpu))
for name, v in rows.items():
    print(f"{name:12} ratio median {statistics.median(r for r, _ in v):.3f}  CPU µs/req median "
          f"{statistics.median(c for _, c in v):.2f}  rounds: " + " ".join(f"{r:.3f}" for r, _ in v))
