"""What the training examples share: starting or resuming from a checkpoint with
the history of the curves, saving both, stopping cleanly on Ctrl-C, and the PNG
of the curves.

The history (the training loss of every step, and every evaluation) lives in
``history.json`` beside the checkpoints. It is written just before each
checkpoint, and on resume it is cut back to the restored global step, so the
curves continue where the checkpoint left them even if a run was stopped
between the two writes.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import shlex
import signal
import sys
import tempfile
import threading

import numpy as np

import gradflow as gf

HISTORY_FILE = "history.json"


# -- the command line --------------------------------------------------------------------


def check_backend(parser, name):
    """Stop at once, in one line with exit status 2, when the backend asked for
    (``--backend NAME``, else ``$GRADFLOW_BACKEND``, else numpy) cannot run here: before
    any data is read or any graph is built. Returns the backend's name."""
    try:
        return gf.backends.get(name).name
    except gf.errors.BackendUnavailableError as err:
        error = err
    chosen = gf.backends.default_name() if name is None else name
    where = f"--backend {chosen}" if name is not None else f"$GRADFLOW_BACKEND={chosen}"
    reasons = gf.backends.available()
    here = ", ".join(n for n, reason in reasons.items() if reason is None) or "none"
    if chosen not in reasons:
        close = difflib.get_close_matches(chosen.strip().lower(), list(reasons), n=1)
        hint = ("; on an NVIDIA GPU use cupy" if chosen.strip().lower() in ("cuda", "gpu") else
                f"; did you mean {close[0]}?" if close else "")
        why = f"is not a backend (gradflow knows {', '.join(reasons)}{hint})"
    elif reasons[chosen] is not None:
        why = f"cannot run here: {reasons[chosen]}"
    else:  # (available, yet it would not start)
        why = f"cannot run here: {error}"
    parser.exit(2, f"{parser.prog}: error: {where} {why}. Available here: {here}\n")


def png_path(folder, stem, backend):
    """``folder/STEM_BACKEND.png``: each backend's run keeps its own picture."""
    return os.path.join(folder, f"{stem}_{backend}.png")


class History:
    """``losses``: ``[global step, training loss]`` per step; ``evals``: one dict per
    evaluation, each with at least ``step`` (the global step it was taken at)."""

    def __init__(self, losses=(), evals=()):
        self.losses = [list(pair) for pair in losses]
        self.evals = [dict(e) for e in evals]

    def add_loss(self, step, loss):
        self.losses.append([int(step), float(loss)])

    def add_eval(self, **entry):
        self.evals.append({k: v.item() if isinstance(v, np.generic) else v
                           for k, v in entry.items()})

    def loss_values(self):
        return [loss for _, loss in self.losses]

    def save(self, folder):
        """Write ``folder/history.json`` atomically."""
        os.makedirs(folder, exist_ok=True)
        data = json.dumps({"format": 1, "losses": self.losses, "evals": self.evals})
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{HISTORY_FILE}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(data)
            os.replace(tmp, os.path.join(folder, HISTORY_FILE))
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise

    @classmethod
    def load(cls, folder, upto_step):
        """The saved history up to and including ``upto_step``; None if there is none."""
        try:
            with open(os.path.join(folder, HISTORY_FILE), encoding="utf-8") as f:
                data = json.load(f)
            losses = [p for p in data["losses"] if p[0] <= upto_step]
            evals = [e for e in data["evals"] if e["step"] <= upto_step]
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            return None
        return cls(losses, evals)


# -- starting, checkpointing, stopping -----------------------------------------------


def begin(sess, m, checkpoint_dir, resume):
    """Initialize the variables, or restore the latest checkpoint and its history.

    Returns ``(latest, history)``: the checkpoint restored (None when starting
    afresh) and the history up to its global step (empty when starting afresh,
    or when the checkpoint has no saved history, which is then said).
    """
    latest = gf.train.latest_checkpoint(checkpoint_dir) if resume else None
    if latest is None:
        if resume:
            print(f"no checkpoint in {checkpoint_dir}; starting from scratch")
        sess.run(m["init"])
        return None, History()
    m["saver"].restore(sess, latest)
    step = int(sess.run(m["step"]))
    history = History.load(checkpoint_dir, step)
    if history is None:
        print(f"no {HISTORY_FILE} in {checkpoint_dir}: the curves start at step {step}")
        history = History()
    return latest, history


