#!/usr/bin/env bash
# The same golden sets through eight re-chunkings of the example knowledge base: builds one LanceDB
# store per chunking (default embedder, USE multilingual), runs the gate with each golden set and
# prints one table row per run. Takes a few minutes (every store is embedded from scratch).
#
#   bash examples/kb/rechunk_verdicts.sh [WORKDIR]      # from the repository root
set -euo pipefail
KB="$(cd "$(dirname "$0")" && pwd)"
W="${1:-$(mktemp -d)}"
RW="${RECALLWATCH:-recallwatch}"
PY="${PYTHON:-python}"
mkdir -p "$W"
# version 2 itself, one chunk per line (later files replace earlier ids, as ingesting does)
"$PY" - "$KB" "$W/kb_v2.jsonl" <<'PYEOF'
import json, sys
kb, out = sys.argv[1], sys.argv[2]
chunks = {}
for name in ("corpus_v1.jsonl", "fix_v2.jsonl"):
    for line in open(f"{kb}/{name}", encoding="utf-8"):
        if line.strip():
            chunks[json.loads(line)["id"]] = line.rstrip("\n")
open(out, "w", encoding="utf-8").write("".join(c + "\n" for c in chunks.values()))
PYEOF
CHUNKINGS="cap cap600 overlap shift halves window merge sentences"
for name in $CHUNKINGS; do
  case "$name" in
    cap600) args=(--mode cap --cap 600) ;;
    *) args=(--mode "$name") ;;
  esac
  "$PY" "$KB/rechunk.py" "$KB/corpus_v1.jsonl" "$KB/fix_v2.jsonl" "$W/kb_$name.jsonl" "${args[@]}"
done
# the chunk-quote anchors, for comparison (the sentence ones ship as golden_anchors.yaml)
"$RW" golden migrate "$KB/golden.yaml" --from "$W/kb_v2.jsonl" --out "$W/golden_chunk.yaml" >/dev/null
echo "| chunking | golden set | verdict | mean quality | chunk recall | fact recall | failing |"
echo "|---|---|---|---|---|---|---|"
for chunking in v2 $CHUNKINGS; do
  store="lancedb://$W/store_$chunking?table=chunks"
  [ -d "$W/store_$chunking" ] || "$RW" ingest "$W/kb_$chunking.jsonl" --store "$store" >/dev/null
  n=$(wc -l < "$W/kb_$chunking.jsonl")
  sets="golden_chunk.yaml golden_anchors.yaml"
  [ "$chunking" = v2 ] && sets="golden.yaml $sets"
  for g in $sets; do
    file="$W/$g"; [ -f "$file" ] || file="$KB/$g"
    "$RW" gate "$file" --store "$store" --policy "$KB/policy.yaml" --format json \
      > "$W/gate_${chunking}_$g.json" || true
    "$PY" - "$W/gate_${chunking}_$g.json" "$chunking ($n chunks)" "$g" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
a = d["aggregate"]
fact = a.get("mean_fact_recall")
print(f"| {sys.argv[2]} | {sys.argv[3]} | {d['verdict']} | {a['mean_quality']:.1f} | "
      f"{a['mean_recall']:.3f} | {'—' if fact is None else f'{fact:.3f}'} | "
      f"{a['failed_queries']}/{a['n_queries']} |")
PYEOF
  done
done
