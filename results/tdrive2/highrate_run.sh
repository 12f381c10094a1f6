#!/bin/bash
# docs/places.md's commands on a high-rate Parquet file (tdrive_standin --interval 5 15 --no-folder).
# usage: highrate_run.sh DATA_DIR OUT_DIR N_UNITS   (each command under /usr/bin/time -v; `dpdbscan` on PATH is the tree under test)
set -u
DATA=$1; OUT=$2; N=$3
mkdir -p "$OUT"; cd "$OUT"
B=$(cat "$DATA/box.txt"); F="$DATA/traces.parquet"
R="--columns x y --unit taxi"
P="--geo --bounds $B --delta 1e-6 --epsilon 1 --max-cells-per-unit auto"
t() { name=$1; shift; /usr/bin/time -v -o "$name.time" "$@" > "$name.out" 2> "$name.err"; echo "$name rc=$? $(grep -E 'Elapsed|Maximum res' $name.time | sed 's/.*: //' | tr '\n' ' ') cpu=$(awk -F': ' '/User time|System time/{s+=$2} END{print s}' $name.time)"; }
t check dpdbscan check $F $R --time time --geo --bounds $B --eps 200m --min-samples 30 --delta 1e-6 --stops 100m 5min
t forecast dpdbscan forecast --geo --bounds $B --eps 200m --min-samples 30 --unit taxi --max-cells-per-unit 50 --delta 1e-6 --n-units-expected $N --time time --stops 100m 5min
t fit_traces dpdbscan fit $F $R $P --eps 200m --min-samples 30 --out-dir places --name traces --no-png --seed 0
t fit_stops dpdbscan fit $F $R --time time $P --eps 200m --min-samples 30 --stops 100m 5min --out-dir places --name stops --no-png --seed 0
t fit_stops_auto dpdbscan fit $F $R --time time $P --eps auto --min-samples auto --stops 100m 5min --out-dir places --name stops_auto --no-png --seed 0
t plot_stops dpdbscan plot places/stops.spans.json -o places/stops.png
t map_stops dpdbscan map places/stops.spans.json -o places/stops.html
