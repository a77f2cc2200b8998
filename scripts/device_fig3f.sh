#!/bin/bash
# Fig. 3F's rate sweep at CPU scale (`schug2024/fig3f-lr-cpu`) on a lent GPU machine, in one
# call of at most 10 minutes (issue 20, item 7): scripts/device_sweep.sh (its header says what
# travels and what comes back) with the runs that take hours on the 2-core CPU (hidden 256 /
# T = 64, about 2-3.3 h each) by default. Each run keeps one checkpoint (every 1,000 steps),
# and the newest of the (at most MAXCKPT) unfinished runs furthest along come back as
# $OUT/ckpt.tgz.00, .01, ..., so that `zoo sweep` with the same arguments resumes them here.
#
# Measured on an H200 (stop 71, docs/results.md): a run spends its first 70-80 s compiling and
# then trains 6,000 steps (six evaluations included) in 140 s alone, 185-205 s beside two to four
# others; its step-1,000 evaluation (compiled then) holds it a minute or more while the others
# train. The driver used to judge rates over its last 30-40 s window and stopped runs that could
# have finished (4 of 6 ended in two calls); it now measures each run's rate since it was first
# seen training and decides only once every run has one.
export SWEEP=${SWEEP:-schug2024/fig3f-lr-cpu}
export RUNS=${RUNS:-hidden256-T64-lr0.0003:0 hidden256-T64-lr0.0003:1 hidden256-T64-lr0.0003:2 \
hidden256-T64-lr0.003:0 hidden256-T64-lr0.003:1 hidden256-T64-lr0.003:2}
export KEEP=${KEEP:-1} CHECKPOINTS=${CHECKPOINTS:-newest}
exec bash "$(dirname "$0")/device_sweep.sh"
