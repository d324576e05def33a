"""TF1's description of a cluster: ``ClusterSpec`` (jobs, each a set of tasks by index
and network address), its protobuf form ``ClusterDef`` / ``JobDef`` (TensorFlow's wire
format), and ``replica_device_setter``, the device function TF1 programs wrap their
model in to put variables on parameter servers.

gradflow has no distributed runtime (no ``tf.train.Server``): a ``ClusterSpec`` is a
data structure here, which programs read their job's addresses from (and pass to
``replica_device_setter``, ``RunConfig``...).

>>> cluster = gf.train.ClusterSpec({"ps": ["ps0:2222"], "worker": ["w0:2222", "w1:2222"]})
>>> cluster.num_tasks("worker"), cluster.task_address("ps", 0)
(2, 'ps0:2222')
"""

from __future__ import annotations

from gradflow import protowire, tf_logging
from gradflow.config import DeviceSpec
from gradflow.errors import DataLossError
from gradflow.example import _Message

__all__ = ["ClusterDef", "ClusterSpec", "JobDef", "replica_device_setter"]


class JobDef(_Message):
    """One job of a ``ClusterDef``: its ``name`` and ``tasks``, a map from task index
    to address (``JobDef {string name = 1; map<int32, string> tasks = 2}``)."""

    def __init__(self, name="", tasks=None):
        self.name = str(name)
        self.tasks = {int(k): str(v) for k, v in (tasks or {}).items()}

    def _write(self, out):
        if self.name:
            protowire.write_bytes_field(out, 1, self.name.encode())
        for index, address in sorted(self.tasks.items()):
            entry = bytearray()
            # as protobuf writes a map entry: the key and the value, even when default
            entry += protowire.write_varint(1 << 3) + protowire.write_varint(
                index & 0xFFFFFFFFFFFFFFFF)
            protowire.write_bytes_field(entry, 2, address.encode())
            protowire.write_bytes_field(out, 2, bytes(entry))

    def _read(self, data):
        for n, kind, v in protowire.fields(data, DataLossError):
            if n == 1 and kind == 2:
                self.name = bytes(v).decode()
            elif n == 2 and kind == 2:
                index, address = 0, ""
                for m, kind_, w in protowire.fields(v, DataLossError):
                    if m == 1 and kind_ == 0:
                        index = protowire.signed(w)  # an int32, sign-extended
                    elif m == 2 and kind_ == 2:
                        address = bytes(w).decode()
                self.tasks[index] = address

    def __repr__(self):
        return f"JobDef(name={self.name!r}, tasks={self.tasks!r})"


class _RepeatedJobs(list):
    def add(self, **fields):
        """Append a new ``JobDef`` (made from ``fields``) and return it."""
        job = JobDef(**fields)
        self.append(job)
        return job


class ClusterDef(_Message):
    """The jobs of a cluster (``job``, a repeated ``JobDef``; ``ClusterDef {repeated
    JobDef job = 1}``)."""

    def __init__(self, job=()):
        self.job = _RepeatedJobs(job)

    def _write(self, out):
        for job in self.job:
            protowire.write_bytes_field(out, 1, job.SerializeToString())

    def _read(self, data):
        self.job = _RepeatedJobs(JobDef.FromString(v) for n, kind, v in
                                 protowire.fields(data, DataLossError) if n == 1 and kind == 2)

    def __repr__(self):
        return f"ClusterDef(job={list(self.job)!r})"


def _tasks(job, tasks):
    """``{index: address}`` from a list of addresses or a dict of them."""
    if isinstance(tasks, (list, tuple)):
        return {i: str(address) for i, address in enumerate(tasks)}
    if isinstance(tasks, dict):
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in tasks):
            raise TypeError(f"ClusterSpec: the task indices of job {job!r} must be integers, "
                            f"got {sorted(map(repr, tasks))}")
        return {i: str(address) for i, address in tasks.items()}
    raise TypeError(f"ClusterSpec: the tasks for job {job!r} must be a list or a dictionary "
                    f"from integers to strings, got {type(tasks).__name__}")


