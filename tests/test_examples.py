"""The example scripts run end to end and reach their targets.

Each example is imported from ``examples/`` by path and its ``main(argv)`` is
called with ``--out`` in a temporary folder; the affine and XOR examples run
on every CPU backend available here (CuPy where there is a GPU).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from gradflow import backends

pytest.importorskip("matplotlib", reason="the examples need matplotlib (the checkout's "
                                          "extra: pip install -e '.[examples]')")

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load(name):
    """Import ``examples/NAME.py`` as a module (examples/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"gradflow_example_{name}",
                                                  EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def backend_names():
    """numpy, array_api_strict, torch (and cupy, marked gpu); unavailable ones skip with why."""
    reasons = backends.available()
    params = []
    for name in ["numpy", "array_api_strict", "torch", "cupy"]:
        marks = [pytest.mark.gpu] if name == "cupy" else []
        if reasons.get(name) is not None:
            marks.append(pytest.mark.skip(reason=f"{name}: {reasons[name]}"))
        params.append(pytest.param(name, marks=marks, id=name))
    return params


def assert_pngs(paths, out_dir):
    assert paths
    for path in paths:
        path = Path(path)
        assert path.parent == Path(out_dir)
        assert path.suffix == ".png"
        assert path.stat().st_size > 0
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("backend", backend_names())
def test_affine(backend, capsys):
    result = load("affine").main(["--backend", backend])
    np.testing.assert_array_equal(result["result"], [2.0, -1.0])
    assert result["backend"] == backend
    assert "[ 2. -1.]" in capsys.readouterr().out


def test_affine_takes_backend_from_environment(monkeypatch):
    monkeypatch.setenv("GRADFLOW_BACKEND", "array_api_strict")
    result = load("affine").main([])
    assert result["backend"] == "array_api_strict"
    np.testing.assert_array_equal(result["result"], [2.0, -1.0])


def test_affine_runs_as_a_script():
    env = dict(os.environ, GRADFLOW_BACKEND="numpy")
    done = subprocess.run([sys.executable, str(EXAMPLES / "affine.py")], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[ 2. -1.]"


@pytest.mark.parametrize("backend", backend_names())
def test_xor_tanh(backend, tmp_path, capsys):
    result = load("xor").main(["--backend", backend, "--out", str(tmp_path)])
    assert result["accuracy"] == 1.0
    assert result["loss"] < 0.05
    assert result["losses"][-1] < result["losses"][0]
    assert_pngs(result["outputs"], tmp_path)
    assert "accuracy 100%" in capsys.readouterr().out


def test_xor_same_numbers_on_every_backend(tmp_path):
    """The same seed gives the same training run on NumPy and array_api_strict."""
    xor = load("xor")
    args = ["--steps", "200", "--out", str(tmp_path)]
    a = xor.main(args + ["--backend", "numpy"])
    b = xor.main(args + ["--backend", "array_api_strict"])
    np.testing.assert_allclose(a["losses"], b["losses"], rtol=1e-4, atol=1e-6)


def test_xor_relu(tmp_path):
    result = load("xor").main(["--backend", "numpy", "--activation", "relu",
                               "--out", str(tmp_path)])
    assert result["accuracy"] == 1.0
    assert_pngs(result["outputs"], tmp_path)
    # each backend's run keeps its own pictures
    assert [Path(p).name for p in result["outputs"]] == ["xor_relu_region_numpy.png",
                                                         "xor_relu_loss_numpy.png"]


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_disk(activation, tmp_path):
    result = load("disk").main(["--backend", "numpy", "--activation", activation,
                                "--out", str(tmp_path)])
    assert result["accuracy"] >= 0.95
    assert result["test_accuracy"] >= 0.95
    assert_pngs(result["outputs"], tmp_path)


def test_perceptron(tmp_path, capsys):
    result = load("perceptron").main(["--backend", "numpy", "--out", str(tmp_path)])
    assert result["accuracy"] >= 0.99
    assert_pngs(result["outputs"], tmp_path)
    out = capsys.readouterr().out
    assert out.count("loss") >= 10  # the loss is printed every so often


def test_two_clusters_mlp(tmp_path):
    result = load("two_clusters_mlp").main(["--backend", "numpy", "--out", str(tmp_path)])
    assert result["accuracy"] >= 0.99
    assert_pngs(result["outputs"], tmp_path)


def small_mnist(monkeypatch):
    """Replace the MNIST loader with 64 training and 50 test images of random pixels."""
    import gradflow as gf

    def load_small(data_dir=None, download=None, verify=True):
        rng = np.random.default_rng(0)
        return gf.data.mnist.MnistData(
            (rng.integers(0, 256, (64, 28, 28), dtype=np.uint8),
             rng.integers(0, 10, 64).astype(np.uint8)),
            (rng.integers(0, 256, (50, 28, 28), dtype=np.uint8),
             rng.integers(0, 10, 50).astype(np.uint8)), "/small/mnist")

    monkeypatch.setattr(gf.data.mnist, "load", load_small)
    # The runs these tests compare bit for bit: with GRADFLOW_THREADS=auto the BLAS count
    # follows the load (and keeps to one thread just after a convolution), and OpenBLAS's
    # bits differ between one and two threads for some shapes (16 x 784 x 512)
    monkeypatch.setenv("GRADFLOW_THREADS", "2")
    from gradflow.backends.cpu import threads

    threads.reset()  # the fixed count from the first product on
    return load_small


@pytest.mark.parametrize("name", ["mnist_mlp", "mnist_cnn"])
def test_mnist_examples_checkpoint_and_resume(name, tmp_path, monkeypatch, capsys):
    pytest.importorskip("tqdm")
    module = load(name)
    common = ["--batch-size", "16", "--out", str(tmp_path / "out"), "--backend", "numpy"]
    small_mnist(monkeypatch)
    straight = module.main(common + ["--epochs", "2"])
    assert straight["epochs"] == [1, 2] and len(straight["losses"]) == 8
    assert Path(straight["png"]) == tmp_path / "out" / f"{name}_curves_numpy.png"
    ckpt = str(tmp_path / "ckpt")
    module.main(common + ["--epochs", "1", "--checkpoint-dir", ckpt])
    assert sorted(os.listdir(ckpt)) == ["checkpoint", "history.json", *ckpt_files("model-4")]
    capsys.readouterr()
    resumed = module.main(common + ["--epochs", "2", "--checkpoint-dir", ckpt, "--resume"])
    out = capsys.readouterr().out
    assert "MNIST read from /small/mnist" in out
    assert "resumed from" in out and "epoch 1:" not in out and "epoch 2:" in out
    assert sorted(os.listdir(ckpt)) == ["checkpoint", "history.json",
                                        *ckpt_files("model-4", "model-8")]
    # The history came back with the checkpoint: the curves go on from epoch 1.
    assert resumed["epochs"] == [1, 2] and len(resumed["losses"]) == 8
    assert resumed["losses"][:4] == straight["losses"][:4]
    if name == "mnist_mlp":  # no dropout: resuming is bit-exact
        assert resumed["accuracies"] == straight["accuracies"]
        assert resumed["losses"] == straight["losses"]
    else:  # dropout masks after a resume come from a fresh random stream
        assert resumed["accuracies"][0] == straight["accuracies"][0]
        assert 0 <= resumed["accuracies"][1] <= 1


def ckpt_files(*prefixes):
    """The files of the checkpoints ``prefixes``: each one's index, data file and meta graph."""
    return sorted(p + s for p in prefixes for s in (".data-00000-of-00001", ".index", ".meta"))


def test_a_backend_that_cannot_run_is_one_line_before_the_data_is_read(monkeypatch, capsys):
    """--backend (or $GRADFLOW_BACKEND) is checked with the arguments: exit status 2 and
    one line saying what is wrong and what runs here, no traceback, no MNIST read."""
    import gradflow as gf

    def no_data(*args, **kwargs):
        raise AssertionError("the data must not be read")

    monkeypatch.setattr(gf.data.mnist, "load", no_data)
    mlp = load("mnist_mlp")
    here = ", ".join(n for n, reason in backends.available().items() if reason is None)
    for argv, env, want in [
            (["--backend", "cuda"], None, "--backend cuda is not a backend (gradflow knows "
             "numpy, array_api_strict, torch, cupy; on an NVIDIA GPU use cupy)"),
            (["--backend", "Torch"], None, "did you mean torch?"),
            ([], "gpu", "$GRADFLOW_BACKEND=gpu is not a backend")]:
        if env is not None:
            monkeypatch.setenv("GRADFLOW_BACKEND", env)
        with pytest.raises(SystemExit) as info:
            mlp.main(argv)
        assert info.value.code == 2
        captured = capsys.readouterr()
        line, = captured.err.splitlines()
        assert re.match(r"\S+: error: ", line) and want in line  # (prog: error: ...)
        assert line.endswith(f". Available here: {here}")
    monkeypatch.delenv("GRADFLOW_BACKEND")
    reason = backends.available()["cupy"]
    if reason is not None:  # CuPy missing or no GPU: the reason, with what to install
        with pytest.raises(SystemExit) as info:
            load("char_rnn").main(["--backend", "cupy"])
        assert info.value.code == 2
        assert capsys.readouterr().err.split(": error: ", 1)[1] == (
            f"--backend cupy cannot run here: {reason}. Available here: {here}\n")


def test_a_bad_backend_as_a_script_exits_2_without_a_traceback(tmp_path):
    done = subprocess.run([sys.executable, str(EXAMPLES / "mnist_mlp.py"), "--backend", "cuda",
                           "--data-dir", str(tmp_path / "nothing here")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and "--backend cuda is not a backend" in done.stderr


def test_mnist_mlp_export_writes_the_file_it_names(tmp_path, monkeypatch, capsys):
    """--export without --checkpoint-dir: the model goes straight from the trained session
    to the file; every path the run prints exists afterwards. The progress bar says
    that the first steps compile."""
    pytest.importorskip("tqdm")
    pytest.importorskip("onnx")
    mlp = load("mnist_mlp")
    small_mnist(monkeypatch)
    path = tmp_path / "model.onnx"
    common = ["--batch-size", "16", "--epochs", "1", "--backend", "numpy",
              "--out", str(tmp_path / "out")]
    with pytest.raises(SystemExit) as info:  # a folder that is not there: before training
        mlp.main(common + ["--export", str(tmp_path / "no" / "model.onnx")])
    assert info.value.code == 2 and "its folder does not exist" in capsys.readouterr().err
    mlp.main(common + ["--export", str(path)])
    captured = capsys.readouterr()
    assert f"exported the model to {path} (ONNX" in captured.out
    named = [m.group(1) for m in re.finditer(r"^(?:saved|exported the model to) (\S+)",
                                             captured.out, re.MULTILINE)]
    assert named == [str(path), str(tmp_path / "out" / "mnist_mlp_curves_numpy.png")]
    assert all(Path(p).is_file() for p in [path, named[1]])
    assert "epoch 1/1 (compiling)" in captured.err and "epoch 1/1:" in captured.err


def test_data_kept_on_the_device_gives_the_same_batches_and_training(tmp_path, monkeypatch):
    """--data-on-device (the default with --backend cupy) gathers the same shuffled batches
    from the device copy: on numpy the training is bit for bit the host-batched one."""
    import gradflow as gf

    pytest.importorskip("tqdm")
    mlp = load("mnist_mlp")
    common = mlp.mnist_common
    x, y = np.arange(70 * 3, dtype=np.float32).reshape(70, 3), np.arange(70)
    with gf.Session(backend="numpy") as sess:
        got = list(common.device_batches(sess.backend, (x, y), 16, seed=5))
    want = list(gf.data.batches(x, y, batch_size=16, seed=5))
    assert len(got) == len(want) == 5
    assert all((g[0] == w[0]).all() and (g[1] == w[1]).all() for g, w in zip(got, want))
    small_mnist(monkeypatch)
    args = ["--batch-size", "16", "--epochs", "1", "--backend", "numpy",
            "--out", str(tmp_path)]
    host = mlp.main(args + ["--data-on-device", "no"])
    drawn = []
    gather = common.device_batches
    monkeypatch.setattr(common, "device_batches",
                        lambda *a: drawn.append(a) or gather(*a))
    device = mlp.main(args + ["--data-on-device", "yes"])
    assert len(drawn) == 1  # one epoch, its batches gathered from the device copy
    assert device["losses"] == host["losses"] and device["accuracies"] == host["accuracies"]


def test_mnist_logdir_writes_tensorboard_events(tmp_path, monkeypatch):
    """--logdir: the graph, training summaries every --summary-every steps and the test
    accuracy per epoch, read back with TensorBoard's own reader."""
    pytest.importorskip("tqdm")
    pytest.importorskip("tensorboardX")
    ea = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    small_mnist(monkeypatch)
    logdir = tmp_path / "logs"
    result = load("mnist_mlp").main(["--batch-size", "16", "--epochs", "2", "--backend", "numpy",
                                     "--out", str(tmp_path / "out"), "--logdir", str(logdir),
                                     "--summary-every", "3"])
    acc = ea.EventAccumulator(str(logdir), size_guidance={ea.SCALARS: 0, ea.HISTOGRAMS: 0})
    acc.Reload()
    tags = acc.Tags()
    assert tags["graph"] and any(n.name == "x" for n in acc.Graph().node)
    assert sorted(tags["scalars"]) == ["test/accuracy", "train/accuracy", "train/learning_rate",
                                       "train/loss"]
    # 4 steps per epoch; the loss of step s is the one the run returned for that step
    assert [(e.step, e.value) for e in acc.Scalars("train/loss")] == \
        [(s, float(np.float32(result["losses"][s]))) for s in (0, 3, 6)]
    assert [(e.step, e.value) for e in acc.Scalars("test/accuracy")] == \
        [(4, float(np.float32(result["accuracies"][0]))),
         (8, float(np.float32(result["accuracies"][1])))]
    lr = [e.value for e in acc.Scalars("train/learning_rate")]
    assert lr == pytest.approx([1e-3, 1e-3, 6e-4])  # x0.6 once per epoch
    assert sorted(tags["histograms"]) == [f"weights/{layer}/{var}" for layer in
                                          ("dense", "dense_1", "dense_2")
                                          for var in ("bias", "kernel")]
    assert acc.Histograms("weights/dense/kernel")[0].histogram_value.num == 784 * 512


# -- the curves, Ctrl-C, and the data folder of the MNIST examples -------------------------


def drawn_curves(monkeypatch):
    """Record what the examples hand to save_curves (still drawing the PNG)."""
    monkeypatch.syspath_prepend(str(EXAMPLES))
    import example_tools  # the module the examples import

    calls = []
    real = example_tools.save_curves

    def record(path, title, history, *args, **kwargs):
        calls.append((path, title, [list(p) for p in history.losses],
                      [dict(e) for e in history.evals]))
        real(path, title, history, *args, **kwargs)

    monkeypatch.setattr(example_tools, "save_curves", record)
    return calls


def test_mnist_resume_of_a_finished_run_keeps_the_curves(tmp_path, monkeypatch, capsys):
    pytest.importorskip("tqdm")
    mlp = load("mnist_mlp")
    small_mnist(monkeypatch)
    calls = drawn_curves(monkeypatch)
    args = ["--batch-size", "16", "--out", str(tmp_path / "out"), "--backend", "numpy",
            "--checkpoint-dir", str(tmp_path / "ckpt"), "--epochs", "1"]
    first = mlp.main(args)
    (path, title, losses, evals), = calls
    assert title.startswith("mnist_mlp: ") and "backend numpy" in title
    assert [s for s, _ in losses] == [1, 2, 3, 4]
    assert [(e["step"], e["epoch"]) for e in evals] == [(4, 1)]
    png = Path(first["png"]).read_bytes()
    capsys.readouterr()
    again = mlp.main(args + ["--resume"])
    out = capsys.readouterr().out
    assert "already complete" in out and "epoch 1:" not in out
    assert again["accuracies"] == first["accuracies"] and again["losses"] == first["losses"]
    assert calls[1][1:] == calls[0][1:]  # redrawn from the saved history, not empty
    assert Path(again["png"]).read_bytes() == png
    # Without the history beside the checkpoint, the PNG is left alone.
    os.remove(tmp_path / "ckpt" / "history.json")
    Path(first["png"]).write_bytes(b"keep me")
    capsys.readouterr()
    last = mlp.main(args + ["--resume"])
    out = capsys.readouterr().out
    assert "left as it was" in out and last["png"] is None and len(calls) == 2
    assert Path(first["png"]).read_bytes() == b"keep me"
    assert last["accuracies"] == first["accuracies"]  # evaluated from the checkpoint


def test_curves_png_with_one_epoch_is_sensible(tmp_path, monkeypatch):
    """One evaluation: integer epoch ticks, a marker, and a y range around the point."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tools = load("example_tools")
    history = tools.History([[s, 2.0 / s] for s in range(1, 11)],
                            [{"step": 10, "epoch": 1, "accuracy": 0.9731, "backend": "numpy"}])
    figures = []
    monkeypatch.setattr(plt, "close", figures.append)  # keep the figure to look at it
    tools.save_curves(tmp_path / "c.png", "model, backend numpy", history, 10)
    monkeypatch.undo()
    fig, = figures
    ax1, ax2 = fig.axes
    assert fig._suptitle.get_text() == "model, backend numpy"
    ticks = [t for t in ax2.get_xticks() if ax2.get_xlim()[0] <= t <= ax2.get_xlim()[1]]
    assert ticks == [0, 1]
    line, = ax2.get_lines()
    assert line.get_marker() == "o"
    lo, hi = ax2.get_ylim()
    assert lo < 97.31 < hi and hi - lo < 5
    assert ax1.get_xlim() == ax2.get_xlim()
    plt.close(fig)
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def interrupt_in_epoch(monkeypatch, epoch, after):
    """Make the training batches of ``epoch`` raise KeyboardInterrupt (as Ctrl-C
    would) after ``after`` batches; the MNIST examples shuffle epoch e with seed e."""
    import gradflow as gf

    real = gf.data.batches

    def batches(*args, **kwargs):
        for i, batch in enumerate(real(*args, **kwargs)):
            if kwargs.get("seed") == epoch and i == after:
                raise KeyboardInterrupt
            yield batch

    monkeypatch.setattr(gf.data, "batches", batches)


def run_interrupted(main, argv, capsys):
    """``main(argv)`` must exit with status 130; the one line it printed on stderr."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 130
    lines = [line for line in capsys.readouterr().err.splitlines()
             if line.strip() and "it/s" not in line and "s/it" not in line]
    assert len(lines) == 1, lines
    return lines[0]


def resume_args(line, script):
    """The arguments of the resume command in ``line``, checked to run ``script``."""
    command = shlex.split(line.split("resume with: ", 1)[1])
    assert command[0] == "python" and Path(command[1]).resolve() == EXAMPLES / script
    return command[2:]


def test_mnist_ctrl_c_in_training_keeps_the_checkpoint_and_says_how_to_resume(
        tmp_path, monkeypatch, capsys):
    pytest.importorskip("tqdm")
    mlp = load("mnist_mlp")
    small_mnist(monkeypatch)
    ckpt = tmp_path / "ckpt"
    args = ["--batch-size", "16", "--out", str(tmp_path / "out"), "--backend", "numpy",
            "--epochs", "3", "--checkpoint-dir", str(ckpt)]
    straight = mlp.main(args[:-2])
    interrupt_in_epoch(monkeypatch, epoch=2, after=2)
    line = run_interrupted(mlp.main, args, capsys)
    assert line.startswith("interrupted at epoch 2, step 6; the last checkpoint is "
                           f"{ckpt / 'model-4'} (epoch 1, step 4); resume with: python ")
    assert resume_args(line, "mnist_mlp.py") == args + ["--resume"]
    assert sorted(os.listdir(ckpt)) == ["checkpoint", "history.json", *ckpt_files("model-4")]
    monkeypatch.undo()
    small_mnist(monkeypatch)
    resumed = mlp.main(resume_args(line, "mnist_mlp.py"))
    assert resumed["accuracies"] == straight["accuracies"]  # restored exactly, curves whole
    assert resumed["losses"] == straight["losses"]


def test_mnist_ctrl_c_inside_a_save_leaves_the_last_checkpoint_whole(
        tmp_path, monkeypatch, capsys):
    """An interrupt raised in the middle of writing a checkpoint discards that save:
    no half-written file, the previous checkpoint stays the latest and restores."""
    pytest.importorskip("tqdm")
    from gradflow.train import saver

    mlp = load("mnist_mlp")
    small_mnist(monkeypatch)
    ckpt = tmp_path / "ckpt"
    args = ["--batch-size", "16", "--out", str(tmp_path / "out"), "--backend", "numpy",
            "--epochs", "2", "--checkpoint-dir", str(ckpt)]
    straight = mlp.main(args[:-2])
    real, replace = saver._write_checkpoint, os.replace
    calls = []

    def interrupted(src, dst):
        if str(dst).endswith(".index"):
            raise KeyboardInterrupt
        replace(src, dst)

    def write_then_interrupt(base, arrays):
        calls.append(1)
        if len(calls) == 2:  # the save after epoch 2: its data file in place, then Ctrl-C
            with monkeypatch.context() as patch:
                patch.setattr(os, "replace", interrupted)
                real(base, arrays)
        real(base, arrays)

    monkeypatch.setattr(saver, "_write_checkpoint", write_then_interrupt)
    line = run_interrupted(mlp.main, args, capsys)
    assert f"the last checkpoint is {ckpt / 'model-4'} (epoch 1, step 4)" in line
    assert sorted(os.listdir(ckpt)) == ["checkpoint", "history.json", *ckpt_files("model-4")]
    resumed = mlp.main(resume_args(line, "mnist_mlp.py"))
    assert resumed["accuracies"] == straight["accuracies"]
    assert resumed["epochs"] == [1, 2]  # the history written before the failed save is cut


def test_mnist_real_sigint_during_a_save_lets_the_save_finish(tmp_path, monkeypatch, capsys):
    """SIGINT arriving while a checkpoint is written is held back until it is complete."""
    pytest.importorskip("tqdm")
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        pytest.skip("SIGINT does not have Python's default handler here")
    from gradflow.train import saver

    mlp = load("mnist_mlp")
    small_mnist(monkeypatch)
    ckpt = tmp_path / "ckpt"
    args = ["--batch-size", "16", "--out", str(tmp_path / "out"), "--backend", "numpy",
            "--epochs", "3", "--checkpoint-dir", str(ckpt)]
    real = saver._write_checkpoint
    calls = []

    def signal_while_writing(base, arrays):
        calls.append(1)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGINT)
        real(base, arrays)

    monkeypatch.setattr(saver, "_write_checkpoint", signal_while_writing)
    line = run_interrupted(mlp.main, args, capsys)
    assert line.startswith(f"interrupted at epoch 2, step 8; the last checkpoint is "
                           f"{ckpt / 'model-8'} (epoch 2, step 8)")
    assert sorted(os.listdir(ckpt)) == ["checkpoint", "history.json",
                                        *ckpt_files("model-4", "model-8")]
    resumed = mlp.main(resume_args(line, "mnist_mlp.py"))
    assert resumed["epochs"] == [1, 2, 3]


def test_mnist_ctrl_c_without_checkpoint_dir(tmp_path, monkeypatch, capsys):
    pytest.importorskip("tqdm")
    mlp = load("mnist_mlp")
    small_mnist(monkeypatch)
    interrupt_in_epoch(monkeypatch, epoch=1, after=1)
    line = run_interrupted(mlp.main, ["--batch-size", "16", "--out", str(tmp_path),
                                      "--backend", "numpy"], capsys)
    assert line.startswith("interrupted at epoch 1, step 1; nothing was saved")
    assert "--checkpoint-dir" in line
    assert not list(tmp_path.iterdir())  # and no empty PNG either


def test_mnist_ctrl_c_runs_as_a_script_and_exits_130(tmp_path):
    """The real thing: SIGINT to ``python examples/mnist_mlp.py`` in a subprocess,
    reading a tiny MNIST folder through --data-dir."""
    import gzip

    from gradflow.data import mnist

    data = tmp_path / "data"
    data.mkdir()
    rng = np.random.default_rng(0)
    for name, shape in [("train-images-idx3-ubyte", (64, 28, 28)),
                        ("train-labels-idx1-ubyte", (64,)),
                        ("t10k-images-idx3-ubyte", (50, 28, 28)),
                        ("t10k-labels-idx1-ubyte", (50,))]:
        array = rng.integers(0, 10 if len(shape) == 1 else 256, shape, dtype=np.uint8)
        header = bytes([0, 0, 8, array.ndim]) + b"".join(d.to_bytes(4, "big") for d in shape)
        (data / (name + ".gz")).write_bytes(gzip.compress(header + array.tobytes()))
    # The tiny files are not the canonical ones: let the script skip the checksums.
    checks = tmp_path / "sitecustomize.py"
    checks.write_text("import gradflow.data.mnist as m\n"
                      "m.FILES = dict.fromkeys(m.FILES)\n")
    assert mnist.FILES  # (the real module in this process is untouched)
    ckpt = tmp_path / "ckpt"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), *sys.path]),
               GRADFLOW_BACKEND="numpy")
    env.pop("GRADFLOW_DATA", None)
    args = [sys.executable, str(EXAMPLES / "mnist_mlp.py"), "--data-dir", str(data),
            "--batch-size", "1", "--epochs", "1000", "--checkpoint-dir", str(ckpt),
            "--out", str(tmp_path / "out")]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=lambda: signal.signal(signal.SIGINT,
                                                                        signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 60
        while not (ckpt / "checkpoint").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert f"MNIST read from {data}" in out
    assert "Traceback" not in err
    line = err.strip().splitlines()[-1]
    assert "the last checkpoint is" in line and line.endswith("--resume")
    assert not [n for n in os.listdir(ckpt) if n.endswith(".tmp")]


def test_mnist_data_dir_is_used_or_fails(tmp_path, monkeypatch, capsys):
    """An explicit --data-dir is read, or the program stops naming it; $GRADFLOW_DATA
    (which holds MNIST here) is not used in its place."""
    import gzip
    import hashlib

    from gradflow.data import mnist

    mlp = load("mnist_mlp")
    rng = np.random.default_rng(0)
    payloads = {}
    for name, shape in [("train-images-idx3-ubyte", (32, 28, 28)),
                        ("train-labels-idx1-ubyte", (32,)),
                        ("t10k-images-idx3-ubyte", (20, 28, 28)),
                        ("t10k-labels-idx1-ubyte", (20,))]:
        array = rng.integers(0, 10 if len(shape) == 1 else 256, shape, dtype=np.uint8)
        header = bytes([0, 0, 8, array.ndim]) + b"".join(d.to_bytes(4, "big") for d in shape)
        payloads[name] = header + array.tobytes()
    monkeypatch.setattr(mnist, "FILES", {n: hashlib.sha256(p).hexdigest()
                                         for n, p in payloads.items()})
    shared = tmp_path / "shared" / "mnist"
    shared.mkdir(parents=True)
    for name, payload in payloads.items():
        (shared / name).write_bytes(payload)
    monkeypatch.setenv("GRADFLOW_DATA", str(tmp_path / "shared"))
    fetched = []

    def fetch(url):
        fetched.append(url)
        return gzip.compress(payloads[url.rsplit("/", 1)[-1].removesuffix(".gz")])

    monkeypatch.setattr(mnist, "_fetch", fetch)
    common = ["--epochs", "1", "--batch-size", "16", "--out", str(tmp_path / "out"),
              "--backend", "numpy"]
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SystemExit) as info:
        mlp.main(common + ["--data-dir", str(empty)])
    message = str(info.value.code)
    assert str(empty) in message and "train-images-idx3-ubyte" in message
    assert "--download" in message and "download=True" in message
    assert not fetched and not os.listdir(empty)

    capsys.readouterr()
    mlp.main(common)  # no --data-dir: $GRADFLOW_DATA/mnist
    assert f"MNIST read from {shared} (32 training, 20 test images)" in capsys.readouterr().out

    mlp.main(common + ["--data-dir", str(empty), "--download"])
    assert len(fetched) == 4 and sorted(os.listdir(empty)) == sorted(payloads)
    assert f"MNIST read from {empty} (32 training" in capsys.readouterr().out


