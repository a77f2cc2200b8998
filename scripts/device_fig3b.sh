#!/bin/bash
# Fig. 3B at the paper's size on a lent GPU machine, in one call of at most 10 minutes
# (issue 20, item 9). The machine is bare: its python3 has JAX with CUDA, Equinox, Optax and
# Orbax; tyro, beartype and this package travel as wheels in .whl/, and the commit as a git
# bundle in .devgit/ (so that each run's history records the commit it was trained at):
#
#   git bundle create .devgit/zoo.bundle HEAD
#   pip wheel --no-deps --no-build-isolation . -w .whl     # plus tyro, beartype, ... (README)
#   pip install -e ".[dev]"    # building the wheel in the checkout broke the editable install once
#
# Two sweeps share the GPU, each run in a process of its own (--jobs): ONLY_LONG (default the
# linear hypernetwork with compositional support) to LONG steps (SEEDS_LONG, default 0 1,
# JOBS_LONG at once), and ONLY_SHORT (default the rest of the contrast) to SHORT steps
# (SEEDS_SHORT, default 0, JOBS_SHORT at once). Each call trains and clones
# into fresh temporary directories (a warm machine keeps /tmp), so a sweep never mixes runs of
# different lengths. Every sweep stops after BUDGET seconds; runs stopped there keep their
# evaluations (every 1,000 steps) and `zoo report` marks them unfinished. The run directories
# (checkpoints left out) come back as $OUT/runs.tgz.
set -u
LONG=${LONG:-8000}
SHORT=${SHORT:-3000}
BUDGET=${BUDGET:-470}
SWEEP=${SWEEP:-schug2024/fig3b}
OUT=${OUT:-/tmp/out}
CPUS_LONG=${CPUS_LONG:-0-7}
SEEDS_LONG=${SEEDS_LONG:-0 1}
SEEDS_SHORT=${SEEDS_SHORT:-0}
JOBS_LONG=${JOBS_LONG:-2}
ONLY_LONG=${ONLY_LONG:-linear-hypernet-compositional}
ONLY_SHORT=${ONLY_SHORT:-linear-hypernet-non-compositional anil-compositional anil-non-compositional}
JOBS_SHORT=${JOBS_SHORT:-3}
CPUS_SHORT=${CPUS_SHORT:-8-15}
RUNS=$(mktemp -d /tmp/runs.XXXXXX)
mkdir -p "$OUT"

source "$(dirname "$0")/device_env.sh"
python3 -c "import jax; print(jax.__version__, jax.devices())" || exit 1

(nvidia-smi dmon -s u -d 15 > "$OUT/dmon.log" 2>&1 &)
timeout "$BUDGET" taskset -c "$CPUS_LONG" python3 -m runs.cli sweep "$SWEEP" --out "$RUNS/long" \
  --seeds $SEEDS_LONG --steps "$LONG" --only $ONLY_LONG --jobs "$JOBS_LONG" \
  --no-progress > "$OUT/long.log" 2>&1 &
timeout "$BUDGET" taskset -c "$CPUS_SHORT" python3 -m runs.cli sweep "$SWEEP" --out "$RUNS/short" \
  --seeds $SEEDS_SHORT --steps "$SHORT" --only $ONLY_SHORT --jobs "$JOBS_SHORT" --no-progress \
  > "$OUT/short.log" 2>&1 &
wait
pkill -f "nvidia-smi dmon" 2>/dev/null
tar czf "$OUT/runs.tgz" --exclude=checkpoints -C "$RUNS" .
for log in "$RUNS"/*/logs/*.log; do echo "== $log"; tail -n 3 "$log"; done
ls -la "$OUT"
