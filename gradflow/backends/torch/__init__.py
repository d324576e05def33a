"""The PyTorch backend and its ``out=`` lowerings."""