def test_mnist_cnn_batch_norm_updates_its_moving_averages_with_each_step(tmp_path):
    import argparse

    import gradflow as gf

    cnn = load("mnist_cnn")
    args = argparse.Namespace(seed=0, batch_norm=True, lr=1e-3, decay=0.7, distributed=False,
                              logdir=None)
    graph, m = cnn.build_model(args, steps_per_epoch=4)
    with graph.as_default():
        moving = [v for v in gf.global_variables() if "moving_mean" in v.name]
        assert len(moving) == 2 and len(gf.get_collection(gf.GraphKeys.UPDATE_OPS)) == 4
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (16, 28, 28, 1)).astype(np.float32)
    y = rng.integers(0, 10, 16)
    with gf.Session(graph=graph, backend="numpy") as sess:
        sess.run(m["init"])
        before = sess.run(moving)
        evaluated = sess.run(m["loss"], {m["x"]: x, m["y"]: y})
        assert [np.array_equal(a, b) for a, b in zip(before, sess.run(moving))] == [True] * 2
        np.testing.assert_array_equal(evaluated, sess.run(m["loss"], {m["x"]: x, m["y"]: y}))
        sess.run(m["train"], {m["x"]: x, m["y"]: y, m["training"]: True})
        after = sess.run(moving)
    # the first step moves each moving mean 1% of the way to the batch mean
    assert all(np.abs(a - b).max() > 0 for a, b in zip(after, before))


def test_mnist_cnn_trains_with_batch_norm(tmp_path, monkeypatch):
    pytest.importorskip("tqdm")
    small_mnist(monkeypatch)
    result = load("mnist_cnn").main(["--batch-norm", "--batch-size", "16", "--epochs", "1",
                                     "--out", str(tmp_path), "--backend", "numpy"])
    assert len(result["losses"]) == 4 and np.isfinite(result["losses"]).all()
