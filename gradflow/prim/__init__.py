"""Primitives: the op registry and each primitive's record (its implementation,
shape and dtype rule, gradient, scalar expression, lowerings and traits)."""
