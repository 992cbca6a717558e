#!/usr/bin/env bash
# Fails when a tracked file narrates how Pocket was made instead of saying
# what it does: numbered or "this" periods of work (an ordinal before
# "session", "round" or "period"), work-period tags (an "s" and a number in a
# name) and tracker references (the word for a ticket and its number, or a
# bare hash and number). Prints file:line:text for each hit and
# exits 1; exits 0 when the tree is clean. Run by `make check` (target
# `wording`).
#
#   scripts/check-wording.sh            every file of `git ls-files`
#   scripts/check-wording.sh FILE...    only those files
#
# Words that are about the code keep working: a TLS session, a session
# cookie, a round trip, a benchmark's measurement rounds ("8 rounds of 3 s"),
# a soak's "round 1".
set -uo pipefail
cd "$(dirname "$0")/.."

ordinals='first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|\d+(?:st|nd|rd|th)|nth'
patterns=(
  # an ordinal, "this", "previous" or "next" before session/period/round
  "\\b(?:${ordinals}|this|previous|next) (?:work |working )?(?:sessions?|periods?|rounds?)\\b(?! (?:trips?|robin|cookies?|tickets?|resumption|cache))"
  # "the round's targets", "round start", "session 12"
  "\\bthe round's\\b|\\bround start\\b|\\bsessions? \\d+\\b"
  # work-period tags in names and text: bench-tls-s12.txt, (s15), s6 figures
  "[-_]s\\d{1,2}(?:-\\d+)?\\.[a-z]+\\b|\\(s\\d{1,2}\\)|\\bs\\d{1,2}(?:'s)? (?:run|runs|figures|numbers|measurements?|session)\\b"
  # tracker references: the word for a ticket, then its number
  "\\b(?:issues?|tickets?|pr|pull requests?)(?:\\s+#?|\\s*#)\\s*\\d{1,4}\\b"
  # a bare #19 (not a colour such as #222 after "color: ", not C's #if)
  "(?<![\\w&\"'#/:.=-])(?<!: )#\\d{1,4}\\b(?![0-9a-fA-F])"
)
# Lines that mean something else; each entry is a Perl regex a whole line
# must match to be skipped. Keep this short.
allow=(
  # MiddlewareTests: the attempt number a test middleware logs ("adapt A #2")
  '"(?:adapt|retry|observe) [A-Z] #\d'
  # Redmine test data: an issue's subject
  '"Issue \d{5,}"'
)

self=scripts/check-wording.sh
if [ "$#" -gt 0 ]; then files=("$@"); else mapfile -t files < <(git ls-files); fi

status=0
others=()
for f in "${files[@]}"; do [ "$f" != "$self" ] && [ -f "$f" ] && others+=("$f"); done

# File names: a work-period suffix in a path is narration too.
names=$(printf '%s\n' "${others[@]}" | grep -iP '(?:[-_]s\d{1,2}(?:-\d+)?(?:\.|/|$))|(?:session|round)[-_]?\d') || true
if [ -n "$names" ]; then
  printf '%s: file name carries a work-period tag\n' $names; status=1
fi

joined=$(IFS='|'; echo "${patterns[*]}")
allowed=$(IFS='|'; echo "${allow[*]}")
hits=$(printf '%s\0' "${others[@]}" | xargs -0 grep -nHIiP -- "$joined" 2>/dev/null | grep -vP -- "$allowed") || true
if [ -n "$hits" ]; then
  printf '%s\n' "$hits" | cut -c1-200
  status=1
fi
if [ "$status" -ne 0 ]; then
  echo "check-wording: say what the code does, in the present tense; date a figure by day and machine" >&2
fi
exit "$status"
