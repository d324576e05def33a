"""Running a large fused kernel as two halves on two threads, when two cores are free.

A fused kernel of the NumPy backend (``numpy_fused``) is one numba loop that releases
the GIL. Past ``MIN_SIZE`` elements, and when the thread policy of
``gradflow.backends.threads`` gives the BLAS two threads (two cores free: no other
process is busy on them), the caller runs the first half of the rows itself and
hands the second to one helper thread, made once and kept: an optimizer's update of
a 784 x 512 layer is memory-bound, and one core alone does not reach the memory
bandwidth of two. With another process busy on a core, the policy says one thread
and the kernel runs whole on the caller's thread, as before (two threads there would
wait for each other's scheduling slices).
"""

from __future__ import annotations

import threading

from gradflow.backends import threads

MIN_SIZE = 1 << 16  # elements; below it the hand-over costs more than the half saves


class _Helper:
    """One daemon thread that runs the jobs it is given, one at a time."""

    def __init__(self):
        self._go = threading.Semaphore(0)
        self._done = threading.Semaphore(0)
        self._job = None
        self._error = None
        self._lock = threading.Lock()  # one caller's halves at a time
        threading.Thread(target=self._loop, name="gradflow-halves", daemon=True).start()

    def _loop(self):
        while True:
            self._go.acquire()
            try:
                fn, args = self._job
                fn(*args)
            except BaseException as err:  # handed back to the caller
                self._error = err
            self._done.release()

    def run(self, fn, first, second):
        """``fn(*first)`` here and ``fn(*second)`` on the helper thread, both done on
        return (the helper's error, if any, raised here)."""
        if not self._lock.acquire(blocking=False):  # another thread's halves: run whole
            return False
        try:
            self._error = None
            self._job = (fn, second)
            self._go.release()
            try:
                fn(*first)
            finally:
                self._done.acquire()
            if self._error is not None:
                raise self._error
            return True
        finally:
            self._lock.release()


_helper = None
_made = threading.Lock()


def _get_helper():
    global _helper
    if _helper is None:
        with _made:
            if _helper is None:
                _helper = _Helper()
    return _helper


def runner(kinds, rows, cols, two_d):
    """``go(kernel, arrays)`` calling ``kernel(R, C, *arrays)`` whole or as two halves of
    the rows; ``kinds`` gives each array's pattern ("full", "row", "col", "scalar"; the
    outputs "full"), in the order of ``arrays``."""
    if rows * cols < MIN_SIZE or rows < 2:
        return lambda kernel, arrays: kernel(rows, cols, *arrays)
    half = rows // 2

    def parts(arrays):
        first, second = [], []
        for array, kind in zip(arrays, kinds):
            if kind == "full":
                whole = array.reshape((rows, cols) if two_d else (rows,))
                first.append(whole[:half])
                second.append(whole[half:])
            elif kind == "col":
                whole = array.reshape(rows)
                first.append(whole[:half])
                second.append(whole[half:])
            else:
                first.append(array)
                second.append(array)
        return first, second

    def go(kernel, arrays):
        if threads.current() == 2:
            first, second = parts(arrays)
            if _get_helper().run(kernel, [half, cols, *first], [rows - half, cols, *second]):
                return
        kernel(rows, cols, *arrays)

    return go
