#!/usr/bin/env bash
# Compiles every ```swift block of README.md and of the DocC articles
# (Sources/Pocket/Pocket.docc/*.md) as a user would: each block becomes one
# file of the module DocSnippets, which imports the package's products as a
# user's module does, and that module is built on this package's own debug
# build (POCKET_DOC_SNIPPETS=1, see the end of Package.swift). Prints each failing block (file:line) with the
# compiler's errors, and exits 1; exits 0 when every block compiles.
#
#   scripts/check-doc-snippets.sh           build (warm: only the snippets and what changed in Pocket)
#   scripts/check-doc-snippets.sh --list    print the blocks it would compile
#
# How a block is compiled:
# - Its `import` lines are the file's imports, exactly as written, so a
#   block that uses `URL` or `ServiceGroup` must import what declares it. A block with no import
#   line is a fragment of its article and gets `import Foundation`,
#   `import Logging` and `import Pocket`.
# - The rest of the block is the body of an `async throws` function, so
#   statements, `try await` and local types all compile, and two blocks
#   never see each other's names.
# - A fragment may use the names a reader supplies, declared once for
#   every block (Context.swift below): `client`, `request`, `config`,
#   `logger`, and placeholders such as `secret`, `orderURL` or `Employee`.
#   A block that declares its own shadows them.
# - A Package.swift manifest excerpt (a block whose first line is
#   `// Package.swift`, or that starts with `.package(`) is not Swift of a
#   module and is skipped, as is a block right after a line
#   `<!-- doc-snippet: skip (why) -->` (keep those few; say why in it).
#
# The blocks are written to .build-snippets/Snippets (ignored by git); the
# build is the package's .build, so after `swift build` (scripts/test.sh)
# only the blocks are compiled.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/sanitizer.sh
ROOT="$PWD"
WORK="$ROOT/.build-snippets"
SNIPPETS="$WORK/Snippets"
LIST=0
[ "${1:-}" = "--list" ] && LIST=1

