"""The group shape of a replica: how tensor × pipeline × data GPUs split into pods and nodes.

One pure function, :func:`group_shape`, answers it from the parallelism and the node size;
:func:`service_shape` asks it for a service on its pools. Every capability that needs the
shape (the vLLM and LeaderWorkerSet builders, the fit, the multi-node rules, ``gen
explain``) reads it from here, so the arithmetic exists once::

    GPUs per replica   = tensor × pipeline × data
    spans nodes        ⇔ GPUs per replica > the pool's gpus_per_node
    GPUs per pod       = gpu.count when the profile sets it, else the largest that fits a
                         node: a divisor of the replica's GPUs (data = 1), or whole data-
                         parallel ranks (tensor × pipeline × data_local, data_local | data)
    pods per group     = GPUs per replica ÷ GPUs per pod   (one pod a node: nodes per replica)
    data_local         = GPUs per pod ÷ (tensor × pipeline)  (vLLM --data-parallel-size-local)

vLLM's multi-node launcher gives every node the same number of local GPUs (the world is
``nnodes`` × local ranks: vllm-project/vllm ``vllm/config/parallel.py`` @ v0.33.0,
``ParallelConfig.nnodes``/``node_rank``), and a data-parallel engine's ranks are
``--data-parallel-size-local`` whole engines per node (``vllm/entrypoints/cli/serve.py``
``run_headless``), hence the divisibility rules. A data-parallel rank larger than a node
(``nnodes_within_dp`` > 1) is a shape gen does not launch: it is reported, not rendered.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from gen.fleet.plan import PoolPlan, ServicePlan

__all__ = ["CLIQUE_LABEL", "ComputeDomainPlan", "GroupShape", "ShapeProblem", "compute_domain",
           "derived_gpus_per_pod", "group_shape", "nvlink_domain_nodes", "pod_layout",
           "service_shape", "shape_pool"]


ProblemKind = Literal["pod-above-node", "uneven-pods", "rank-above-node", "partial-rank"]


@dataclass(frozen=True)
class ShapeProblem:
    """Why a group shape cannot run: its kind (the rule that reports it) and a sentence."""

    kind: ProblemKind
    text: str


@dataclass(frozen=True)
class GroupShape:
    """One replica's split into pods (a LeaderWorkerSet group when it has more than one).

    Attributes:
        tensor: tensor-parallel size.
        pipeline: pipeline-parallel size.
        data: data-parallel size.
        expert: expert parallelism on.
        gpus_per_node: GPUs of one node of the pool the shape is for.
        gpus_per_pod: GPUs each pod of the group claims.
        pods: pods per group (nodes per replica: one pod a node).
        declared: ``gpus_per_pod`` is the profile's ``gpu.count`` (else derived).
        problems: why the shape cannot run (empty when it can).
    """

    tensor: int
    pipeline: int
    data: int
    expert: bool
    gpus_per_node: int
    gpus_per_pod: int
    pods: int
    declared: bool
    problems: tuple[ShapeProblem, ...] = ()

    @property
    def gpus(self) -> int:
        """GPUs of one replica: tensor × pipeline × data."""
        return self.tensor * self.pipeline * self.data

    @property
    def rank_gpus(self) -> int:
        """GPUs of one data-parallel rank: tensor × pipeline."""
        return self.tensor * self.pipeline

    @property
    def multi_node(self) -> bool:
        """The replica spans nodes (more GPUs than one node has)."""
        return self.gpus > self.gpus_per_node

    @property
    def data_local(self) -> int:
        """Data-parallel ranks in each pod (vLLM ``--data-parallel-size-local``)."""
        return max(1, self.gpus_per_pod // self.rank_gpus) if self.data > 1 else 1

    @property
    def ok(self) -> bool:
        """The shape can run."""
        return not self.problems

    def describe(self) -> str:
        """One line: ``TP=8 × PP=2 × DP=1 = 16 GPUs: 2 pods × 8 GPUs (nodes of 8)``."""
        text = (f"TP={self.tensor} × PP={self.pipeline} × DP={self.data} = {self.gpus} GPUs"
                f"{' (expert parallel)' if self.expert else ''}: {self.pods} pod(s) × "
                f"{self.gpus_per_pod} GPU(s) (nodes of {self.gpus_per_node})")
        if self.data > 1:
            text += f", {self.data_local} data-parallel rank(s) a pod"
        return text


def derived_gpus_per_pod(tensor: int, pipeline: int, data: int, gpus_per_node: int) -> int:
    """GPUs per pod gen chooses when the profile names none: the whole replica when it fits
    a node; else the most GPUs a node holds that split the replica evenly (whole data-
    parallel ranks when ``data`` > 1)."""
    for value, name in ((tensor, "tensor"), (pipeline, "pipeline"), (data, "data"),
                        (gpus_per_node, "gpus_per_node")):
        if value < 1:
            raise ValueError(f"{name} must be at least 1: {value}")
    world = tensor * pipeline * data
    if world <= gpus_per_node:
        return world
    rank = tensor * pipeline
    if data > 1 and rank <= gpus_per_node:
        local = max(d for d in range(1, data + 1) if data % d == 0 and rank * d <= gpus_per_node)
        return rank * local
    unit = rank if data > 1 else world
    return max(d for d in range(1, gpus_per_node + 1) if unit % d == 0)


def group_shape(tensor: int, pipeline: int, data: int, gpus_per_node: int, *,
                gpus_per_pod: int | None = None, expert: bool = False) -> GroupShape:
    """The shape of one replica of tensor × pipeline × data GPUs on nodes of
    ``gpus_per_node`` GPUs; ``gpus_per_pod`` the profile's (None: derived,
    :func:`derived_gpus_per_pod`). Pure: the same numbers give the same shape."""
    derived = derived_gpus_per_pod(tensor, pipeline, data, gpus_per_node)
    per_pod = derived if gpus_per_pod is None else gpus_per_pod
    if per_pod < 1:
        raise ValueError(f"gpus_per_pod must be at least 1: {per_pod}")
    world = tensor * pipeline * data
    rank = tensor * pipeline
    problems: list[ShapeProblem] = []

    def problem(kind: ProblemKind, text: str) -> None:
        problems.append(ShapeProblem(kind, text))

    if world > gpus_per_node:
        if per_pod > gpus_per_node:
            problem("pod-above-node", f"each pod claims {per_pod} GPUs but a node has "
                    f"{gpus_per_node}: the pods never schedule")
        if world % per_pod:
            problem("uneven-pods", f"TP×PP×DP = {tensor}×{pipeline}×{data} = {world} GPUs is "
                    f"not a whole number of pods of {per_pod} GPUs (vLLM gives every node the "
                    "same number of ranks)")
        if data > 1 and rank > gpus_per_node:
            problem("rank-above-node", f"one data-parallel rank (TP×PP = {rank} GPUs) is "
                    f"larger than a node ({gpus_per_node} GPUs): gen launches data "
                    "parallelism only with whole ranks in each pod")
        elif data > 1 and per_pod % rank:
            problem("partial-rank", f"a pod of {per_pod} GPUs holds no whole number of "
                    f"data-parallel ranks of TP×PP = {rank} GPUs")
    pods = math.ceil(world / per_pod) if world > gpus_per_node else 1
    return GroupShape(tensor, pipeline, data, expert, gpus_per_node, per_pod, pods,
                      gpus_per_pod is not None, tuple(problems))


def _pools(svc: ServicePlan) -> list[PoolPlan]:
    from gen.fleet.placement import candidates

    offering = {c.pool.name for c in candidates(svc)}
    nvidia = [p for p in svc.pools if p.pool.platform == "nvidia" and p.gpu is not None]
    return [p for p in nvidia if p.name in offering] or nvidia


def shape_pool(svc: ServicePlan) -> PoolPlan | None:
    """The pool a service's shape is computed for: of the pools that offer its devices, the
    one with the fewest GPUs a node (the tightest it may land on); None without one."""
    pools = _pools(svc)
    return min(pools, key=lambda p: (p.pool.gpus_per_node, p.name)) if pools else None


def service_shape(svc: ServicePlan) -> GroupShape | None:
    """The group shape of an in-cluster vLLM service on its pools (None: no GPU request, or
    no NVIDIA pool). ``gpu.count`` is the GPUs of each pod: when the replica spans nodes and
    the profile leaves it unset, gen derives it. A ``gpu.count`` of at least tensor ×
    pipeline × data keeps the replica in one pod."""
    service = svc.service
    pool = shape_pool(svc)
    if service.engine != "vllm" or service.gpu is None or pool is None:
        return None
    par = service.parallelism
    declared = "count" in service.gpu.model_fields_set
    if declared and service.gpu.count >= par.gpus:
        # Every GPU of the replica in one pod: a one-pod replica, whatever the node size
        # (a pod larger than the nodes is the placement rules' GEN204/GEN330).
        return GroupShape(par.tensor, par.pipeline, par.data, par.expert,
                          max(pool.pool.gpus_per_node, service.gpu.count),
                          service.gpu.count, 1, True)
    spans = par.gpus > pool.pool.gpus_per_node
    per_pod = service.gpu.count if (declared or not spans) else None
    return group_shape(par.tensor, par.pipeline, par.data, pool.pool.gpus_per_node,
                       gpus_per_pod=per_pod, expert=par.expert)


def pod_layout(shape: GroupShape) -> tuple[str, ...]:
    """What each pod (node) of a group runs, one line a pod, leader first: its GPU ranks and
    pipeline stages (vLLM numbers ranks with tensor parallelism innermost, so rank r is in
    stage r ÷ TP), or its data-parallel ranks."""
    lines = []
    for index in range(shape.pods):
        role = ("leader (API server)" if index == 0 else
                "worker (--headless)")
        if shape.data > 1:
            first = index * shape.data_local
            what = (f"data-parallel ranks {first}–{first + shape.data_local - 1}, each "
                    f"TP={shape.tensor} × PP={shape.pipeline}")
        else:
            low, high = index * shape.gpus_per_pod, (index + 1) * shape.gpus_per_pod - 1
            stages = sorted({rank // shape.tensor for rank in range(low, high + 1)})
            split = "" if shape.gpus_per_pod % shape.tensor == 0 else ", a TP group split " \
                "across nodes"
            what = (f"ranks {low}–{high}, pipeline stage(s) "
                    f"{', '.join(map(str, stages))}{split}")
        lines.append(f"pod {index} ({role}): {shape.gpus_per_pod} GPU(s), {what}")
    return tuple(lines)


CLIQUE_LABEL = "nvidia.com/gpu.clique"
"""The node label of a node's NVLink clique (``<cluster UUID>.<clique id>``), which the GPU
Operator's feature discovery sets on multi-node NVLink systems and the DRA driver publishes
as the device attribute ``gpu.nvidia.com/cliqueID``."""


def nvlink_domain_nodes(pool: PoolPlan) -> int | None:
    """Nodes of one multi-node NVLink domain of ``pool``: its own ``nvlink_domain_nodes``,
    else its catalog GPU's rack-scale domain (GB200/GB300 NVL72: 18); None: none."""
    if pool.pool.nvlink_domain_nodes is not None:
        return pool.pool.nvlink_domain_nodes
    return pool.gpu.nvlink_domain_nodes if pool.gpu is not None else None


@dataclass(frozen=True)
class ComputeDomainPlan:
    """The ComputeDomain of a service whose replica spans trays of one NVLink domain.

    Attributes:
        name: the ComputeDomain's name.
        channel_template: the ResourceClaimTemplate the ComputeDomain controller creates
            for the IMEX channel (the pods claim from it; gen never renders it).
        domain_nodes: nodes of one NVLink domain of the pool.
    """

    name: str
    channel_template: str
    domain_nodes: int


def compute_domain(svc: ServicePlan) -> ComputeDomainPlan | None:
    """The ComputeDomain a service needs: a replica that spans nodes of a pool with a
    multi-node NVLink domain; None otherwise."""
    shape = service_shape(svc)
    pool = shape_pool(svc)
    if shape is None or pool is None or not shape.multi_node:
        return None
    nodes = nvlink_domain_nodes(pool)
    if nodes is None:
        return None
    name = svc.service.name
    return ComputeDomainPlan(f"{name}-imex", f"{name}-imex-channel", nodes)
