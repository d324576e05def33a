"""``python -m gradflow.onnx``: convert a SavedModel, or a graph file (and a checkpoint),
to an ONNX model.

    python -m gradflow.onnx export/1 -o model.onnx                  # a SavedModel's signature
    python -m gradflow.onnx --graph frozen.npz --inputs x --outputs logits -o model.onnx
    python -m gradflow.onnx --graph graph.json --checkpoint ckpt/model-100 \\
        --inputs x --outputs logits -o model.onnx                   # variables from a checkpoint

A SavedModel gives the inputs and outputs of one signature (``--signature``,
default ``serving_default``) under their signature keys. A graph file
(``gf.train.write_graph``) takes ``--inputs``/``--outputs`` node names; its
variables come from ``--checkpoint`` (a ``gf.train.Saver`` file), or it is frozen
(``gf.graph_util.convert_variables_to_constants``) and needs none.
"""

from __future__ import annotations

import argparse
import sys

import gradflow as gf
from gradflow.onnx import DEFAULT_OPSET, export


def _parser():
    p = argparse.ArgumentParser(prog="python -m gradflow.onnx",
                                description="Convert a gradflow model to ONNX.")
    p.add_argument("saved_model", nargs="?", help="a SavedModel folder")
    p.add_argument("-o", "--output", required=True, help="the .onnx file to write")
    p.add_argument("--tag", action="append", default=None,
                   help="the SavedModel meta graph's tags (default: serve)")
    p.add_argument("--signature", default="serving_default", help="the SavedModel signature")
    p.add_argument("--graph", help="a graph file from gf.train.write_graph (instead of a "
                                   "SavedModel)")
    p.add_argument("--checkpoint", help="with --graph: restore the variables from this")
    p.add_argument("--inputs", help="with --graph: input node names, comma-separated")
    p.add_argument("--outputs", help="with --graph: output node names, comma-separated")
    p.add_argument("--opset", type=int, default=DEFAULT_OPSET)
    return p


def _from_saved_model(sess, args):
    meta = gf.saved_model.loader.load(sess, args.tag or [gf.saved_model.tag_constants.SERVING],
                                      args.saved_model)
    if args.signature not in meta.signature_def:
        raise SystemExit(f"{args.saved_model} has no signature {args.signature!r}; it has "
                         f"{sorted(meta.signature_def)}")
    sig = meta.signature_def[args.signature]
    tensor = sess.graph.get_tensor_by_name
    return ({k: tensor(v.name) for k, v in sig.inputs.items()},
            {k: tensor(v.name) for k, v in sig.outputs.items()})


def _from_graph(sess, args):
    if not args.inputs or not args.outputs:
        raise SystemExit("--graph needs --inputs and --outputs (node names)")
    with sess.graph.as_default():
        gf.import_graph_def(gf.GraphDef.read(args.graph), name="")
        if args.checkpoint:
            gf.train.Saver().restore(sess, args.checkpoint)
    tensor = sess.graph.get_tensor_by_name
    return ({n: tensor(n) for n in args.inputs.split(",")},
            {n: tensor(n) for n in args.outputs.split(",")})


def main(argv=None):
    args = _parser().parse_args(argv)
    if (args.saved_model is None) == (args.graph is None):
        raise SystemExit("give a SavedModel folder or --graph FILE (one of them)")
    with gf.Session(graph=gf.Graph(), backend="numpy") as sess:
        try:
            inputs, outputs = (_from_saved_model if args.saved_model else _from_graph)(sess, args)
            export(sess, inputs, outputs, args.output, opset=args.opset)
        except (gf.errors.GradflowError, KeyError) as err:
            raise SystemExit(f"error: {err}") from None
    print(f"wrote {args.output}: inputs {sorted(inputs)}, outputs {sorted(outputs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
