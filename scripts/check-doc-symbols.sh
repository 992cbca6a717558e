#!/usr/bin/env bash
# Doc comments name only symbols that exist: fails, listing file:line, when
# a `///` line uses a name in code position (`Name(`, `Name.member`,
# `: Name`, `[Name]`, `Name?`) whose `Pocket`-prefixed form is a public type
# of the package and which is not itself declared anywhere in Sources/
# (so `Request(` where only `PocketRequest` exists). Quick Help and the
# symbol pages show these lines as they are written.
#
#   scripts/check-doc-symbols.sh
#
# A doc line that shows another framework's type of the same short name
# (Hummingbird's `Response`, a generated OpenAPI `Client`) is listed in
# `allowed` below with its reason.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 - <<'PY'
import os, re, sys
allowed = {
    # Hummingbird's Response, in a route handler's example
    ("Sources/PocketNIO/PocketClient+ByteBuffer.swift", "Response"),
    # the generated OpenAPI client's type
    ("Sources/PocketOpenAPI/PocketOpenAPITransport.swift", "Client"),
}
decl = re.compile(r'\b(?:struct|class|enum|protocol|actor|typealias)\s+([A-Z]\w*)')
files = [os.path.join(r, f) for r, _, fs in os.walk("Sources") for f in fs if f.endswith(".swift")]
declared, public = set(), set()
for p in files:
    text = open(p, encoding="utf-8").read()
    for line in text.split("\n"):
        if line.strip().startswith("//"):
            continue
        for m in decl.finditer(line):
            declared.add(m.group(1))
            if m.group(1).startswith("Pocket") and re.search(r'\bpublic\b', line):
                public.add(m.group(1))
bare = {n[6:] for n in public if len(n) > 6} - declared
code = re.compile(r'(\blet |\bvar |\bstruct |\bfunc |= |\btry |await |\breturn )')
bad = 0
for p in sorted(files):
    for i, line in enumerate(open(p, encoding="utf-8"), 1):
        s = line.strip()
        if not s.startswith("///"):
            continue
        for b in bare:
            if (p, b) in allowed:
                continue
            use = re.search(r'(?<![A-Za-z_.`-])' + re.escape(b) + r'(?=\(|\.[a-z]|\?|>|\]|\s*\{)', s)
            typed = code.search(s) and re.search(r'(?<=: )' + re.escape(b) + r'\b', s)
            if use or typed:
                print(f"{p}:{i}: `{b}` does not exist; did you mean `Pocket{b}`?  {s[:100]}")
                bad += 1
if bad:
    print(f"check-doc-symbols: {bad} doc comment line(s) name symbols that do not exist", file=sys.stderr)
    sys.exit(1)
PY
