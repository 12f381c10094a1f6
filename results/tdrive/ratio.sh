#!/bin/bash
# Interleaved rounds: per tree (before = base commit, after = this branch), the person-level fit of the
# folder (no --time) and the same with --stops 100m 5min; CPU = user+sys from /usr/bin/time -v.
# usage: ratio.sh DATA OUT ROUNDS
DATA=$1; OUT=$2; ROUNDS=${3:-3}; mkdir -p $OUT; cd $OUT
B=$(cat $DATA/box.txt); D=$DATA/taxi_log
R="--unit-from file --format csv --no-header --fields 4 --columns 2 3"
P="--geo --bounds $B --delta 1e-6 --epsilon 1 --max-cells-per-unit auto --eps 200m --min-samples 30 --no-png --seed 0 --no-progress"
for r in $(seq 1 $ROUNDS); do
  for tree in before after; do
    if [ $tree = before ]; then S=/tmp/tdrive_base/src; else S=/work/wt/tdrive/src; fi
    kinds="plain stops"; if [ $(( (r + ${#tree}) % 2 )) = 0 ]; then kinds="stops plain"; fi
    for k in $kinds; do
      X=""; [ $k = stops ] && X="--time 1 --stops 100m 5min"
      /usr/bin/time -v -o t.txt env PYTHONPATH=$S /work/main/.venv/bin/python -m dpdbscan fit $D $R $X $P --out-dir o_$tree --name $k > /dev/null 2>&1
      rc=$?
      cpu=$(awk -F': ' '/User time|System time/{s+=$2} END{print s}' t.txt)
      wall=$(awk -F': ' '/Elapsed/{print $2}' t.txt)
      rss=$(awk -F': ' '/Maximum res/{print $2}' t.txt)
      echo "$r $tree $k rc=$rc cpu=$cpu wall=$wall rss_kb=$rss load=$(cut -d' ' -f1 /proc/loadavg)" | tee -a runs.txt
    done
  done
done
