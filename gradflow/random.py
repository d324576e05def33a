"""TF1's ``tf.random`` namespace (``tf.compat.v1.random``): the random ops under the
names TF1 programs reach them by (``tf.random.normal``, ``tf.random.categorical``,
``tf.random.shuffle``...). Every draw is made on the host from its op's seeded
generator, so a seed gives the same numbers on every backend.
"""

from gradflow.graph import get_default_graph, set_random_seed
from gradflow.ops.candidate_sampling_ops import (
    log_uniform_candidate_sampler,
    uniform_candidate_sampler,
)
from gradflow.ops.nn_more_ops import all_candidate_sampler
from gradflow.ops.random_ops import categorical, random_gamma, random_poisson
from gradflow.ops.sampling_ops import multinomial, random_shuffle
from gradflow.ops.state_ops import random_normal, random_uniform, truncated_normal
from gradflow.ops.stateless_random_ops import (
    fold_in,
    split,
    stateless_binomial,
    stateless_categorical,
    stateless_gamma,
    stateless_multinomial,
    stateless_normal,
    stateless_parameterized_truncated_normal,
    stateless_poisson,
    stateless_truncated_normal,
    stateless_uniform,
)
from gradflow.ops.unigram_sampling_ops import (
    fixed_unigram_candidate_sampler,
    learned_unigram_candidate_sampler,
)
from gradflow.run_state import DEFAULT_GRAPH_SEED

normal = random_normal
uniform = random_uniform
gamma = random_gamma
poisson = random_poisson
shuffle = random_shuffle


def get_seed(op_seed):
    """The ``(graph_seed, op_seed)`` pair a random op created now with seed ``op_seed``
    would be drawn from (TF1 ``tf.random.get_seed``): ``(None, None)`` without a graph
    or op seed; the default graph seed with an op seed only; with a graph seed only, an
    op seed from the op's position in the graph (what gradflow's random ops use)."""
    graph_seed = get_default_graph().seed
    if graph_seed is None:
        return (None, None) if op_seed is None else (DEFAULT_GRAPH_SEED, int(op_seed))
    return graph_seed, len(get_default_graph().nodes) if op_seed is None else int(op_seed)


__all__ = ["categorical", "gamma", "get_seed", "log_uniform_candidate_sampler",
           "multinomial", "normal", "poisson", "set_random_seed", "shuffle",
           "truncated_normal", "uniform", "uniform_candidate_sampler",
           "all_candidate_sampler", "fixed_unigram_candidate_sampler", "fold_in", "split",
           "learned_unigram_candidate_sampler", "stateless_binomial",
           "stateless_categorical", "stateless_gamma", "stateless_multinomial",
           "stateless_normal", "stateless_parameterized_truncated_normal", "stateless_poisson",
           "stateless_truncated_normal", "stateless_uniform"]
