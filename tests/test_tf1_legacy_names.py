"""Names from before TF 1.0 that 2016 tutorials call: the summary functions under their
old names, ``per_image_whitening``; and TF1's guard on the cross-entropy losses, whose
arguments were ``(logits, labels)`` before TF 1.0: a positional call is refused instead
of swapping them silently."""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf


def test_old_summary_names_are_the_summary_functions(tmp_path):
    pytest.importorskip("tensorboardX", reason="summaries are written by tensorboardX")
    x = gf.placeholder(gf.float32, (2, 4, 4, 1))
    gf.scalar_summary("mean", gf.reduce_mean(x))
    gf.histogram_summary("values", x)
    gf.image_summary("images", x, max_images=1)
    merged = gf.merge_all_summaries()
    assert gf.merge_summary([merged]) is not None
    writer = gf.train.SummaryWriter(str(tmp_path))
    assert isinstance(writer, gf.summary.FileWriter)
    with gf.Session() as sess:
        writer.add_summary(sess.run(merged, {x: np.ones((2, 4, 4, 1), np.float32)}), 1)
    writer.close()
    assert any(p.name.startswith("events.out.tfevents") for p in tmp_path.iterdir())


def test_per_image_whitening_is_per_image_standardization():
    x = np.random.default_rng(0).standard_normal((3, 4, 2)).astype(np.float32)
    with gf.Session() as sess:
        a, b = sess.run([gf.image.per_image_whitening(x), gf.image.per_image_standardization(x)])
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("loss", ["softmax_cross_entropy_with_logits",
                                  "sparse_softmax_cross_entropy_with_logits",
                                  "sigmoid_cross_entropy_with_logits"])
def test_the_losses_take_named_arguments_only(loss):
    logits = gf.placeholder(gf.float32, (2, 3))
    labels = gf.placeholder(gf.int32 if loss.startswith("sparse") else gf.float32,
                            (2,) if loss.startswith("sparse") else (2, 3))
    with pytest.raises(ValueError, match=f"Only call `{loss}` with named arguments"):
        getattr(gf.nn, loss)(logits, labels)
    assert getattr(gf.nn, loss)(labels=labels, logits=logits).shape[0] == 2
