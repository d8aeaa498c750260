#!/usr/bin/env bash
# Train the embedded model on one CUDA GPU in under 10 minutes and export it to OUT.
#
#   bash scripts/train_gpu.sh DATA OUT [extra `python -m dllm_viz.train fit` flags ...]
#
# DATA: a folder with heldout.txt and either train.txt or nothing else when OUT/run already holds
#       tokenizer.json + tokens.pt (`python -m dllm_viz.train tokenize --data DATA --out OUT/run
#       --vocab-size 12288` on a CPU first: then only OUT/run travels, not the 32 MB of text).
# OUT:  receives run/ (checkpoint, log.jsonl, tokens) and the exported weights (model.safetensors,
#       config.json, tokenizer.json), the folder bench/model_quality.py --path reads.
# Environment: PYTHON (default python3), DEVICE (default cuda), COMPILE (default true: inductor; "eager" or "false" in tests),
#              MINUTES (default 8: a time limit that still checkpoints and exports),
#              AVERAGE (default 0: off; N > 0 keeps a snapshot at every checkpoint and also exports the
#              uniform average of the last N to OUT/averaged, `python -m dllm_viz.train average`).
# Flags after OUT override the recipe below (argparse keeps the last value of a repeated flag).
#
# The recipe: bf16 autocast, a compiled model body, packed windows (one token stream, no padding,
# only masked positions scored), 13.6M parameters (d_model 320, 8 layers: of the 8-layer bodies measured,
# the widest whose CPU re-decode stays in the playground budget, bench/cpu_speed.py --shapes), 12288-piece BPE.
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: bash scripts/train_gpu.sh DATA OUT [fit flags ...]" >&2
    exit 2
fi
DATA=$1
OUT=$2
shift 2
DEVICE=${DEVICE:-cuda}
COMPILE=${COMPILE:-true}
MINUTES=${MINUTES:-8}
PYTHON=${PYTHON:-python3}
AVERAGE=${AVERAGE:-0}
cd "$(dirname "$0")/.."
compile_flag=()
case "$COMPILE" in
    true) compile_flag=(--compile) ;;
    false) ;;
    *) compile_flag=(--compile "$COMPILE") ;;
esac
snapshot_flag=()
if [ "$AVERAGE" -gt 0 ]; then
    snapshot_flag=(--keep-snapshots)
fi
"$PYTHON" -m dllm_viz.train fit --data "$DATA" --out "$OUT/run" --device "$DEVICE" "${compile_flag[@]}" --bf16 \
    --vocab-size 12288 --d-model 320 --n-layers 8 --n-heads 5 --d-ff 832 --max-length 256 \
    --batch-size 128 --steps 6000 --warmup 300 --lr 1.5e-3 --min-lr-ratio 0.05 --prompt-fraction 0.5 \
    --eval-every 1000 --eval-windows 48 --ckpt-every 1000 --time-limit "$MINUTES" --no-progress --resume "${snapshot_flag[@]}" "$@"
"$PYTHON" -m dllm_viz.train export --run "$OUT/run" --out "$OUT"
if [ "$AVERAGE" -gt 0 ]; then
    mapfile -t last < <(ls "$OUT/run/snapshots"/step-*.pt | sort | tail -n "$AVERAGE")
    "$PYTHON" -m dllm_viz.train average --run "$OUT/run" --out "$OUT/run-averaged" "${last[@]}"
    "$PYTHON" -m dllm_viz.train export --run "$OUT/run-averaged" --out "$OUT/averaged"
fi
