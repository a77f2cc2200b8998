#!/bin/bash
# Fig. 3F's rate sweep at CPU scale (`schug2024/fig3f-lr-cpu`) on a lent GPU machine, in one
# call of at most 10 minutes (issue 20, item 7): the runs that take hours on the 2-core CPU
# (hidden 256 / T = 64, about 3.3 h each), each in a process of its own sharing the GPU, under
# a deadline (scripts/device_runs.py stops the runs that could not finish, so that the rest
# do). The code travels as scripts/device_env.sh says (wheels in .whl/, the commit as a bundle
# in .devgit/):
#
#   git bundle create .devgit/zoo.bundle HEAD
#   pip wheel --no-deps --no-build-isolation . -w .whl && pip install -e ".[dev]"
#
# Measured on an H200 (stop 71, docs/results.md): a run spends its first 70-80 s compiling and
# then trains 6,000 steps (six evaluations included) in 140 s alone, 185-205 s beside two to four
# others; its step-1,000 evaluation (compiled then) holds it a minute or more while the others
# train. The driver used to judge rates over its last 30-40 s window and stopped runs that could
# have finished (4 of 6 ended in two calls); it now measures each run's rate since it was first
# seen training and decides only once every run has one.
#
# RUNS: LABEL:SEED pairs, most wanted first. BUDGET: seconds of training. Each run keeps one
# checkpoint (every 1,000 steps). The run directories (checkpoints left out) come back as
# $OUT/runs.tgz; the newest checkpoint of the (at most MAXCKPT) unfinished runs furthest along
# as $OUT/ckpt.tgz.00, .01, ... (join with `cat ckpt.tgz.* | tar xz`), so that `zoo sweep`
# with the same arguments resumes them on any machine.
set -u
BUDGET=${BUDGET:-480}
SWEEP=${SWEEP:-schug2024/fig3f-lr-cpu}
RUNS=${RUNS:-hidden256-T64-lr0.0003:0 hidden256-T64-lr0.0003:1 hidden256-T64-lr0.0003:2 \
hidden256-T64-lr0.003:0 hidden256-T64-lr0.003:1 hidden256-T64-lr0.003:2}
MAXCKPT=${MAXCKPT:-2}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
source "$(dirname "$0")/device_env.sh"
python3 -c "import jax; print(jax.__version__, jax.devices())" || exit 1
DIR=$(mktemp -d /tmp/fig3f.XXXXXX)
(nvidia-smi dmon -s um -d 15 > "$OUT/dmon.log" 2>&1 &)
python3 scripts/device_runs.py "$SWEEP" --out "$DIR" --budget "$BUDGET" --keep 1 --runs $RUNS \
  ${EXTRA:-}
pkill -f "nvidia-smi dmon" 2>/dev/null
cp "$DIR/driver.log" "$OUT/"
tar czf "$OUT/runs.tgz" --exclude=checkpoints -C "$DIR" parts
# The driver's last lines read "LABEL:SEED: exit CODE, step N"; a run short of its steps keeps
# its checkpoint, furthest along first.
STEPS=$(python3 -c "from runs.presets import get_sweep; print(get_sweep('$SWEEP').runs[0].config.run.steps)")
CKPTS=$(grep -E '^\[.*\] [^ ]+:[0-9]+: exit' "$DIR/driver.log" \
  | sed -E 's/^\[[^]]*\] ([^ ]+):([0-9]+): exit [^,]*, step ([0-9]+)$/\3 \1 \2/' \
  | awk -v steps="$STEPS" '$1 < steps && $1 > 0' | sort -rn | head -n "$MAXCKPT" \
  | awk '{print "parts/" $2 "-s" $3 "/" $2 "/seed_" $3 "/checkpoints"}')
if [ -n "$CKPTS" ]; then
  tar czf - -C "$DIR" $CKPTS | split -b 15M -d - "$OUT/ckpt.tgz."
fi
ls -la "$OUT"
