"""Medians of paired.sh's per-round ratios to wrk (req/s, CPU per request,
p99): python3 summarize.py LOG"""
import collections, statistics, sys

wrk, rows, wrk_rows = {}, collections.defaultdict(list), []
for line in open(sys.argv[1]):
    if line.startswith("#") or not line.strip():
        continue
    fields = line.split()
    rnd, name = fields[0], fields[1]
    kv = dict(f.split("=", 1) for f in fields[2:])
    rps, cpu = float(kv["rps"]), float(kv["cpu"])
    p99 = float(kv["p99"]) if kv.get("p99") else None
    if name == "wrk":
        wrk[rnd] = (rps, cpu, p99)
        wrk_rows.append((rps, cpu, p99))
    elif rnd in wrk:
        rows[name].append((rps / wrk[rnd][0], cpu, p99, wrk[rnd][2], cpu / wrk[rnd][1]))
med = lambda xs: statistics.median(xs) if xs else float("nan")
print(f"{'wrk':12} req/s median {med([r for r, _, _ in wrk_rows]):.0f}  CPU µs/req median "
      f"{med([c for _, c, _ in wrk_rows]):.2f}  p99 µs median {med([p for _, _, p in wrk_rows if p is not None]):.1f}")
for name, v in rows.items():
    p99s = [p / w for _, _, p, w, _ in v if p is not None and w]
    print(f"{name:12} ratio median {med([r for r, *_ in v]):.3f}  CPU µs/req median {med([c for _, c, *_ in v]):.2f}"
          + f"  CPU ÷ wrk's median {med([x[4] for x in v]):.2f}"
          + (f"  p99 ÷ wrk's median {med(p99s):.2f}" if p99s else "")
          + "  rounds: " + " ".join(f"{r:.3f}" for r, *_ in v))
