#!/usr/bin/env bash
# Brings the A/B worktrees to the current main: ab-new (branch ab) to main's HEAD, and both
# worktrees' bench/ to main's bench/ (AB_BENCH=head, the default: main's last commit; AB_BENCH=worktree: /work/main's working tree,
# uncommitted edits included), then applies /work/wt/ab-patch.py
# (the old side with its adaptations) and commits on the branches ab and ab-old.
#   /work/wt/ab-sync.sh && AB_N=3 /work/wt/ab-run.sh
set -eu
export PATH=/work/main/node_modules/.bin:$PATH
src=/work/main/bench
if [ "${AB_BENCH:-head}" = head ]; then
  src=$(mktemp -d) && git -C /work/main archive HEAD bench | tar -x -C "$src" && src=$src/bench
fi
stamp="main $(git -C /work/main rev-parse --short HEAD), bench from ${AB_BENCH:-head} at $(date -u +%H:%M)"

cd /work/wt/ab-new
git reset -q --hard main            # branch ab: main + the harness commit below
rsync -a --delete "$src"/ bench/
python3 /work/wt/ab-patch.py /work/wt/ab-new
mkdir -p scripts/ab && cp /work/wt/ab-run.sh /work/wt/ab-summary.mjs /work/wt/ab-patch.py /work/wt/ab-sync.sh scripts/ab/
git add -A bench scripts/ab && git commit -qm "ab: $stamp, with the A/B additions (AB-FIGURES, API CPU per op)"

cd /work/wt/ab-old
git reset -q --hard d03e356         # branch ab-old: the code before the tenant-keyed schema
rsync -a --delete "$src"/ bench/
python3 /work/wt/ab-patch.py --old /work/wt/ab-old
git add -A bench && git commit -qm "ab-old: d03e356 with $stamp, adapted to the old schema and lib"

# The bench files run must at least typecheck against each side's lib.
for w in ab-new ab-old; do
  errs=$(cd /work/wt/$w && tsc -p tsconfig.json --noEmit 2>&1 | grep -E '^bench/(run|core|city|support)\.ts' || true)
  if [ -n "$errs" ]; then echo "$errs"; echo "ab-sync: the $w bench does not typecheck"; exit 1; fi
done
echo "ab-sync: done ($stamp)"
