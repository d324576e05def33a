"""The CUDA rows of ``rnn_models.py``'s models (``rnn_models.py --gpu``, and ``gpu.py --only
rnn``): every function takes the ``rnn_models`` module as ``models``, whose sizes the tests
make tiny, so that this module reads them when a row is built.
"""

from __future__ import annotations

import sys
import traceback

import numpy as np


def gpu_rows(models, gpu_module, seconds, compile_too, only=None):
    """The models' rows through ``benchmarks/gpu.py`` (``gpu_module``): its gradflow
    variants on ``gpu_module.BACKEND`` (``LSTM dyn`` also the static model's), and its
    PyTorch variants (``nn.GRU`` for GRU, plus the TF-GRU loop eager) on CUDA. A row
    that raises prints FAILED (``gpu.report``), and so does a model whose setup raises."""
    x, y = models.make_data()
    for name, model in models.MODELS.items():
        if only and name not in only:
            continue
        try:
            _model_rows(models, gpu_module, model, x, y, seconds, compile_too)
        except Exception as err:  # one failed model must not end the run
            print(f"{model.group:<14} {'(setting up)':<34} FAILED: {type(err).__name__}: "
                  f"{err}", flush=True)
            traceback.print_exc(limit=4, file=sys.stdout)


def _model_rows(models, gpu, model, x, y, seconds, compile_too):
    group, weights = model.group, model.init_weights()
    xd, yd = gpu.device_feeds(x, y)
    makers = [("", model.gradflow_step)]
    if model.reference is not None:
        makers.append((" static", model.reference))
    for suffix, make_step in makers:
        for row, (optimize, options) in gpu.gradflow_variants().items():
            gpu.report(group, row + suffix, lambda f=make_step, o=optimize, s=options:
                       f(weights, xd, yd, gpu.BACKEND, o, s)[0], seconds)
    torch = gpu._torch_cuda()
    if torch is None:
        return
    xt = torch.from_numpy(x.astype(np.int64)).cuda()
    yt = torch.from_numpy(y.astype(np.int64)).cuda()
    same = gpu.torch_variants(lambda: model.torch_model(weights), xt, yt, models.torch_loss,
                              compile_too and model.torch_peer is None)
    if model.torch_peer is not None:  # the speed peer's rows, and the same model eager
        peer = gpu.torch_variants(lambda: model.torch_peer(weights), xt, yt, models.torch_loss,
                                  compile_too)
        for row, make in peer.items():
            gpu.report(group, row.replace("PyTorch", model.gpu_peer_label), make, seconds)
        same = {k: v for k, v in same.items() if k == "PyTorch eager"}
    for row, make in same.items():
        gpu.report(group, row.replace("PyTorch", model.gpu_label), make, seconds)


def main_gpu(models, args, only):
    """``gpu_rows`` of ``models`` under ``gpu.py``'s header and columns; exits 0 without a
    CUDA GPU."""
    import gpu_common as gpu  # the GPU benchmarks' module, only where a GPU run is asked for

    status = gpu.begin("benchmarks/rnn_models.py --gpu")
    if status is not None:
        return status
    gpu_rows(models, gpu, args.seconds, not args.skip_compile, only)
    return 0
