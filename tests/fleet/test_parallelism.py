"""gen.fleet.parallelism: the group shape of a replica (pods, GPUs per pod, DP ranks per pod)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gen.fleet.parallelism import derived_gpus_per_pod, group_shape

sizes = st.integers(min_value=1, max_value=16)
nodes = st.sampled_from([1, 2, 4, 8, 16])


def test_405b_over_two_nodes() -> None:
    """TP=8 × PP=2 on 8-GPU nodes: two pods of eight GPUs."""
    shape = group_shape(8, 2, 1, 8)
    assert (shape.multi_node, shape.pods, shape.gpus_per_pod, shape.ok) == (True, 2, 8, True)


def test_wide_ep() -> None:
    """DP=16 with expert parallelism on 8-GPU nodes: two pods of eight DP ranks each."""
    shape = group_shape(1, 1, 16, 8, expert=True)
    assert (shape.pods, shape.gpus_per_pod, shape.data_local) == (2, 8, 8)
    assert "expert parallel" in shape.describe()


def test_single_node_is_one_pod() -> None:
    """A replica that fits a node is one pod, whatever gpu.count says."""
    shape = group_shape(4, 1, 1, 8, gpus_per_pod=4)
    assert (shape.multi_node, shape.pods, shape.problems) == (False, 1, ())


def test_uneven_split_uses_a_divisor() -> None:
    """TP=12 on 8-GPU nodes: two pods of six (vLLM gives every node as many ranks)."""
    assert derived_gpus_per_pod(12, 1, 1, 8) == 6
    assert group_shape(12, 1, 1, 8).pods == 2


def test_pod_larger_than_node() -> None:
    """gpu.count above the node's GPUs is a problem."""
    shape = group_shape(8, 2, 1, 8, gpus_per_pod=16)
    assert any("a node has 8" in p.text for p in shape.problems)


def test_not_a_whole_number_of_pods() -> None:
    """16 GPUs do not split into pods of 6."""
    shape = group_shape(8, 2, 1, 8, gpus_per_pod=6)
    assert any("not a whole number of pods" in p.text for p in shape.problems)
    assert shape.pods == 3


def test_data_rank_larger_than_a_node() -> None:
    """DP ranks of 16 GPUs on 8-GPU nodes are not launched."""
    assert any("larger than a node" in p.text for p in group_shape(16, 1, 2, 8).problems)


def test_pod_holds_no_whole_rank() -> None:
    """Pods of 4 GPUs hold no whole number of DP ranks of 3 GPUs."""
    assert any("no whole number" in p.text
               for p in group_shape(3, 1, 4, 8, gpus_per_pod=4).problems)


def test_rejects_zero() -> None:
    """Sizes below one are a programming error."""
    with pytest.raises(ValueError, match="tensor"):
        derived_gpus_per_pod(0, 1, 1, 8)


@given(sizes, sizes, sizes, nodes)
def test_derived_shape_is_consistent(tensor: int, pipeline: int, data: int, gpn: int) -> None:
    """A derived shape fits a node, covers the replica exactly, and holds whole DP ranks."""
    shape = group_shape(tensor, pipeline, data, gpn)
    assert shape.gpus == tensor * pipeline * data
    if not shape.multi_node:
        assert (shape.pods, shape.gpus_per_pod, shape.problems) == (1, shape.gpus, ())
        return
    rank_too_big = data > 1 and tensor * pipeline > gpn
    assert shape.ok is not rank_too_big
    assert shape.gpus_per_pod <= gpn
    assert shape.gpus_per_pod * shape.pods == shape.gpus
    assert shape.pods >= 2
    if data > 1 and shape.ok:
        assert shape.gpus_per_pod % (tensor * pipeline) == 0
        assert shape.data_local * shape.pods == data


@given(sizes, sizes, sizes, nodes, st.integers(min_value=1, max_value=32))
def test_declared_shape_problems(tensor: int, pipeline: int, data: int, gpn: int,
                                 per_pod: int) -> None:
    """A declared GPUs-per-pod is reported exactly when it cannot run."""
    shape = group_shape(tensor, pipeline, data, gpn, gpus_per_pod=per_pod)
    world = tensor * pipeline * data
    if world <= gpn:
        assert shape.ok and shape.pods == 1
        return
    rank = tensor * pipeline
    fine = (per_pod <= gpn and world % per_pod == 0
            and (data == 1 or (rank <= gpn and per_pod % rank == 0)))
    assert shape.ok is fine
    assert shape.pods * per_pod >= world
    assert shape.declared


@given(sizes, sizes, sizes, nodes)
def test_deterministic(tensor: int, pipeline: int, data: int, gpn: int) -> None:
    """The same numbers give the same shape."""
    assert group_shape(tensor, pipeline, data, gpn) == group_shape(tensor, pipeline, data, gpn)
