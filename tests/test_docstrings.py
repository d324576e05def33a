"""Every public name of gradflow has a docstring (the API reference is built from them)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "docs" / "_ext"))

import public_api  # noqa: E402 - docs/_ext, the list the API reference is generated from


def test_every_public_name_has_a_docstring():
    missing = public_api.missing_docstrings()
    assert not missing, (f"{len(missing)} public names have no docstring (add one, with a short "
                         "example):\n  " + "\n  ".join(missing))


def test_the_surface_covers_the_documented_modules():
    # the check above would pass on an empty list: make sure it looks at the real surface
    names = {m: public_api.public_names(m) for m, _ in public_api.MODULES}
    assert {"Session", "placeholder", "gradients", "Variable"} <= set(names["gradflow"])
    assert "dense" in names["gradflow.layers"] and "matmul" not in names["gradflow.layers"]
    assert "LSTMCell" in names["gradflow.nn.rnn_cell"] and "export" in names["gradflow.onnx"]
    assert sum(map(len, names.values())) > 400


def test_an_undocumented_name_is_reported(monkeypatch):
    import gradflow.timeline

    monkeypatch.setattr(gradflow.timeline.Timeline, "__doc__", None)
    monkeypatch.setattr(gradflow.timeline.Timeline.generate_chrome_trace_format, "__doc__", "")
    missing = public_api.missing_docstrings()
    assert "gradflow.timeline.Timeline" in missing
    assert "gradflow.timeline.Timeline.generate_chrome_trace_format" in missing
