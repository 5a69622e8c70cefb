#!/usr/bin/env bash
# Calibrate one GPU, then time real training iterations of three Llama-style models (about 125M, 350M and
# 1.1B parameters; bf16, fused attention (SDPA), RMSNorm, SwiGLU, RoPE, grouped-query attention) against
# the performance model's predictions, from the profile and from the catalogue's spec sheet.
#
# Needs python3 with torch (CUDA), numpy; nothing else of the project's dependencies. Run from the
# repository root:   OUT=/some/dir bash scripts/device_calibrate.sh
# Writes into $OUT: profile.json (the device profile), calibrate.txt/.log, measure_<model>.json/.log,
# measure.json and measure.md (the table: device, model, parameters, predicted, measured, ratio, memory).
# Wall time: about 3 minutes on an H100/H200 (calibration bounded to 100 s, each model about 20 s); at most
# about 530 s (each step has a timeout, and no model starts past 420 s).
# A smoke test of the script on a CPU:
#   DEVICE=cpu DTYPES=fp32 PRECISION= SMALL=1 STEPS=1 WARMUP=1 bash scripts/device_calibrate.sh
set -u
OUT=${OUT:-device_out}
PY=${PYTHON:-python3}
DEVICE=${DEVICE:-cuda}
DTYPES=${DTYPES:-bf16}
PRECISION=${PRECISION---bf16}
SEQ=2048
STEPS=${STEPS:-10}
WARMUP=${WARMUP:-3}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
started=$(date +%s)
note() { echo "[$(($(date +%s) - started))s] $*"; }

(nvidia-smi; "$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)") \
    >"$OUT/environment.txt" 2>&1
note "calibrate (quick, $DTYPES, at most 100 s of benchmarks)"
timeout 160 "$PY" -m placement calibrate --device "$DEVICE" --quick --dtypes "$DTYPES" --budget 100 -o "$OUT/profile.json" \
    >"$OUT/calibrate.txt" 2>"$OUT/calibrate.log"
note "calibrate exit $?"
cat "$OUT/calibrate.txt"

# name layers hidden heads query-groups ffn micro-batch global-batch
MODELS=(
    "llama-125m 12 768 12 4 2048 4 8"
    "llama-350m 24 1024 16 8 2816 4 8"
    "llama-1.1b 16 2048 32 8 8192 4 8"
)
if [ -n "${SMALL:-}" ]; then
    MODELS=("tiny 2 128 4 2 256 2 4")
    SEQ=128
fi
for spec in "${MODELS[@]}"; do
    read -r name layers hidden heads groups ffn mbs gbs <<<"$spec"
    flags=(--num-layers "$layers" --hidden-size "$hidden" --num-attention-heads "$heads"
        --group-query-attention --num-query-groups "$groups" --ffn-hidden-size "$ffn"
        --seq-length "$SEQ" --max-position-embeddings "$SEQ" --vocab-size 32000
        --micro-batch-size "$mbs" --global-batch-size "$gbs" $PRECISION --use-flash-attn
        --swiglu --normalization RMSNorm --position-embedding-type rope --disable-bias-linear
        --untie-embeddings-and-output-weights --hidden-dropout 0 --attention-dropout 0)
    # with a profile, measure prints both predictions (the profile's and the catalogue's spec sheet)
    source=catalogue extra=()
    if [ -s "$OUT/profile.json" ]; then source=profile extra=(--profile "$OUT/profile.json"); fi
    if [ $(($(date +%s) - started)) -gt 420 ]; then note "skip $name: past 420 s"; continue; fi
    note "measure $name ($source)"
    timeout 120 "$PY" -m placement measure --device "$DEVICE" ${extra[@]+"${extra[@]}"} --steps "$STEPS" --warmup "$WARMUP" --json -- \
        "${flags[@]}" >"$OUT/measure_${name}_${source}.json" 2>"$OUT/measure_${name}_${source}.log"
    note "exit $? $(cat "$OUT/measure_${name}_${source}.json")"
done

"$PY" - "$OUT" <<'EOF'
import glob, json, os, sys
out = sys.argv[1]
rows = []
for path in sorted(glob.glob(os.path.join(out, "measure_*.json"))):
    try:
        m = json.load(open(path))
    except (OSError, ValueError):
        continue
    rows.append({"model": os.path.basename(path)[8:-5], **m})
json.dump(rows, open(os.path.join(out, "measure.json"), "w"), indent=1)
lines = ["| device | model | parameters | predicted by | predicted s | measured s | ratio | spec-sheet s | ratio |"
         " predicted GiB | measured GiB |", "|" + "---|" * 11]
for r in rows:
    cat = r.get("catalogue_predicted_seconds")
    cat_text = f"{cat:.4g} | {cat / r['measured_seconds']:.3f}" if cat else "- | -"
    lines.append(
        f"| {r['device']} | {r['model']} | {r['parameters'] / 1e6:.0f}M | {r['predicted_by']} | "
        f"{r['predicted_seconds']:.4g} | {r['measured_seconds']:.4g} | {r['ratio']:.3f} | {cat_text} | "
        f"{r['predicted_memory'] / 2**30:.2f} | {r['measured_memory'] / 2**30:.2f} |"
    )
open(os.path.join(out, "measure.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
note "done"
