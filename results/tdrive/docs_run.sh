#!/bin/bash
# The commands of docs/places.md on a T-Drive-like folder, as a new user runs them.
# usage: docs_run.sh DATA_DIR OUT_DIR [N_UNITS]   (run under env -i; times each with /usr/bin/time -v)
set -u
DATA=$1; OUT=$2; N=${3:-10250}
mkdir -p "$OUT"; cd "$OUT"
B=$(cat "$DATA/box.txt"); D="$DATA/taxi_log"
R="--unit-from file --format csv --no-header --fields 4 --columns 2 3 --time 1"
P="--geo --bounds $B --delta 1e-6 --epsilon 1 --max-cells-per-unit auto"
t() { name=$1; shift; /usr/bin/time -v -o "$name.time" "$@" > "$name.out" 2> "$name.err"; echo "$name rc=$? $(grep -E 'Elapsed|Maximum res' $name.time | sed 's/.*: //' | tr '\n' ' ') cpu=$(awk -F': ' '/User time|System time/{s+=$2} END{print s}' $name.time)"; }
t check dpdbscan check $D $R --geo --bounds $B --eps 200m --min-samples 30 --delta 1e-6 --stops 100m 5min
t forecast dpdbscan forecast --geo --bounds $B --eps 200m --min-samples 30 --unit taxi --max-cells-per-unit 50 --delta 1e-6 --n-units-expected $N --time 1 --stops 100m 5min
t fit_traces dpdbscan fit $D ${R% --time 1} $P --eps 200m --min-samples 30 --out-dir places --name traces --no-png --seed 0
t fit_stops dpdbscan fit $D $R $P --eps 200m --min-samples 30 --stops 100m 5min --out-dir places --name stops --no-png --seed 0
t fit_stops_auto dpdbscan fit $D $R $P --eps auto --min-samples auto --stops 100m 5min --out-dir places --name stops_auto --no-png --seed 0
t plot_stops dpdbscan plot places/stops.spans.json -o places/stops.png
t plot_stops_auto dpdbscan plot places/stops_auto.spans.json -o places/stops_auto.png
t map_stops dpdbscan map places/stops.spans.json -o places/stops.html
