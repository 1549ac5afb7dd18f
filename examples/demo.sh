#!/usr/bin/env bash
# A first deployment on the embedded default (LanceDB + USE multilingual), in one command:
# ingest version 1 of the knowledge base, gate it (STOP, with the diagnosis), ingest the fix,
# gate again (ACCEPT), reports written. Run by `make demo` after the environment is installed.
set -uo pipefail
cd "$(dirname "$0")/.."
RW="${RW:-.venv/bin/recallwatch}"
KB=examples/kb
OUT=demo-out
STORE="lancedb://$OUT/kb?table=chunks"

rm -rf "$OUT" && mkdir -p "$OUT"
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
run() { step "$*"; "$@"; }

run "$RW" ingest "$KB/corpus_v1.jsonl" --store "$STORE" || exit 2

step "$RW" gate "$KB/golden.yaml" --store "$STORE" --policy "$KB/policy.yaml" --history "$OUT/history.db" --report "$OUT/v1"
"$RW" gate "$KB/golden.yaml" --store "$STORE" --policy "$KB/policy.yaml" \
  --history "$OUT/history.db" --report "$OUT/v1"
rc=$?
if [ "$rc" -ne 1 ]; then echo "demo: expected STOP (exit 1) on version 1, got exit $rc" >&2; exit 1; fi
echo "(exit $rc: STOP — the deployment is held)"

run "$RW" ingest "$KB/fix_v2.jsonl" --store "$STORE" || exit 2

step "$RW" gate "$KB/golden.yaml" --store "$STORE" --policy "$KB/policy.yaml" --history "$OUT/history.db" --report "$OUT/v2"
"$RW" gate "$KB/golden.yaml" --store "$STORE" --policy "$KB/policy.yaml" \
  --history "$OUT/history.db" --report "$OUT/v2"
rc=$?
if [ "$rc" -ne 0 ]; then echo "demo: expected ACCEPT (exit 0) on version 2, got exit $rc" >&2; exit 1; fi
echo "(exit $rc: ACCEPT — version 2 may be promoted)"

printf "\nReports: %s/v1 and %s/v2\n" "$OUT" "$OUT"; ls "$OUT/v2"
printf "\nNext: README.md, \"Try it on the example\": the history, the dashboard, your own retriever,\n"
printf "the operations, on this example (start with: . .venv/bin/activate)\n"
