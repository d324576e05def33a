"""What the GPU benchmarks share (``benchmarks/gpu.py``, ``gpu_transformer.py``,
``rnn_models.py``): timing a step and counting its kernels, printing a row, the
gradflow Session variants and the PyTorch ones of a model, the feeds on the device,
the machine's header. ``BACKEND`` is the gradflow rows' backend (the tests set
"numpy" to check the scripts on the CPU), ``TOP`` and ``ROWS`` are gpu.py's
``--top`` and ``--rows``."""

from __future__ import annotations

import inspect
import logging
import math
import re
import sys
import time
import traceback

import numpy as np

import gradflow as gf
from gradflow.backends.cupy import backend as cupy_backend

NO_GPU_EXIT = 0
BACKEND = "cupy"  # the tests run the gradflow rows on "numpy" to check the script itself
TOP = 0  # --top: how many of each row's kernels to list by GPU time
ROWS = ()  # --rows: regular expressions; a row runs if its name matches one (none: all)


def no_gpu_reason():
    """Why this machine cannot run the benchmark, or None."""
    return cupy_backend.unavailable_reason("cuda")


def sync():
    if BACKEND == "cupy":
        import cupy

        cupy.cuda.Device().synchronize()
    torch = _torch_cuda()
    if torch is not None:
        torch.cuda.synchronize()


def _torch_cuda():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


# -- measuring ---------------------------------------------------------------------------


def time_step(step, seconds, rounds=5):
    """``(ms per step, host CPU ms per step)``: the best of ``rounds`` synchronized rounds."""
    step()
    step()
    sync()
    t = time.perf_counter()
    step()
    sync()
    once = max(time.perf_counter() - t, 1e-6)
    n = max(1, int(seconds / rounds / once))
    best, host = math.inf, math.inf
    for _ in range(rounds):
        t, c = time.perf_counter(), time.process_time()
        for _ in range(n):
            step()
        cpu = time.process_time() - c
        sync()
        best = min(best, (time.perf_counter() - t) / n * 1e3)
        host = min(host, cpu / n * 1e3)
    return best, host


def kernels_per_step(step, n=5):
    """``(kernels and copies per step, [(GPU us per step, kernel name, launches per step)]
    most GPU time first)`` as
    CUPTI records them (torch.profiler), or None without PyTorch's CUDA build."""
    torch = _torch_cuda()
    if torch is None:
        return None
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    sync()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            step()
        sync()
    times = {}
    for e in prof.events():
        if e.device_type == DeviceType.CUDA:
            times.setdefault(e.name, []).append(e.time_range.elapsed_us())
    count = sum(len(t) for t in times.values()) / n
    return count, sorted(((sum(t) / n, name, len(t) / n) for name, t in times.items()),
                         reverse=True)


def report(group, name, make, seconds):
    """Build a step with ``make()`` (None: not available here) and print its row, and
    under it the ``TOP`` kernels with the most GPU time per step."""
    label = f"{group:<14} {name:<34}"
    if ROWS and not any(re.fullmatch(pattern, name) for pattern in ROWS):
        return None
    try:
        step = make()
        if step is None:
            print(f"{label} not available", flush=True)
            return None
        ms, host = time_step(step, seconds)
        profiled = kernels_per_step(step)
        kernels = "-" if profiled is None else f"{profiled[0]:.0f}"
        print(f"{label} {ms:9.3f} {kernels:>12} {host:9.3f}", flush=True)
        for us, kernel, launches in [] if profiled is None else profiled[1][:TOP]:
            print(f"    {us:9.1f} us {launches:6.0f}x  {kernel[:100]}", flush=True)
        return ms
    except Exception as err:  # one failed row must not end the run
        print(f"{label} FAILED: {type(err).__name__}: {err}", flush=True)
        traceback.print_exc(limit=4, file=sys.stdout)
        return None


# -- gradflow ---------------------------------------------------------------------------