docs=(README.md Sources/Pocket/Pocket.docc/*.md)
rm -rf "$SNIPPETS"
mkdir -p "$SNIPPETS"

# Extract the blocks: one file each, named after its document and line.
python3 - "$SNIPPETS" "$LIST" "${docs[@]}" <<'PY'
import re, sys, os
out, listing, docs = sys.argv[1], sys.argv[2] == "1", sys.argv[3:]
fence = re.compile(r'^(\s*)```swift\s*$')
count = skipped = 0
for doc in docs:
    lines = open(doc, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = fence.match(lines[i])
        if not m:
            i += 1
            continue
        indent = len(m.group(1))
        j = i + 1
        body = []
        while j < len(lines) and not re.match(r'^\s*```\s*$', lines[j]):
            body.append(lines[j][indent:])
            j += 1
        start = i + 1  # the fence's line, 1-based
        prev = lines[i - 1].strip() if i > 0 else ""
        first = next((l.strip() for l in body if l.strip()), "")
        manifest = first.startswith("// Package.swift") or first.startswith(".package(")
        if prev.startswith("<!-- doc-snippet: skip") or manifest:
            skipped += 1
            if listing: print(f"skip  {doc}:{start}")
            i = j + 1
            continue
        imports = [l for l in body if re.match(r'^import \w+', l.strip())]
        rest = [l for l in body if l not in imports]
        if not imports:
            imports = ["import Foundation", "import Logging", "import Pocket"]
        name = re.sub(r'\W', '_', os.path.splitext(doc)[0].split("/")[-1]) + f"_{start}"
        with open(os.path.join(out, f"{name}.swift"), "w", encoding="utf-8") as f:
            f.write(f"// {doc}:{start}\n")
            f.write("\n".join(l.strip() for l in imports) + "\n\n")
            f.write(f"func snippet_{name}() async throws {{\n")
            # The block's own lines keep their numbers: line k of the block
            # is line (fence + k) of the document.
            f.write("\n".join(rest) + "\n}\n")
        count += 1
        if listing: print(f"build {doc}:{start}")
        i = j + 1
print(f"check-doc-snippets: {count} blocks to compile, {skipped} skipped", file=sys.stderr)
PY
[ "$LIST" = 1 ] && exit 0

cat >"$SNIPPETS/Context.swift" <<'EOF'
// The names the articles' fragments take from their reader: the client, the
// request and the configuration being built, and the values and helpers an
// example only names (a token, a URL, a model type, a progress bar). Never
// run: the blocks are compiled, not executed.
import Foundation
import Logging
import Pocket

nonisolated(unsafe) var config = PocketClient.Configuration()
let client = try! PocketClient()
nonisolated(unsafe) var request = try! PocketRequest("http://127.0.0.1:8080/")
let logger = Logger(label: "doc-snippets")
let task = client.downloadTask(request, to: URL(filePath: "/tmp/big.iso"))
let queue = PocketRequestQueue(client: client)
let requests: [PocketRequest] = []
let jwksRequest = request
let url = URL(string: "http://127.0.0.1:8080/")!, loginURL = url, orderURL = url, reportURL = url, issuesURL = url
let UN = "user", PW = "password", secret = "secret", saved = "token"
let projectId: Int? = 7
let json = Array(#"{"a":1}"#.utf8)
let lines = AsyncStream<Data> { $0.finish() }
func login() async throws -> String { "token" }

struct Writer { func write(contentsOf data: some DataProtocol) throws {} }
let output = Writer(), file = Writer()
struct Employee: Codable, Sendable { var id: Int }
struct IssuePage: Codable, Sendable { var total_count: Int }
struct Issue: Codable, Sendable { var id: Int; var subject: String }
struct Post: Codable, Sendable { var id: Int; var title: String }
struct Item: Codable, Sendable { var name = "pocket" }
let item = Item()
struct PagedProject: Codable, Sendable { var id: Int?; var title: String }
let projects = PocketPipeline(baseURL: url, client: client).pipe(PagedProject.self, name: "projects")
struct Metrics: Sendable { func record(_ name: String, _ state: Any) {} }
let metrics = Metrics()
struct Vault: Sendable { func credential(realm: String?) async throws -> PocketCredential? { nil } }
let vault = Vault()
struct Cache: Sendable { func store(_ data: Data) {} }
let cache = Cache()
final class ProgressBar: @unchecked Sendable { var value = 0.0 }
let bar = ProgressBar()
func show(_ text: String) {}
func report(_ error: any Error, _ status: Int?) {}
EOF

log="$WORK/build.log"
echo "check-doc-snippets: building (log: ${log#"$ROOT"/})" >&2
if POCKET_DOC_SNIPPETS=1 swift build --target DocSnippets ${SANITIZER_FLAGS[@]+"${SANITIZER_FLAGS[@]}"} >"$log" 2>&1; then
  echo "check-doc-snippets: every block compiles" >&2
  exit 0
fi

# Map each error back to its document and line.
python3 - "$log" "$SNIPPETS" <<'PY'
import re, sys, os
log, src = sys.argv[1], sys.argv[2]
seen = False
failed = set()
printed = set()
for line in open(log, encoding="utf-8", errors="replace"):
    m = re.match(r'^(/\S+?/\.build-snippets/Snippets/(\w+)\.swift):(\d+):(\d+): (error|warning): (.*)$', line.rstrip())
    if not m or m.group(5) != "error":
        continue
    path, name, lno, msg = m.group(1), m.group(2), int(m.group(3)), m.group(6)
    if name == "Context":
        print(f"Context.swift:{lno}: error: {msg}"); seen = True; continue
    text = open(os.path.join(src, name + ".swift"), encoding="utf-8").read().split("\n")
    doc, start = text[0][3:].rsplit(":", 1)
    # The block's body starts after the header, the imports, a blank line
    # and the function's line; map back by the code line's content.
    code = text[lno - 1].strip()
    doclines = open(doc, encoding="utf-8").read().split("\n")
    where = int(start)
    for k in range(int(start), min(len(doclines), int(start) + 400)):
        if doclines[k].strip() == code and code:
            where = k + 1; break
    key = f"{doc}:{where}: error: {msg}"
    if key in printed:
        continue
    printed.add(key)
    print(f"{key}\n    {code}")
    failed.add(f"{doc}:{start}")
    seen = True
if failed:
    print(f"check-doc-snippets: {len(failed)} block(s) do not compile: " + ", ".join(sorted(failed)))
if not seen:
    print(open(log, encoding="utf-8", errors="replace").read()[-4000:])
PY
exit 1