def start(sess, m, checkpoint_dir, resume):
    """``begin`` for the epoch-based examples; returns ``(epochs done, history, latest)``."""
    latest, history = begin(sess, m, checkpoint_dir, resume)
    done = int(sess.run(m["epoch"]))
    if latest is not None:
        print(f"resumed from {latest} (epoch {done}, step {int(sess.run(m['step']))})")
    return done, history, latest


@contextlib.contextmanager
def sigint_deferred():
    """Hold back Ctrl-C (SIGINT) until the block is done, then raise KeyboardInterrupt.

    A checkpoint is written to a temporary file and renamed into place, and
    then the index is updated; an interrupt between those steps would leave
    the newest checkpoint out of the index. Deferring it lets the save finish.
    Only in the main thread, and only when SIGINT has a Python handler.
    """
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not callable(previous):
        yield
        return
    caught = []
    signal.signal(signal.SIGINT, lambda signum, frame: caught.append(frame))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        previous(signal.SIGINT, caught[0])  # the default handler raises KeyboardInterrupt


def redraw_finished(done, epochs, latest, history, curves, png):
    """For a run with nothing left to train: say so and redraw its PNG with ``curves()``
    from the saved history. Returns False when there is no history to draw from (the
    caller evaluates instead and leaves the PNG as it was)."""
    print(f"the run is already complete: the checkpoint {latest} is at epoch {done}, "
          f"--epochs is {epochs}; nothing to train" if latest else
          f"nothing to train: --epochs is {epochs}")
    if not history.evals:
        return False
    curves()
    print(f"redrew {png} from the saved history")
    return True


def save_checkpoint(sess, m, checkpoint_dir, history, before=None):
    """The history, then the checkpoint (``checkpoint_dir/model-STEP``), Ctrl-C held back.

    ``before``: a function called first, to write more beside the checkpoint.
    """
    with sigint_deferred():
        history.save(checkpoint_dir)
        if before is not None:
            before()
        return m["saver"].save(sess, os.path.join(checkpoint_dir, "model"),
                               global_step=m["step"])


def command_line(script, argv):
    """``python examples/NAME.py ARGS`` as one shell-quoted line."""
    path = os.path.abspath(script)
    rel = os.path.relpath(path)
    return shlex.join(["python", path if rel.startswith("..") else rel, *argv])


