#!/bin/bash
# Chosen runs of a `zoo sweep` on a lent GPU machine, in one call of at most 10 minutes: each
# run a process of its own sharing the GPU, under a deadline (scripts/device_runs.py stops the
# runs that could not finish, so that the rest do). scripts/device_lake.sh and
# scripts/device_fig3f.sh are this call with their sweep's defaults and measurements. The code
# travels as scripts/device_env.sh says (wheels in .whl/, the commit as a bundle in .devgit/):
#
#   git bundle create .devgit/zoo.bundle HEAD
#   pip wheel --no-deps --no-build-isolation . -w .whl && pip install -e ".[dev]"
#
# SWEEP: the sweep (required). RUNS: LABEL:SEED pairs, most wanted first. BUDGET: seconds of
# training (default 480). KEEP: checkpoints each run keeps (default: its own). EXTRA: more
# flags for the driver. RUNDIR: a fixed directory instead of a fresh one, so that a second call
# on the still-warm machine (it keeps /tmp) resumes the runs the first call's budget stopped,
# from their last checkpoint, with the same command. SEQUENTIAL=1: one `zoo sweep` process
# instead, the runs one after another (ONLY: labels, SEEDS), for BUDGET seconds.
#
# What comes back (a file of at most 16 MiB, 64 MiB in all): the run directories without
# their checkpoints as $OUT/runs.tgz, and with CHECKPOINTS=
#   all (or 1): the run directories with their checkpoints instead, as $OUT/runs.tgz.00, .01,
#     ... (join with `cat runs.tgz.* | tar xz`);
#   newest: the newest checkpoint of the (at most MAXCKPT, default 2) unfinished runs furthest
#     along, as $OUT/ckpt.tgz.00, .01, ... (join with `cat ckpt.tgz.* | tar xz`; driver only).
# Either way `zoo sweep` with the same arguments resumes those runs on any machine.
set -u
: "${SWEEP:?name the sweep: SWEEP=... bash scripts/device_sweep.sh}"
BUDGET=${BUDGET:-480}
OUT=${OUT:-/tmp/out}
CHECKPOINTS=${CHECKPOINTS:-}
case "$CHECKPOINTS" in
  "" | all | 1 | newest) ;;
  *) echo "CHECKPOINTS=$CHECKPOINTS: use all, newest or leave it empty" >&2; exit 2 ;;
esac
if [ -n "${SEQUENTIAL:-}" ]; then
  : "${SEEDS:?with SEQUENTIAL=1 name the seeds: SEEDS=\"0 1\"}" "${ONLY:?and the labels: ONLY=\"...\"}"
  if [ "$CHECKPOINTS" = newest ]; then
    echo "CHECKPOINTS=newest reads the driver's log: not with SEQUENTIAL=1 (use all)" >&2
    exit 2
  fi
else
  : "${RUNS:?name the runs: RUNS=\"LABEL:SEED ...\"}"
fi
mkdir -p "$OUT"
source "$(dirname "$0")/device_env.sh"
python3 -c "import jax; print(jax.__version__, jax.devices())" || exit 1
DIR=${RUNDIR:-$(mktemp -d /tmp/sweep.XXXXXX)}
mkdir -p "$DIR"
(nvidia-smi dmon -s um -d 15 > "$OUT/dmon.log" 2>&1 &)
if [ -n "${SEQUENTIAL:-}" ]; then
  mkdir -p "$DIR/parts/sequential"
  timeout "$BUDGET" python3 -m runs.cli sweep "$SWEEP" --out "$DIR/parts/sequential" \
    --seeds $SEEDS --only $ONLY --no-progress ${KEEP:+--keep $KEEP} \
    > "$DIR/parts/sequential/sweep.log" 2>&1
  echo "sequential sweep: exit $?" > "$DIR/driver.log"
else
  python3 scripts/device_runs.py "$SWEEP" --out "$DIR" --budget "$BUDGET" \
    ${KEEP:+--keep $KEEP} --runs $RUNS ${EXTRA:-}
fi
pkill -f "nvidia-smi dmon" 2>/dev/null
cp "$DIR/driver.log" "$OUT/"
case "$CHECKPOINTS" in
  all | 1)
    tar czf - -C "$DIR" parts | split -b 15M -d - "$OUT/runs.tgz."
    ;;
  newest)
    tar czf "$OUT/runs.tgz" --exclude=checkpoints -C "$DIR" parts
    # The driver's last lines read "LABEL:SEED: exit CODE, step N"; a run short of its steps
    # keeps its checkpoint, furthest along first.
    STEPS=$(python3 -c "from runs.presets import get_sweep; print(get_sweep('$SWEEP').runs[0].config.run.steps)")
    CKPTS=$(grep -E '^\[.*\] [^ ]+:[0-9]+: exit' "$DIR/driver.log" \
      | sed -E 's/^\[[^]]*\] ([^ ]+):([0-9]+): exit [^,]*, step ([0-9]+)$/\3 \1 \2/' \
      | awk -v steps="$STEPS" '$1 < steps && $1 > 0' | sort -rn | head -n "${MAXCKPT:-2}" \
      | awk '{print "parts/" $2 "-s" $3 "/" $2 "/seed_" $3 "/checkpoints"}')
    if [ -n "$CKPTS" ]; then
      tar czf - -C "$DIR" $CKPTS | split -b 15M -d - "$OUT/ckpt.tgz."
    fi
    ;;
  *)
    tar czf "$OUT/runs.tgz" --exclude=checkpoints -C "$DIR" parts
    ;;
esac
for log in "$DIR"/parts/*/sweep.log; do echo "== $log"; tail -n 2 "$log"; done
ls -la "$OUT"
