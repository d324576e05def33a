"""CPU threading that the NumPy backend's libraries share: the thread pools of
OpenBLAS, numba and oneDNN."""
