"""What the training examples share: starting or resuming from a checkpoint, and
the PNG of the loss and accuracy curves."""

from __future__ import annotations

import gradflow as gf


def start(sess, m, checkpoint_dir, resume):
    """Initialize the variables, or restore the latest checkpoint; return the epochs done."""
    latest = gf.train.latest_checkpoint(checkpoint_dir) if resume else None
    if latest is None:
        if resume:
            print(f"no checkpoint in {checkpoint_dir}; starting from scratch")
        sess.run(m["init"])
        return 0
    m["saver"].restore(sess, latest)
    done = int(sess.run(m["epoch"]))
    print(f"resumed from {latest} (epoch {done}, step {int(sess.run(m['step']))})")
    return done


def save_curves(path, losses, accuracies, loss_label="training loss",
                accuracy_label="test accuracy (%)"):
    """Training loss per step (log scale) beside accuracy per epoch, saved to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    ax1.plot(losses, lw=0.5)
    ax1.set(xlabel="step", ylabel=loss_label, yscale="log", title="loss")
    ax2.plot(range(1, len(accuracies) + 1), [100 * a for a in accuracies], marker="o")
    ax2.set(xlabel="epoch", ylabel=accuracy_label, title="accuracy")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
