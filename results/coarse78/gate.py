"""The gate of results/coarse78/RULE.md on two sweep runs (today, rule).

python results/coarse78/gate.py today.jsonl rule.jsonl
"""

import json
import statistics
import sys


def rows(path):
    with open(path) as f:
        return {(r["d"], r["shape"], r["seed"]): r for r in map(json.loads, f) if "error" not in r}


def main(today_path, rule_path):
    a, b = rows(today_path), rows(rule_path)
    keys = sorted(set(a) & set(b))
    print("| d | shape | seed | ARI today | ARI rule | change | ratio today | ratio rule |")
    print("|---|---|---|---|---|---|---|---|")
    drops, misses = [], []
    for k in keys:
        x, y = a[k], b[k]
        diff = y["ari"] - x["ari"]
        if diff < -0.01:
            drops.append(k)
        if y["ratio"] > 2 and x["ratio"] <= 2:
            misses.append(k)
        print(
            f"| {k[0]} | {k[1]} | {k[2]} | {x['ari']:.4f} | {y['ari']:.4f} | {diff:+.4f} | "
            f"{x['ratio']:.2f}x | {y['ratio']:.2f}x |"
        )
    ma = statistics.mean(a[k]["ari"] for k in keys)
    mb = statistics.mean(b[k]["ari"] for k in keys)
    print()
    print(f"{len(keys)} cases; mean ARI {ma:.4f} -> {mb:.4f} ({mb - ma:+.4f})")
    print(f"1. ARI drops > 0.01: {len(drops)} {drops} -> {'pass' if not drops else 'FAIL'}")
    print(f"2. new time misses (> 2x): {len(misses)} {misses} -> {'pass' if not misses else 'FAIL'}")
    print(f"3. mean ARI rises: {'pass' if mb > ma else 'FAIL'}")
    better = sum(b[k]["ari"] > a[k]["ari"] + 1e-9 for k in keys)
    worse = sum(b[k]["ari"] < a[k]["ari"] - 1e-9 for k in keys)
    print(f"better / worse / same: {better} / {worse} / {len(keys) - better - worse}")
    r = [b[k]["ratio"] / a[k]["ratio"] for k in keys]
    print(f"CPU ratio rule / today (median of per-case ratios): {statistics.median(r):.3f}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
