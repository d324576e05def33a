#!/bin/sh
# Run gradflow's GPU tests and benchmarks/gpu.py on a CUDA machine that cannot download,
# and keep the logs (pytest_gpu.log, benchmark_gpu.log, versions.txt, install.log).
#   benchmarks/gpu_check.sh LOG_DIR [WHEEL_DIR]
# GPU_BENCH_ARGS (default "--seconds 0.5") go to benchmarks/gpu.py, which gets at most
# GPU_BENCH_TIMEOUT seconds (default 300).
# WHEEL_DIR (default .whl, a copy of ../shared/device-wheels carried into the checkout)
# holds the wheels the machine lacks (array-api-compat, array-api-strict, nvmath-python);
# they go to a private --target folder, gradflow itself is imported from the checkout.
set -u
LOGS=${1:?usage: benchmarks/gpu_check.sh LOG_DIR [WHEEL_DIR]}
WHEELS=${2:-.whl}
mkdir -p "$LOGS"
SITE=$(mktemp -d /tmp/gradflow-gpu-site.XXXXXX)
python3 -m pip install -q --no-index --no-deps --target "$SITE" "$WHEELS"/*.whl \
  > "$LOGS/install.log" 2>&1 || { echo "installing the wheels failed: $LOGS/install.log"; exit 1; }
export PYTHONPATH="$SITE:$PWD"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import cupy, sys; print('python', sys.version.split()[0], 'cupy', cupy.__version__, \
'cuda runtime', cupy.cuda.runtime.runtimeGetVersion())"; } > "$LOGS/versions.txt" 2>&1
python3 -m pytest -q -m gpu -p no:cacheprovider -rs tests > "$LOGS/pytest_gpu.log" 2>&1
status=$?
tail -3 "$LOGS/pytest_gpu.log"
# shellcheck disable=SC2086 - GPU_BENCH_ARGS is a list of arguments
timeout "${GPU_BENCH_TIMEOUT:-300}" python3 benchmarks/gpu.py ${GPU_BENCH_ARGS:---seconds 0.5} \
  > "$LOGS/benchmark_gpu.log" 2>&1
bench=$?
echo "benchmarks/gpu.py exited $bench: $LOGS/benchmark_gpu.log"
[ "$status" -ne 0 ] && exit "$status"
exit $bench
