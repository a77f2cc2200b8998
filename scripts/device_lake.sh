#!/bin/bash
# Lake's Tables 2-3 on a lent GPU machine, in one call of at most 10 minutes (issue 20, item 8):
# several runs at once, each a process of its own sharing the GPU, under a deadline
# (scripts/device_runs.py stops the runs that could not finish, so that the rest do). The code
# travels as scripts/device_env.sh says (wheels in .whl/, the commit as a bundle in .devgit/):
#
#   git bundle create .devgit/zoo.bundle HEAD
#   pip wheel --no-deps --no-build-isolation . -w .whl && pip install -e ".[dev]"
#
# Measured on an H100 (stop 33): ten meta seq2seq processes sharing the GPU trained about 0.6
# episodes/s each (6/s in all, against 54/s for one process alone), and took 1.5-4.5 minutes to
# compile; so run Lake one process at a time there: SEQUENTIAL=1 ONLY="labels" SEEDS="1 2".
#
# RUNS: LABEL:SEED pairs of `zoo sweep lake2019/tables2-3`, most wanted first. BUDGET: seconds
# of training. The run directories (checkpoints left out) come back as $OUT/runs.tgz, or with
# CHECKPOINTS=1 with their checkpoints as $OUT/runs.tgz.00, .01, ...
set -u
BUDGET=${BUDGET:-480}
SWEEP=${SWEEP:-lake2019/tables2-3}
RUNS=${RUNS:-augmentation-no-attention:1 augmentation-no-support-loss:1 permutation:1}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
source "$(dirname "$0")/device_env.sh"
# RUNDIR: a fixed directory instead of a fresh one, so that a second call on the still-warm
# machine (it keeps /tmp) resumes the runs the first call's budget stopped, from their last
# checkpoint (every 1,000 episodes), with the same command.
DIR=${RUNDIR:-$(mktemp -d /tmp/lake.XXXXXX)}
mkdir -p "$DIR"
(nvidia-smi dmon -s um -d 15 > "$OUT/dmon.log" 2>&1 &)
if [ -n "${SEQUENTIAL:-}" ]; then
  # One process, the runs one after another (ONLY: labels, SEEDS), for BUDGET seconds.
  mkdir -p "$DIR/parts/sequential"
  timeout "$BUDGET" python3 -m runs.cli sweep "$SWEEP" --out "$DIR/parts/sequential" --seeds $SEEDS \
    --only $ONLY --no-progress ${CHECKPOINTS:+--keep 1} > "$DIR/parts/sequential/sweep.log" 2>&1
  echo "sequential sweep: exit $?" > "$DIR/driver.log"
else
  python3 scripts/device_runs.py "$SWEEP" --out "$DIR" --budget "$BUDGET" --runs $RUNS ${EXTRA:-}
fi
pkill -f "nvidia-smi dmon" 2>/dev/null
cp "$DIR/driver.log" "$OUT/"
if [ -n "${CHECKPOINTS:-}" ]; then
  # With the checkpoints (so that a run the budget stopped can be resumed on another machine
  # with the same `zoo sweep` command), in parts of at most 15 MiB: the largest file that
  # comes back from a device call is 16 MiB, and 64 MiB in all, so the sequential sweep keeps
  # one checkpoint per run (--keep 1; a meta seq2seq checkpoint is about 43 MB). Join with
  # `cat runs.tgz.* | tar xz`.
  tar czf - -C "$DIR" parts | split -b 15M -d - "$OUT/runs.tgz."
else
  tar czf "$OUT/runs.tgz" --exclude=checkpoints -C "$DIR" parts
fi
for log in "$DIR"/parts/*/sweep.log; do echo "== $log"; tail -n 2 "$log"; done
ls -la "$OUT"