def interrupted(script, argv, checkpoint_dir, history, where):
    """Print one line on where things stand after Ctrl-C, then exit with status 130.

    ``where``: what was going on ("epoch 3, step 1200"). ``argv``: the
    arguments of this run (None: ``sys.argv[1:]``); the resume command repeats
    them with ``--resume``.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    latest = gf.train.latest_checkpoint(checkpoint_dir) if checkpoint_dir else None
    if latest is not None:
        match = re.search(r"-(\d+)$", latest)
        at = [e for e in history.evals if match and e["step"] == int(match.group(1))]
        what = f" ({_epoch_text(at[-1]['epoch'])}, step {at[-1]['step']})" if at else ""
        resume = argv if "--resume" in argv else argv + ["--resume"]
        line = (f"interrupted at {where}; the last checkpoint is {latest}{what}; resume with: "
                f"{command_line(script, resume)}")
    elif checkpoint_dir:
        line = (f"interrupted at {where}, before the first checkpoint in {checkpoint_dir}; "
                f"start again with: {command_line(script, argv)}")
    else:
        line = (f"interrupted at {where}; nothing was saved (with --checkpoint-dir DIR a "
                "checkpoint is kept to resume from)")
    print(line, file=sys.stderr, flush=True)
    raise SystemExit(130)


def _epoch_text(epoch):
    return f"epoch {epoch}" if float(epoch).is_integer() else f"epoch {epoch:.2f}"


# -- the PNG ---------------------------------------------------------------------------


def backends_text(history, current):
    """"backend numpy", or "backends cupy, numpy" for a run resumed on another backend."""
    names = sorted({e["backend"] for e in history.evals if e.get("backend")} | {current})
    return ("backend " if len(names) == 1 else "backends ") + ", ".join(names)


def save_curves(path, title, history, steps_per_epoch, metric="accuracy",
                metric_label="test accuracy (%)", loss_label="training loss",
                percent=True, log_loss=True):
    """Training loss per step (left) beside ``metric`` per evaluation (right), both
    against the epoch, saved to ``path``; ``title`` names the model and the backend.

    Readable with a single epoch: the evaluations carry markers and their last
    value, an epoch axis of whole epochs has integer ticks, and a lone point gets
    a sensible range.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.3))
    fig.suptitle(title)
    steps = np.array([s for s, _ in history.losses], dtype=np.float64)
    losses = np.array(history.loss_values(), dtype=np.float64)
    x = steps / steps_per_epoch
    if len(losses) > 1:
        window = max(1, len(losses) // 40)
        raw_style = dict(lw=0.5, alpha=0.35 if window > 1 else 1.0, color="C0")
        ax1.plot(x, losses, label="each step", **raw_style)
        if window > 1:
            smooth = np.convolve(losses, np.ones(window) / window, mode="valid")
            ax1.plot(x[window - 1:], smooth, lw=1.5, color="C0",
                     label=f"mean of {window} steps")
            ax1.legend(loc="upper right", fontsize="small")
    elif len(losses):
        ax1.plot(x, losses, "o", color="C0")
    ax1.set(xlabel="epoch", ylabel=loss_label, title="training loss")
    if log_loss and len(losses) and np.all(losses > 0):
        ax1.set_yscale("log")
        ax1.yaxis.set_major_formatter(_plain_log_formatter())  # 0.5, not 5 x 10^-1
        ax1.yaxis.set_minor_formatter(_plain_log_formatter(minor_thresholds=(1.2, 0.4)))

    evals = [e for e in history.evals if metric in e]
    ex = np.array([e["epoch"] for e in evals], dtype=np.float64)
    ey = np.array([e[metric] for e in evals], dtype=np.float64) * (100 if percent else 1)
    if len(ey):
        ax2.plot(ex, ey, marker="o", color="C1")
        unit = "%" if percent else ""
        ax2.annotate(f"{ey[-1]:.2f}{unit}", (ex[-1], ey[-1]), textcoords="offset points",
                     xytext=(0, 8), ha="center", fontsize="small")
        pad = max(0.5 if percent else 0.02, 0.15 * float(ey.max() - ey.min()))
        lo, hi = float(ey.min()) - pad, float(ey.max()) + pad
        if percent:
            lo, hi = max(lo, 0.0), min(hi, 100.0 + pad / 4)
        ax2.set_ylim(lo, hi)
        ax2.ticklabel_format(axis="y", useOffset=False)
    ax2.set(xlabel="epoch", ylabel=metric_label, title=metric_label.split(" (")[0])
    last = max([0.0, *x[-1:], *ex[-1:]])
    whole = len(ex) and np.all(ex == np.round(ex))
    right = (np.ceil(last) + 0.25) if whole else max(last * 1.04, 1e-3)
    for ax in (ax1, ax2):
        ax.set_xlim(0, right)
        ax.grid(alpha=0.3)
    if whole:
        ax2.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _plain_log_formatter(**kwargs):
    """Matplotlib's choice of which log ticks to label, written as plain numbers."""
    from matplotlib.ticker import LogFormatter

    class PlainLogFormatter(LogFormatter):
        def __call__(self, x, pos=None):
            return f"{x:g}" if super().__call__(x, pos) else ""

    return PlainLogFormatter(**kwargs)
