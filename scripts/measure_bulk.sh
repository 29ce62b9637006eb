#!/usr/bin/env bash
# Bulk-scoring measurement (docs/deploy.md, "Measured"): 10,000 items from DailyDialog
# validation, written under a temporary folder (never into the repository), scored per model
# once uninterrupted and once SIGKILLed after >= 5,000 output lines and resumed; checks that
# the resumed output has every line once, in order, and is byte-identical to the first.
#
#   scripts/measure_bulk.sh [MODEL...]        (default: bleu4 emb-greedy length)
#   DATA=../shared/data WORK=/tmp/dialscore-bulk scripts/measure_bulk.sh bleu4
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DATA="${DATA:-${DIALSCORE_DATA_DIR:-$ROOT/../shared/data}}"
WORK="${WORK:-$(mktemp -d /tmp/dialscore-bulk.XXXXXX)}"
PY="${PY:-$ROOT/.venv/bin/python}"
export PYTHONPATH="$ROOT" DIALSCORE_INTRA_OP_THREADS="${DIALSCORE_INTRA_OP_THREADS:-1}"
(($#)) || set -- bleu4 emb-greedy length
mkdir -p "$WORK"
cd "$WORK"

"$PY" - "$DATA/corpora/dailydialog/validation/dialogues_validation.txt" <<'PYEOF'
"""10,000 items: (up to 3 turns of context, the next turn, the turn after as reference), then a
second pass with up to 5 turns of context and reply and reference swapped; 3 bad lines."""
import json
import sys

dialogues = [[t.strip() for t in line.split("__eou__") if t.strip()] for line in open(sys.argv[1], encoding="utf-8")]
items = []
for window, swap in ((3, False), (5, True)):
    for turns in dialogues:
        for k in range(1, len(turns) - 1):
            reply, reference = (turns[k + 1], turns[k]) if swap else (turns[k], turns[k + 1])
            items.append({"id": f"dd-val-{len(items)}", "context": turns[max(0, k - window):k],
                          "response": reply, "reference": reference})
items = items[:10000]
assert len(items) == 10000, len(items)
bad = {1000: "{not json", 5000: "", 9000: json.dumps({"context": [], "response": "x"})}
with open("in.jsonl", "w", encoding="utf-8") as out:
    for i, item in enumerate(items):
        out.write(bad.get(i, json.dumps(item)) + "\n")
PYEOF
echo "corpus: $WORK/in.jsonl ($(wc -l < in.jsonl) lines); $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"

lines() { if [[ -f "$1" ]]; then wc -l < "$1"; else echo 0; fi; }
for model in "$@"; do
    rm -f "full-$model.jsonl" "killed-$model.jsonl"
    echo "== $model: uninterrupted"
    "$PY" -m service.bulk --model "$model" --input in.jsonl --output "full-$model.jsonl" --progress-every 1000 \
        2>>"bulk-$model.log"
    echo "== $model: SIGKILL after >= 5,000 lines, then the same command again"
    "$PY" -m service.bulk --model "$model" --input in.jsonl --output "killed-$model.jsonl" --batch-size 64 \
        --progress-every 1000 2>>"bulk-$model.log" &
    pid=$!
    while (($(lines "killed-$model.jsonl") < 5000)) && kill -0 "$pid" 2>/dev/null; do sleep 0.02; done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    echo "lines when killed: $(lines "killed-$model.jsonl")"
    "$PY" -m service.bulk --model "$model" --input in.jsonl --output "killed-$model.jsonl" --progress-every 1000 \
        2>>"bulk-$model.log"
    "$PY" - "full-$model.jsonl" "killed-$model.jsonl" <<'PYEOF'
import json
import sys

full, resumed = ([json.loads(line) for line in open(path, encoding="utf-8")] for path in sys.argv[1:3])
assert [r["line"] for r in resumed] == list(range(1, 10001)), "lines missing, repeated or out of order"
print(f"{len(resumed)} output lines, each input line once, in order")
if full == resumed:
    print("killed + resumed output is identical to the uninterrupted one")
else:
    assert [(r["line"], "error" in r) for r in full] == [(r["line"], "error" in r) for r in resumed]
    diffs = [abs(a["score"] - b["score"]) for a, b in zip(full, resumed) if "score" in a]
    print(f"{sum(d > 0 for d in diffs)} of {len(diffs)} scores differ from the uninterrupted run, "
          f"by at most {max(diffs):.3g} (batches are cut differently after the resume)")
PYEOF
done
echo "outputs and logs in $WORK"
