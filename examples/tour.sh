#!/usr/bin/env bash
# A tour of awf in a scratch git repo: three agents plan, build and review a fix. The
# reviewer stops without answering, so the run stops in review; a continue reuses the plan
# and the build and runs only the review. The agents are scripts (examples/agents), run by
# the `exec` runtime: no login, no cost.
#
# The scratch repo is made in the temp folder and removed when the tour ends; to keep it and
# look around afterwards, run it as `bash examples/tour.sh --keep` (or with AWF_TOUR_KEEP=1).
set -u
here="$(cd "$(dirname "$0")" && pwd)"
keep="${AWF_TOUR_KEEP:-}"
[ "${1:-}" = "--keep" ] && keep=1
scratch="$(mktemp -d "${TMPDIR:-/tmp}/awf-tour.XXXXXX")"
finish() {
  if [ -n "$keep" ]; then
    echo "The scratch repo is kept in $scratch; remove it with: rm -rf $scratch"
  else
    rm -rf "$scratch" && echo "Removed the scratch repo $scratch (bash examples/tour.sh --keep keeps it)."
  fi
}
trap finish EXIT
cd "$scratch"
say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
expect() {  # expect CODE WHAT: stop the tour when the last command did not exit CODE
  local code=$? want=$1
  echo "(exit $code: $2)"
  if [ "$code" -ne "$want" ]; then echo "tour: expected exit $want" >&2; exit 1; fi
}

# A small project with a bug: dates before 1970 parse as null.
git init -q
cat > dates.py <<'PY'
def parse_year(text):
    """The year of an ISO date such as 1969-07-20, or None when it has none."""
    if not text[:4].isdigit():
        return None
    year = int(text[:4])
    return year if year >= 1970 else None
PY
cat > test_dates.py <<'PY'
import unittest

from dates import parse_year


class ParseYear(unittest.TestCase):
    def test_recent(self):
        self.assertEqual(parse_year("2024-01-02"), 2024)

    def test_before_1970(self):
        self.assertEqual(parse_year("1969-07-20"), 1969)
PY
git add dates.py test_dates.py
git -c user.name=tour -c user.email=tour@example.invalid commit -q -m "Parse dates"
cp "$here/fix_issue.py" . && cp -r "$here/agents" .
echo "A scratch repo in $scratch, with dates.py, its tests, and the workflow fix_issue.py."

say 'REVIEWER_AWAY=1 awf run fix_issue.py --id 212 -- "#212: dates before 1970 parse as null"'
REVIEWER_AWAY=1 awf run fix_issue.py --id 212 -- "#212: dates before 1970 parse as null"
expect 3 "the run stopped in review: plan and implement are recorded"

say "awf run fix_issue.py --id 212 --continue"
awf run fix_issue.py --id 212 --continue
expect 0 "plan and implement were reused, not redone; only the reviewer was asked"

say "git log --oneline fix/212"
git log --oneline fix/212

say "ls .awf/runs/fix-issue/212"
ls .awf/runs/fix-issue/212
echo
echo "run.jsonl holds every attempt, stage and turn: jq -c 'select(.kind == \"turn\")' .awf/runs/fix-issue/212/run.jsonl"
