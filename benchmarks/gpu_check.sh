#!/bin/sh
# Run gradflow's GPU tests and benchmarks on a CUDA machine that cannot download, each
# phase under its own time limit, and keep the logs in LOG_DIR:
#   versions.txt, install.log
#   probe.log            benchmarks/cudnn_sdpa_probe.py: cuDNN's fused attention through
#                        its Python frontend (import, forward, backward, capture, timing)
#   pytest_gpu_new.log   the GPU-only test files (capture, generated kernels, random
#                        numbers, nvmath matmuls, the benchmark script, half types,
#                        mixed precision, run-time-length loops), one test at most
#                        GPU_TEST_TIMEOUT s (default 90); GPU_NEW_K: a pytest -k filter
#   benchmark_gpu.log    benchmarks/gpu.py with GPU_BENCH_ARGS (default "--seconds 0.5")
#   pytest_gpu.log       every other test marked gpu (the cupy backend's op tests)
#   pytest_attn.log      phase "attn": fused attention through cuDNN (float16 forward and
#                        backward against the unfused ops, a captured step) and the wide
#                        softmax kernel (tests/test_attention_gpu.py,
#                        tests/test_transformer_kernels_gpu.py), the layer-norm pair's
#                        kernels and the GELU ops' printed kernels against NumPy and the
#                        unfused ops (tests/test_layer_norm_gpu.py, the cupy cases of
#                        tests/test_layer_norm_pass.py and tests/test_gelu_pass.py)
#   pytest_cudnn.log     phase "cudnn": whole LSTM layers on cuDNN's RNN through ctypes
#                        (tests/test_cudnn_rnn_gpu.py: the layer builds, the char-LSTM
#                        trains as NumPy, one captured graph, kernels per step) and the
#                        CPU tests of its layout and pass (tests/test_cudnn_rnn.py)
#   benchmark_cudnn.log  phase "cudnn": benchmarks/gpu.py --only lstm rnn with
#                        GPU_CUDNN_BENCH_ARGS (default "--seconds 0.5 --skip-compile"):
#                        the rows "gradflow.cupy cuDNN RNN" and "... step kernels"
#   benchmark_attn.log   phase "attn": benchmarks/gpu_transformer.py with GPU_ATTN_BENCH_ARGS
#                        (default "--seconds 0.3 --skip-compile"): BERT- and GPT-2-style
#                        steps, FP32/TF32/fp16/bf16, PyTorch, JAX, tokens/s, share of peak
#
#   benchmarks/gpu_check.sh LOG_DIR [WHEEL_DIR]
#
# GPU_PHASES (default "probe new bench rest"; "attn" is the transformer phase, e.g.
# GPU_PHASES="probe attn"; "cudnn" the cuDNN RNN phase, GPU_CUDNN_TIMEOUT (180) for its
# tests, the same again for its rows) picks the phases, run in that order. Limits in seconds:
# GPU_PROBE_TIMEOUT (default 90), GPU_NEW_TIMEOUT (240), GPU_BENCH_TIMEOUT (150),
# GPU_REST_TIMEOUT (240), GPU_ATTN_TIMEOUT (120 for the tests, the same again for the rows). The op tests run in GPU_WORKERS
# pytest-xdist workers (default 8) when pytest-xdist is installed. WHEEL_DIR (default
# .whl, a copy of ../shared/device-wheels carried into the checkout) holds the wheels
# the machine lacks (array-api-compat, array-api-strict, nvmath-python,
# nvidia-cudnn-frontend); they go to a private --target folder, gradflow itself is
# imported from the checkout.
set -u
LOGS=${1:?usage: benchmarks/gpu_check.sh LOG_DIR [WHEEL_DIR]}
WHEELS=${2:-.whl}
PHASES=${GPU_PHASES:-probe new bench rest}
mkdir -p "$LOGS"
SITE=$(mktemp -d /tmp/gradflow-gpu-site.XXXXXX)
python3 -m pip install -q --no-index --no-deps --target "$SITE" "$WHEELS"/*.whl \
  > "$LOGS/install.log" 2>&1 || { echo "installing the wheels failed: $LOGS/install.log"; exit 1; }
export PYTHONPATH="$SITE:$PWD" PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import cupy, sys; print('python', sys.version.split()[0], 'cupy', cupy.__version__, \
'cuda runtime', cupy.cuda.runtime.runtimeGetVersion())"
  python3 -c "import nvmath; print('nvmath', nvmath.__version__)"; } > "$LOGS/versions.txt" 2>&1
cat "$LOGS/versions.txt"

has() { case " $PHASES " in *" $1 "*) return 0;; esac; return 1; }
status=0
note() { [ "$2" -ne 0 ] && status=$2; echo "$1 exited $2"; }

if has probe; then
  timeout "${GPU_PROBE_TIMEOUT:-90}" python3 benchmarks/cudnn_sdpa_probe.py > "$LOGS/probe.log" 2>&1
  note "cudnn_sdpa_probe.py: $LOGS/probe.log;" $?
fi

per_test=""
python3 -c "import pytest_timeout" 2>/dev/null && per_test="--timeout=${GPU_TEST_TIMEOUT:-90}"
NEW="tests/test_capture_gpu.py tests/test_cuda_kernels_gpu.py tests/test_cupy_random_gpu.py \
tests/test_nvmath_matmul_gpu.py tests/test_gpu_benchmark.py tests/test_half_precision_gpu.py \
tests/test_half_precision.py tests/test_mixed_precision.py tests/test_mixed_precision_training.py \
tests/test_mixed_precision_bf16.py tests/test_while_unroll_gpu.py tests/test_while_unroll.py \
tests/test_embedding_product.py"
if has new; then
  # shellcheck disable=SC2086 - NEW and per_test are lists of arguments
  timeout "${GPU_NEW_TIMEOUT:-240}" python3 -m pytest -q -m gpu -p no:cacheprovider -rs \
    $per_test -s -k "${GPU_NEW_K:-}" $NEW > "$LOGS/pytest_gpu_new.log" 2>&1
  note "GPU-only tests:" $?
  tail -3 "$LOGS/pytest_gpu_new.log"
fi

ATTN="tests/test_attention_gpu.py tests/test_transformer_kernels_gpu.py \
tests/test_layer_norm_gpu.py tests/test_layer_norm_pass.py tests/test_gelu_pass.py"
if has attn; then
  # shellcheck disable=SC2086 - ATTN and per_test are lists of arguments
  timeout "${GPU_ATTN_TIMEOUT:-120}" python3 -m pytest -q -m gpu -p no:cacheprovider -rs \
    $per_test -s $ATTN > "$LOGS/pytest_attn.log" 2>&1
  note "attention GPU tests:" $?
  tail -3 "$LOGS/pytest_attn.log"
  # shellcheck disable=SC2086 - GPU_ATTN_BENCH_ARGS is a list of arguments
  timeout "${GPU_ATTN_TIMEOUT:-120}" python3 benchmarks/gpu_transformer.py \
    ${GPU_ATTN_BENCH_ARGS:---seconds 0.3 --skip-compile} > "$LOGS/benchmark_attn.log" 2>&1
  note "benchmarks/gpu_transformer.py: $LOGS/benchmark_attn.log;" $?
fi

if has cudnn; then
  # shellcheck disable=SC2086 - per_test is a list of arguments
  timeout "${GPU_CUDNN_TIMEOUT:-180}" python3 -m pytest -q -p no:cacheprovider -rs \
    $per_test -s tests/test_cudnn_rnn_gpu.py tests/test_cudnn_rnn.py \
    > "$LOGS/pytest_cudnn.log" 2>&1
  note "cuDNN RNN tests:" $?
  tail -3 "$LOGS/pytest_cudnn.log"
  # shellcheck disable=SC2086 - GPU_CUDNN_BENCH_ARGS is a list of arguments
  timeout "${GPU_CUDNN_TIMEOUT:-180}" python3 benchmarks/gpu.py --only lstm rnn \
    ${GPU_CUDNN_BENCH_ARGS:---seconds 0.5 --skip-compile} > "$LOGS/benchmark_cudnn.log" 2>&1
  note "benchmarks/gpu.py --only lstm rnn: $LOGS/benchmark_cudnn.log;" $?
fi

if has bench; then
  # shellcheck disable=SC2086 - GPU_BENCH_ARGS is a list of arguments
  timeout "${GPU_BENCH_TIMEOUT:-150}" python3 benchmarks/gpu.py ${GPU_BENCH_ARGS:---seconds 0.5} \
    > "$LOGS/benchmark_gpu.log" 2>&1
  note "benchmarks/gpu.py: $LOGS/benchmark_gpu.log;" $?
fi

if has rest; then
  workers=""
  python3 -c "import xdist" 2>/dev/null && workers="-n ${GPU_WORKERS:-8}"
  ignore=""
  for f in $NEW; do ignore="$ignore --ignore=$f"; done
  if has attn; then for f in $ATTN; do ignore="$ignore --ignore=$f"; done; fi
  # shellcheck disable=SC2086 - workers, per_test and ignore are lists of arguments
  timeout "${GPU_REST_TIMEOUT:-240}" python3 -m pytest -q -m gpu -p no:cacheprovider -rs \
    $workers $per_test $ignore tests > "$LOGS/pytest_gpu.log" 2>&1
  note "other GPU tests:" $?
  tail -3 "$LOGS/pytest_gpu.log"
fi
exit $status
