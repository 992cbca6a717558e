#!/usr/bin/env python3
"""Writes a benchmark run's tables into docs/BENCHMARKS.md and README.md.

    scripts/bench-page.py RUN_DIR            # rewrite the generated blocks
    scripts/bench-page.py RUN_DIR --check    # exit 1 if a block would change
    scripts/bench-page.py RUN_DIR --partial  # keep the blocks of scenarios the
                                             # run lacks (each names its own run)

RUN_DIR is what scripts/bench-all.sh wrote (.bench-results/DATE/): one
NAME.txt per scenario, each ending in Markdown tables, and run.txt (the
date, the machine, the commit and each scenario's command). Every block
between `<!-- results: NAME -->` and `<!-- /results -->` in the page is
replaced by the tables of NAME.txt and a line saying when, where, on
which commit and with which command it was measured. The README's block
(`<!-- results: readme -->`) is a summary drawn from the peers and TLS
tables of the same run. Text outside the blocks is left as it is.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "BENCHMARKS.md"
README = ROOT / "README.md"
BLOCK = re.compile(r"(<!-- results: ([a-z-]+) -->\n)(.*?)(<!-- /results -->)", re.S)


def fail(message):
    print(f"bench-page: {message}", file=sys.stderr)
    sys.exit(2)


def read_run(run_dir):
    """run.txt: `key: value` lines (date, machine, commit, command NAME)."""
    meta, commands, loads = {}, {}, {}
    path = run_dir / "run.txt"
    if not path.exists():
        fail(f"{path} is missing: RUN_DIR must be a directory scripts/bench-all.sh wrote")
    for line in path.read_text().splitlines():
        key, _, value = line.partition(": ")
        if key.startswith("command "):
            commands[key[len("command "):]] = value.strip()
        elif key.startswith("load "):
            loads[key[len("load "):]] = value.split()
        elif key:
            meta[key] = value
    for key in ("date", "machine", "commit"):
        if key not in meta:
            fail(f"{path} has no '{key}:' line")
    meta["loads"] = loads
    return meta, commands


def measured(meta, names):
    """When, where, on which commit, and the load average around the runs."""
    values = [float(v) for n in names for v in meta["loads"].get(n, [])]
    load = ""
    if values:
        low, high = min(values), max(values)
        # Reported, not judged: the benchmark's own client and servers count
        # in it (see the page's Method), so it cannot tell other work apart.
        load = (f", load average {low:.1f}" if high - low < 0.05 else f", load average {low:.1f}–{high:.1f}")
    note = f" {meta['note']}" if meta.get("note") else ""
    return f"Measured {meta['date']} on {meta['machine']}{load}, commit `{meta['commit']}`.{note}"


def tables(text):
    """Every run of consecutive lines starting with `|`."""
    tables, current = [], []
    for line in text.splitlines():
        if line.startswith("|"):
            current.append(line.rstrip())
        elif current:
            tables.append(current)
            current = []
    if current:
        tables.append(current)
    return tables


def rows(table):
    """A Markdown table as dicts keyed by its header cells."""
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in table]
    header = cells[0]
    return [dict(zip(header, r)) for r in cells[2:]]


class Missing(Exception):
    """A scenario the run lacks (kept as it is under --partial)."""


def scenario_block(name, run_dir, meta, commands, partial=False):
    out = run_dir / f"{name}.txt"
    if not out.exists():
        if partial:
            raise Missing(name)
        fail(f"{out} is missing (was the scenario run? scripts/bench-all.sh --only {name})")
    found = tables(out.read_text())
    if not found and partial:
        raise Missing(name)
    if not found:
        fail(f"{out} has no Markdown table: the scenario failed or its script prints none")
    command = commands.get(name, f"scripts/bench-all.sh --only {name}")
    return "\n\n".join("\n".join(t) for t in found) + (
        f"\n\n{measured(meta, [name])} Reproduce:\n`{command}`\n")


def number(cell):
    cell = cell.replace(",", "").replace("*", "").replace("×", "").strip()
    try:
        return float(cell)
    except ValueError:
        return None


def pick(table_rows, c, client):
    for r in table_rows:
        if r.get("c") == c and r.get("client", "").lower().startswith(client):
            return r
    return None


def readme_block(run_dir, meta, commands):
    """Pocket beside wrk and its peers, from the peers and TLS tables."""
    def table_of(name):
        path = run_dir / f"{name}.txt"
        found = tables(path.read_text()) if path.exists() else []
        if not found:
            fail(f"{path} has no table: the README's summary needs it")
        return rows(found[-1])

    plain, tls = table_of("peers"), table_of("tls-peers")
    line = {}
    for c in ("64", "1"):
        p, w, l = pick(plain, c, "pocket"), pick(plain, c, "wrk"), pick(plain, c, "libcurl")
        if not (p and w and l):
            fail(f"the peers table lacks a wrk, libcurl or Pocket row at c={c}")
        rps, wrps, lrps = number(p["req/s"]), number(w["req/s"]), number(l["req/s"])
        cpu, wcpu = number(p["CPU µs/req"]), number(w["CPU µs/req"])
        peers = []
        for name, label in (("ahc", "AsyncHTTPClient"), ("urlsession", "URLSession")):
            r = pick(plain, c, name)
            if r and number(r["req/s"]):
                peers.append(f"{rps / number(r['req/s']):.1f}× {label}")
        tp, tw = pick(tls, c, "pocket"), pick(tls, c, "wrk")
        tls_ratio = f"{number(tp['req/s']) / number(tw['req/s']):.2f}×" if tp and tw else "–"
        line[c] = {
            "rps": f"{rps:,.0f} ({rps / wrps:.2f}×, {rps / lrps:.2f}×)",
            "p99": f"{p['p99 µs']} µs ({w['p99 µs']})",
            "cpu": f"{cpu / wcpu:.2f}×" if cpu and wcpu else "–",
            "tls": tls_ratio,
            "peers": ", ".join(peers),
        }
    return (
        "| | 64 connections | 1 connection |\n"
        "|---|---:|---:|\n"
        f"| requests/s (÷ wrk, ÷ libcurl) | {line['64']['rps']} | {line['1']['rps']} |\n"
        f"| p99 latency (wrk's) | {line['64']['p99']} | {line['1']['p99']} |\n"
        f"| client CPU per request ÷ wrk's | {line['64']['cpu']} | {line['1']['cpu']} |\n"
        f"| over TLS, requests/s ÷ wrk | {line['64']['tls']} | {line['1']['tls']} |\n"
        f"| requests/s ÷ the peers | {line['64']['peers']} | {line['1']['peers']} |\n"
        f"\n{measured(meta, ['peers', 'tls-peers'])} Reproduce:\n"
        f"`{commands.get('peers', 'scripts/bench-all.sh --only peers')}` and its TLS run.\n")


def rewrite(path, make):
    text = path.read_text()
    names = []

    def replace(m):
        try:
            block = make(m.group(2))
        except Missing:
            names.append(m.group(2) + " (kept: not in this run)")
            return m.group(0)
        names.append(m.group(2))
        return m.group(1) + block + m.group(4)

    return text, BLOCK.sub(replace, text), names


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    run_dir = pathlib.Path(argv[1])
    check = "--check" in argv[2:]
    partial = "--partial" in argv[2:]
    meta, commands = read_run(run_dir)
    changed = False
    for path, make in ((PAGE, lambda n: scenario_block(n, run_dir, meta, commands, partial)),
                       (README, lambda n: readme_block(run_dir, meta, commands)
                        if n == "readme" and not (partial and not (run_dir / "peers.txt").exists())
                        else scenario_block(n, run_dir, meta, commands, partial))):
        old, new, names = rewrite(path, make)
        if not names:
            fail(f"{path.relative_to(ROOT)} has no <!-- results: NAME --> block")
        if new != old:
            changed = True
            if not check:
                path.write_text(new)
        print(f"bench-page: {path.relative_to(ROOT)}: {', '.join(names)}"
              f"{' (would change)' if check and new != old else ''}", file=sys.stderr)
    return 1 if check and changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
