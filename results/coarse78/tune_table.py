"""The tuning runs' table (results/coarse78/tune.jsonl: explore.py rows,
today = /work/wt/coarse78base, rule = this branch; seeds 61 and 73 only).

python results/coarse78/tune_table.py results/coarse78/tune.jsonl
"""

import json
import sys


def main(path):
    by = {}
    for line in open(path):
        if not line.startswith('{"tree"'):
            continue
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue
        row = r["row"]
        arm = "today" if r["tree"].endswith("base") else "rule"
        by.setdefault((row["d"], row["shape"], row["seed"], row["scale"]), {})[arm] = row
    print("| d | shape | seed | scale | ARI today | ARI rule | change | ratio today | ratio rule | theta | released |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for k, v in sorted(by.items()):
        if len(v) < 2:
            continue
        t, u = v["today"], v["rule"]
        print(
            f"| {k[0]} | {k[1]} | {k[2]} | {k[3]:g} | {t['ari']:.4f} | {u['ari']:.4f} | {u['ari'] - t['ari']:+.4f} | "
            f"{t['ratio']:.2f}x | {u['ratio']:.2f}x | {t['theta']:g} -> {u['theta']:g} | {t['released']:,} -> {u['released']:,} |"
        )


if __name__ == "__main__":
    main(sys.argv[1])
