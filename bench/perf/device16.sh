#!/bin/bash
# Issue 50's measurements on a lent machine of more cores (16 here), in one
# device `run` of at most 10 minutes, after TensorFlow was carried there.
#
# Here, before the session's device calls (from the project root, with this
# commit checked in: the parts carry `git archive HEAD`):
#   echo /.dev/ >> .git/info/exclude; bash ../shared/tools/tf_wheel_parts.sh
# Then one device `run` per part, back to back (the machine goes back after
# 30 s idle): `mkdir -p /tmp/parts && cp .dev/pK/* /tmp/parts/`, with carry
# [".dev/pK"]; the last one with carry [".dev/pN", ".dev/small"] runs
#   bash .dev/small/install.sh && bash .dev/small/src/bench/perf/device16.sh
# with timeout_s 600. What comes back under $OUT: RESULTS.md (bench/RESULTS.md
# with the "N cores" sections added), results.tar (their JSON data: unpack it
# over bench/perf/results/ here) and device16.log. Copy the sections into
# bench/RESULTS.md here, then give the machine back.
#
# Order: the CNN and MLP under collective (harness, bare, keras at 1, 2, 4,
# 8 workers), then parameter servers (2 ps tasks; harness round robin, by
# size, bare at 1, 4, 8 trainers) for the wide model and the MLP, then
# bench.perf.ceiling at 8 workers. One round each, every command bounded,
# so that a slow one leaves the others' rows.
set -u
cd "$(dirname "$0")/../.."  # The carried source tree (.dev/small/src).
export PYTHONPATH=/tmp/site:$PWD TF_USE_LEGACY_KERAS=1 PYTHONUNBUFFERED=1
# WORKERS, PS_WORKERS and PY (the python) may be set: e.g. a 2-core check
# here in a scratch clone, WORKERS=1,2 PS_WORKERS=1 PY=.venv/bin/python.
OUT=${OUT:-/tmp/device16_out}
mkdir -p "$OUT"
LOG=$OUT/device16.log
WORKERS=${WORKERS:-1,2,4,8}
PS_WORKERS=${PS_WORKERS:-1,4,8}
PY=${PY:-python3}
{ date -u; nproc; uptime; "$PY" -c "import tensorflow as tf; print(tf.__version__)"; } >> "$LOG" 2>&1

bench() {  # bench SECONDS ARGS...: one bounded bench.perf.scaling command.
  local secs=$1; shift
  module bench.perf.scaling "$secs" "$@"
}

module() {  # module NAME SECONDS ARGS...: one bounded bench command.
  local name=$1 secs=$2; shift 2
  echo "== $(date -u +%T) python -m $name $*" >> "$LOG"
  # SIGINT: the bench's finally stops the cluster it started.
  timeout -s INT -k 10 "$secs" nice -n -20 "$PY" -m "$name" "$@" \
    >> "$LOG" 2>&1
  echo "== exit $?" >> "$LOG"
  # After each command, so that a run cut by the device's own limit still
  # returns every section written so far.
  cp bench/RESULTS.md "$OUT/RESULTS.md"
  tar -cf "$OUT/results.tar" -C bench/perf/results .
}

# About 490 s in all, left of the 600 after install.sh, and the ceiling's 80
# beyond: a command cut by its bound (or by the device's limit) writes no
# section (each writes its own at its end); those before it come back.
bench 200 --model=cnn --workers="$WORKERS" --runners=harness,bare,keras \
  --rounds=1 --timed_steps=100
bench 120 --model=mlp --workers="$WORKERS" --runners=harness,bare,keras \
  --rounds=1
bench 110 --strategy=ps --ps=2 --model=wide --workers="$PS_WORKERS" \
  --runners=harness,harness_by_size,bare --rounds=1 --warmup_steps=20 \
  --timed_steps=200
bench 60 --strategy=ps --ps=2 --model=mlp --workers="$PS_WORKERS" \
  --runners=harness,harness_by_size,bare --rounds=1 --warmup_steps=20 \
  --timed_steps=200

# Last, cut first when time runs short: the ceiling at the largest count
# (alone, side by side, the all-reduce alone, the bare loop; both models).
module bench.perf.ceiling 80 --workers="${WORKERS##*,}" --rounds=1 \
  --warmup_steps=20 --timed_steps=100

date -u >> "$LOG"
