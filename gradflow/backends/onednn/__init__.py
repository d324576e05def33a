"""oneDNN on the CPU: the library binding, and convolutions and matrix products through it."""
