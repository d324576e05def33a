"""The NumPy backend: its lowerings, numba kernels and fused-kernel emitter."""
