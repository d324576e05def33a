"""CUDA C text of gradflow's kernels, shared by every CUDA backend and compiled by g++ in tests."""
