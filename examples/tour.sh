#!/usr/bin/env bash
# A short tour of awf in a scratch folder: a run that stops, the command that goes on, a continue.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
scratch="$(mktemp -d)"
cd "$scratch"
cp "$here/release_notes.py" .
say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

say "awf run release_notes.py -- v2.0"
awf run release_notes.py -- v2.0
echo "(exit $?: the run stopped, waiting for a person)"

say "echo alice > APPROVED"
echo alice > APPROVED

say "awf run release_notes.py --id v2.0 --continue"
awf run release_notes.py --id v2.0 --continue
echo "(exit $?: draft was reused, not redone)"

say "ls $scratch/.awf/runs/release-notes/v2.0"
ls "$scratch/.awf/runs/release-notes/v2.0"
