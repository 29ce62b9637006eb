#!/usr/bin/env bash
# Checks a machine with an NVIDIA GPU before it serves: that ONNX Runtime gets the CUDA provider,
# that every model scores on it as on the CPU (both encoder precisions), and what it sustains.
#
#   PYTHON=/opt/venv/bin/python STORE=model_store bash scripts/gpu-check.sh [OUT_DIR]
#
# Needs onnxruntime-gpu (requirements-gpu.txt), CUDA 13 and cuDNN 9 libraries, pytest, and the
# fp32 encoder (`make encoder-fp32`) for the fp32 half. Writes its logs and JSON to OUT_DIR
# (default build/gpu-check). docs/gpu.md has what it measured on an H100. Knobs: TESTS=0 skips the
# parity tests, BENCH_WORKERS="1 2 4" the GPU benchmark's worker counts, CPU_BENCH=0 the CPU one
# (nproc/2 workers, the CPU's default precision), SECONDS_PER the seconds per scenario,
# LATENCY_SECONDS those of each one-request-at-a-time row (0: none). It stops with exit 2 where the
# service's packages do not import or ONNX Runtime gives no CUDA provider: nothing then runs on a GPU.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
PY=${PYTHON:-.venv/bin/python}
STORE=${STORE:-model_store}
OUT=${1:-build/gpu-check}
SECONDS_PER=${SECONDS_PER:-5}
LATENCY_SECONDS=${LATENCY_SECONDS:-2}
mkdir -p "$OUT"
# ORT_DISABLE_TELEMETRY: as `import service` sets it (service/__init__.py); the provider check below imports onnxruntime alone
export DIALSCORE_MODEL_STORE=$STORE PYTHONUNBUFFERED=1 ORT_DISABLE_TELEMETRY=${ORT_DISABLE_TELEMETRY:-1}

# The bench sends the servers' output nowhere: a package missing here would read only as "not ready".
"$PY" -c "import service.app, service.server.worker, benchmarks.bench" || {
    echo "gpu-check: the service does not import with $PY (requirements.txt and requirements-gpu.txt)" >&2; exit 2; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"

"$PY" - "$STORE" <<'EOF' | tee "$OUT/providers.txt"
import json, sys
import onnxruntime as ort
from service.config import load_settings
from service.artifacts.runtime import Runtime, RuntimeSettings
print("onnxruntime", ort.__version__, ort.get_device(), ort.get_available_providers())
settings = load_settings()
providers = Runtime(RuntimeSettings.from_settings(settings)).provider_list()
session = ort.InferenceSession(f"{sys.argv[1]}/minilm-l6/encoder-int8.onnx", providers=providers)
print("session providers:", session.get_providers())
print("CUDA provider options:", json.dumps(session.get_provider_options().get("CUDAExecutionProvider", {})))
sys.exit(0 if "CUDAExecutionProvider" in session.get_providers() else 3)
EOF
if [ "${PIPESTATUS[0]}" != 0 ]; then
    echo "gpu-check: ONNX Runtime gives no CUDA provider here (onnxruntime-gpu, CUDA 13 and cuDNN 9 libraries)" >&2
    exit 2
fi

test_rc=0
bench_rc=0
if [ "${TESTS:-1}" = 1 ]; then
    "$PY" -m pytest -p no:cacheprovider -s -rs tests/integration/test_cuda.py 2>&1 | tee "$OUT/test_cuda.txt"
    test_rc=${PIPESTATUS[0]}
fi

# GPU memory while serving: sampled every 0.5 s, the peak per run goes into the log.
bench() {  # label, then environment assignments and bench arguments
    local label=$1; shift
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 500 > "$OUT/mem-$label.txt" 2>/dev/null &
    local sampler=$!
    env "$@" --json "$OUT/bench-$label.json" 2>&1 | tee "$OUT/bench-$label.txt" || bench_rc=1
    kill "$sampler" 2>/dev/null
    echo "peak GPU memory used during $label: $(sort -n "$OUT/mem-$label.txt" | tail -1) MiB" | tee -a "$OUT/bench-$label.txt"
}
# The CPU run below is the comparison: no CPU baseline inside each bench, no encoder-library section.
TRIM=(--latency-seconds "$LATENCY_SECONDS" --encoder-texts 0 --baseline "")
for workers in ${BENCH_WORKERS-1 2 4}; do
    bench "cuda-fp32-w$workers" DIALSCORE_ENCODER_PRECISION=fp32 "$PY" -m benchmarks.bench --store "$STORE" \
        --workers "$workers" --clients 16 --seconds "$SECONDS_PER" "${TRIM[@]}"
done
if [ "${CPU_BENCH:-1}" = 1 ]; then
    workers=$(( $(nproc) / 2 ))
    bench "cpu-int8-w$workers" DIALSCORE_PROVIDERS=CPUExecutionProvider "$PY" -m benchmarks.bench --store "$STORE" \
        --workers "$workers" --clients 16 --seconds "$SECONDS_PER" "${TRIM[@]}"
fi
exit $(( test_rc || bench_rc ))
