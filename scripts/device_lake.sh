#!/bin/bash
# Lake's Tables 2-3 on a lent GPU machine, in one call of at most 10 minutes (issue 20, item 8):
# scripts/device_sweep.sh (its header says what travels and what comes back) with
# `zoo sweep lake2019/tables2-3` and three of its runs by default.
#
# Measured on an H100 (stop 33): ten meta seq2seq processes sharing the GPU trained about 0.6
# episodes/s each (6/s in all, against 54/s for one process alone), and took 1.5-4.5 minutes to
# compile; so run Lake one process at a time there: SEQUENTIAL=1 ONLY="labels" SEEDS="1 2".
# CHECKPOINTS=1 brings the run directories back with their checkpoints (each run keeps one; a
# meta seq2seq checkpoint is about 43 MB), checkpoints every 1,000 episodes.
export SWEEP=${SWEEP:-lake2019/tables2-3}
export RUNS=${RUNS:-augmentation-no-attention:1 augmentation-no-support-loss:1 permutation:1}
if [ -n "${CHECKPOINTS:-}" ]; then export KEEP=${KEEP:-1}; fi
exec bash "$(dirname "$0")/device_sweep.sh"
