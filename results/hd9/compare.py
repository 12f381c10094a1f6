"""Pair the held-out rows of today's tree and the rule's (results/hd9/RULE.md) and check the gate."""

import json
import sys


def rows(path):
    with open(path) as f:
        return {(r["d"], r["scale"], r["shape"], r["seed"]): r for r in map(json.loads, f) if r.get("d")}


def main(today_path, rule_path):
    today, rule = rows(today_path), rows(rule_path)
    print(
        "| d | alpha x | shape | seed | theta | released cells "
        "| ratio today -> rule | ARI today -> rule | load |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    bad = []
    for k in sorted(set(today) & set(rule)):
        a, b = today[k], rule[k]
        d, s, sh, seed = k
        load = f"{min(a['load'] + b['load']):.0f}-{max(a['load'] + b['load']):.0f}"
        print(
            f"| {d} | {s:g} | {sh} | {seed} | {a.get('theta', float('nan')):g} -> {b['theta']:g} | "
            f"{a.get('released', 0):,} -> {b['released']:,} | {a['ratio']:.2f}x -> {b['ratio']:.2f}x | "
            f"{a['ari']:.4f} -> {b['ari']:.4f} | {load} |"
        )
        if b["ari"] < a["ari"] - 0.01:
            bad.append((k, "ARI"))
        if b["ratio"] > 2.0:
            bad.append((k, "time"))
    print()
    print(f"{len(set(today) & set(rule))} pairs; gate failures: {bad or 'none'}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
