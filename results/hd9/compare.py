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


def summary(today_path, rule_path):
    """One row per (d, alpha scale, seed): the ranges over the shapes."""
    today, rule = rows(today_path), rows(rule_path)
    groups: dict = {}
    for k in sorted(set(today) & set(rule)):
        groups.setdefault((k[0], k[1], k[3]), []).append((today[k], rule[k]))
    print(
        "| d | alpha x | seed | shapes | theta | ratio today | ratio rule "
        "| ARI today | ARI rule | ARI change (min) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (d, s, seed), pairs in groups.items():
        a = [p[0] for p in pairs]
        b = [p[1] for p in pairs]

        def rng(rs, key, fmt):
            lo, hi = min(r[key] for r in rs), max(r[key] for r in rs)
            return format(lo, fmt) if lo == hi else f"{format(lo, fmt)}-{format(hi, fmt)}"

        change = min(y["ari"] - x["ari"] for x, y in pairs)
        print(
            f"| {d} | {s:g} | {seed} | {len(pairs)} | {a[0]['theta']:g} -> {b[0]['theta']:g} | "
            f"{rng(a, 'ratio', '.2f')}x | {rng(b, 'ratio', '.2f')}x | {rng(a, 'ari', '.4f')} | "
            f"{rng(b, 'ari', '.4f')} | {change:+.4f} |"
        )


if __name__ == "__main__":
    if sys.argv[1] == "--summary":
        summary(*sys.argv[2:4])
    else:
        main(*sys.argv[1:3])