def gradflow_variants():
    """``{row name: (optimize, session options)}`` of the gradflow rows this Session has."""
    params = inspect.signature(gf.Session).parameters
    rows = {f"gradflow {BACKEND}": (True, {})}
    if "capture" in params:
        rows[f"gradflow {BACKEND} capture=False"] = (True, {"capture": False})
    if "allow_tf32" in params:
        rows[f"gradflow {BACKEND} TF32"] = (True, {"allow_tf32": True})
    rows[f"gradflow {BACKEND} optimize=False"] = (False, {})
    return rows


def device_feeds(*arrays):
    """The feeds as arrays of the gradflow rows' backend (on the GPU: no copy per step)."""
    if BACKEND != "cupy":
        return list(arrays)
    import cupy

    return [cupy.asarray(a) for a in arrays]


# -- PyTorch ----------------------------------------------------------------------------


def torch_variants(make_model, x, y, loss_of, compile_too):
    """``{row name: maker}`` of the PyTorch rows of one model: each maker builds a fresh
    model (``make_model()`` on the GPU) and returns its step. ``loss_of(model, x, y)``."""
    torch = _torch_cuda()
    if torch is None:
        return {}

    def train_step(model, opt):
        def step():
            opt.zero_grad(set_to_none=True)
            loss_of(model, x, y).backward()
            opt.step()

        return step

    def plain(fused, compiled=False):
        model = make_model().cuda()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=fused)
        return train_step(torch.compile(model) if compiled else model, opt)

    def graphed():
        model = make_model().cuda()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True, capturable=True)
        warm_up = train_step(model, opt)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):  # on a side stream, as torch.cuda.graph asks
                warm_up()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)  # the gradients then live in the graph's pool
        with torch.cuda.graph(graph):
            loss_of(model, x, y).backward()
            opt.step()
        return graph.replay

    rows = {"PyTorch eager": lambda: plain(None), "PyTorch fused Adam": lambda: plain(True),
            "PyTorch CUDA graph": graphed}
    if compile_too:
        rows["torch.compile"] = lambda: plain(True, compiled=True)
    return rows


def _cross_entropy(model, x, y):
    import torch

    return torch.nn.functional.cross_entropy(model(x), y)


def header():
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    lines = [f"GPU: {name}",
             f"CUDA runtime {cupy.cuda.runtime.runtimeGetVersion()}, "
             f"driver {cupy.cuda.runtime.driverGetVersion()}",
             f"CuPy {cupy.__version__}, NumPy {np.__version__}, Python {sys.version.split()[0]}"]
    for module in ("nvmath", "torch", "jax"):
        try:
            version = __import__(module).__version__
        except ImportError:
            version = "not installed"
        lines.append(f"{module}: {version}")
    torch = _torch_cuda()
    if torch is not None:
        lines.append(f"torch CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}")
    lines.append(f"gradflow Session options: {', '.join(gradflow_variants())}")
    return "\n".join(lines)


def start_table():
    """Print the rows' column names, and have each plan's capture (or why it runs
    uncaptured) printed as a line under the row it ran in."""
    capture_log = logging.getLogger("gradflow.capture")
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("    (capture) %(message)s"))
    capture_log.addHandler(handler)
    capture_log.setLevel(logging.DEBUG)
    print(f"\n{'group':<14} {'implementation':<34} {'ms/step':>9} {'kernels/step':>12} "
          f"{'host ms':>9}", flush=True)


def begin(script):
    """Start a GPU benchmark: print the machine's header and the rows' columns and return
    None, or, without a CUDA GPU, say why ``script`` measured nothing and return the
    exit status (0: a machine without a GPU is no failure)."""
    reason = no_gpu_reason()
    if reason is not None:
        print(f"{script}: no CUDA GPU to measure on, nothing measured: {reason}")
        return NO_GPU_EXIT
    print(header())
    start_table()
    return None