class ClusterSpec:
    """A cluster as a set of jobs, each a set of tasks (TF1 ``tf.train.ClusterSpec``),
    from a dict ``{job: [address, ...]}`` or ``{job: {task_index: address}}``, a
    ``ClusterDef`` or another ``ClusterSpec``."""

    def __init__(self, cluster):
        if isinstance(cluster, ClusterSpec):
            spec = {job: dict(tasks) for job, tasks in cluster._spec.items()}
        elif isinstance(cluster, ClusterDef):
            spec = {}
            for job in cluster.job:
                if job.name in spec:
                    raise ValueError(f"ClusterSpec: duplicated job name {job.name!r}")
                spec[job.name] = dict(job.tasks)
        elif isinstance(cluster, dict):
            spec = {}
            for job, tasks in cluster.items():
                if not isinstance(job, str):
                    raise TypeError(f"ClusterSpec: job names must be strings, got {job!r}")
                spec[job] = _tasks(job, tasks)
        else:
            raise TypeError("ClusterSpec: cluster must be a dictionary mapping one or more "
                            "job names to (i) a list of network addresses, or (ii) a "
                            "dictionary mapping integer task indices to network addresses; "
                            f"or a ClusterDef; got {type(cluster).__name__}")
        self._spec = spec

    def __bool__(self):
        return bool(self._spec)

    def __eq__(self, other):
        return isinstance(other, ClusterSpec) and self._spec == other._spec

    __hash__ = None

    def __repr__(self):
        return f"ClusterSpec({self.as_dict()!r})"

    @property
    def jobs(self):
        """The job names, sorted."""
        return sorted(self._spec)

    def _job(self, job_name):
        try:
            return self._spec[job_name]
        except KeyError:
            raise ValueError(f"No such job in cluster: {job_name!r}") from None

    def num_tasks(self, job_name):
        """How many tasks ``job_name`` has."""
        return len(self._job(job_name))

    def task_indices(self, job_name):
        """The task indices of ``job_name``, sorted."""
        return sorted(self._job(job_name))

    def task_address(self, job_name, task_index):
        """The address of task ``task_index`` of ``job_name`` (``ValueError`` if none)."""
        tasks = self._job(job_name)
        if task_index not in tasks:
            raise ValueError(f"No task with index {task_index!r} in job {job_name!r}")
        return tasks[task_index]

    def job_tasks(self, job_name):
        """The addresses of ``job_name``'s tasks as a list indexed by task (``None`` where
        a sparse job has no task)."""
        tasks = self._job(job_name)
        out = [None] * (max(tasks) + 1 if tasks else 0)
        for index, address in tasks.items():
            out[index] = address
        return out

    def as_dict(self):
        """``{job: [address, ...]}``, or ``{job: {index: address}}`` for a job whose
        indices are not ``0 .. n - 1``."""
        out = {}
        for job, tasks in self._spec.items():
            dense = sorted(tasks) == list(range(len(tasks)))
            out[job] = [tasks[i] for i in range(len(tasks))] if dense else dict(tasks)
        return out

    def as_cluster_def(self):
        """The ``ClusterDef`` of this cluster (jobs sorted by name)."""
        return ClusterDef([JobDef(job, self._spec[job]) for job in self.jobs])


_PS_OPS = ("variable", "Variable", "VariableV2", "AutoReloadVariable", "MutableHashTable",
           "MutableHashTableV2", "MutableHashTableOfTensors", "MutableHashTableOfTensorsV2",
           "MutableDenseHashTable", "MutableDenseHashTableV2", "VarHandleOp")


class _ReplicaDeviceChooser:
    """The device function of ``replica_device_setter``: round-robin over the
    parameter-server tasks for variables, the worker device for every other op."""

    def __init__(self, ps_tasks, ps_device, worker_device, merge_devices, ps_ops, strategy):
        self._ps_tasks, self._ps_device = ps_tasks, ps_device
        self._worker_device, self._merge = worker_device, merge_devices
        self._ps_ops, self._strategy, self._next = ps_ops, strategy, 0

    def _round_robin(self, op):
        task = self._next
        self._next = (self._next + 1) % self._ps_tasks
        return task

    def device_function(self, op):
        """The device string for ``op`` (an op with ``type`` and ``device``)."""
        current = DeviceSpec.from_string(getattr(op, "device", "") or "")
        if not self._merge and current.to_string():
            return current.to_string()
        node_def = getattr(op, "node_def", None)
        kind = getattr(node_def, "op", None) or getattr(op, "type", "")
        if self._ps_ops is not None and kind in self._ps_ops and self._ps_device:
            spec = DeviceSpec.from_string(self._ps_device)
            if self._ps_tasks:
                task = (self._strategy or self._round_robin)(op)
                spec = spec.merge_from(DeviceSpec(task=task))
        else:
            spec = DeviceSpec.from_string(self._worker_device or "")
        return spec.merge_from(current).to_string()


def replica_device_setter(ps_tasks=0, ps_device="/job:ps", worker_device="/job:worker",
                          merge_devices=True, cluster=None, ps_ops=None, ps_strategy=None):
    """A device function for ``gf.device`` that places variables on the parameter-server
    tasks in turn and the other ops on ``worker_device`` (TF1). ``cluster`` (a dict or
    ``ClusterSpec``) gives the number of ``ps`` tasks; without parameter servers (the
    one-process case) it returns ``None``, as TF1 does, so ``gf.device(...)`` places
    nothing. gradflow runs a graph in one process: ``gf.device`` records strings and
    takes device functions without calling them, so this changes where nothing runs.

    >>> with gf.device(gf.train.replica_device_setter(cluster=cluster)):
    ...     w = gf.Variable(gf.zeros([10]))
    """
    if cluster is not None:
        spec = cluster if isinstance(cluster, ClusterSpec) else ClusterSpec(cluster)
        ps_job = DeviceSpec.from_string(ps_device).job
        ps_tasks = spec.num_tasks(ps_job) if ps_job in spec.jobs else 0
    if ps_tasks == 0:
        return None
    if ps_ops is None:
        ps_ops = list(_PS_OPS)
    if not merge_devices:
        tf_logging.warning("DEPRECATION: It is recommended to set merge_devices=true in "
                           "replica_device_setter")
    chooser = _ReplicaDeviceChooser(int(ps_tasks), ps_device, worker_device, merge_devices,
                                    ps_ops, ps_strategy)
    return chooser.device_function
