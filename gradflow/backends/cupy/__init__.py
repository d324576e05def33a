"""The CuPy backend: its emitter, lowerings, kernels' launch and capture, NCCL and nvmath."""
