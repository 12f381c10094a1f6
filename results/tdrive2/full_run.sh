#!/bin/bash
# The fixed-parameter stops releases of the T-Drive-like folder at MinPts 30 and 1,028 (what the fit's `fleet` line advises).
# usage: full_run.sh DATA_DIR OUT_DIR   (`dpdbscan` on PATH is the tree under test)
set -u
DATA=$1; OUT=$2
mkdir -p "$OUT"; cd "$OUT"
B=$(cat "$DATA/box.txt"); D="$DATA/taxi_log"
R="--unit-from file --format csv --no-header --fields 4 --columns 2 3 --time 1"
P="--geo --bounds $B --delta 1e-6 --epsilon 1 --max-cells-per-unit auto"
t() { name=$1; shift; /usr/bin/time -v -o "$name.time" "$@" > "$name.out" 2> "$name.err"; echo "$name rc=$? $(grep -E 'Elapsed|Maximum res' $name.time | sed 's/.*: //' | tr '\n' ' ') cpu=$(awk -F': ' '/User time|System time/{s+=$2} END{print s}' $name.time)"; }
for m in 30 1028; do
  t fit_stops_m$m dpdbscan fit $D $R $P --eps 200m --min-samples $m --stops 100m 5min --out-dir places --name stops_m$m --no-png --seed 0
done
