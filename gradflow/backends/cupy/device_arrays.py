"""Host copies and synchronization of GPU arrays (CuPy, torch on CUDA), for code
outside the backends that moves device memory itself (the MPI engine)."""

from __future__ import annotations

import numpy as np


def to_host(array) -> np.ndarray:
    """A NumPy copy of a CuPy array or a torch tensor."""
    module = type(array).__module__
    if module.startswith("cupy"):
        return array.get()
    if module.startswith("torch"):
        return array.detach().cpu().numpy()
    raise TypeError(f"cannot copy a {type(array).__name__} to the host")


def from_host(array, host: np.ndarray) -> None:
    """Write the NumPy array ``host`` into the device array ``array``."""
    module = type(array).__module__
    if module.startswith("cupy"):
        array.set(host)
    else:
        import torch

        array.copy_(torch.from_numpy(host))


def synchronize(array) -> None:
    """Wait until queued GPU work that writes ``array`` is done."""
    module = type(array).__module__
    if module.startswith("cupy"):
        with array.device:
            array.device.synchronize()
    elif module.startswith("torch"):
        import torch

        torch.cuda.synchronize(array.device)
