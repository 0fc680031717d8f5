"""Tests for gen.kueue.build and gen.kueue.config: the objects of a Kueue cluster, the
decisions other builders read, and that the ResourceQuotas give way to them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gen.fleet.manifests import PRIORITY_LABEL, QUEUE_LABEL
from tests.kueue.fleet import KUEUE_CLUSTER, cluster


def _objects(tmp_path: Path, **changes: str) -> dict[str, list[dict[str, Any]]]:
    built = cluster(tmp_path, **changes)
    found: dict[str, list[dict[str, Any]]] = {}
    for spec in built.manifests:
        found.setdefault(spec.template, []).append(dict(spec.context))
    return found


def test_flavors_queues_and_local_queues(tmp_path: Path) -> None:
    """A flavor per NVIDIA pool, a ClusterQueue and a LocalQueue per namespace, the
    priority class once; no ResourceQuota."""
    objects = _objects(tmp_path)
    assert [o["name"] for o in objects["kueue/resourceflavor.yaml.j2"]] == ["h100", "mig"]
    queues = {o["name"]: o["spec"] for o in objects["kueue/clusterqueue.yaml.j2"]}
    assert sorted(queues) == ["gpu-batch", "gpu-inference"]
    inference = queues["gpu-inference"]
    assert isinstance(inference, dict)
    assert inference["cohortName"] == "lab"
    assert inference["preemption"] == {"reclaimWithinCohort": "LowerPriority",
                                       "withinClusterQueue": "LowerPriority"}
    assert inference["namespaceSelector"] == {
        "matchLabels": {"kubernetes.io/metadata.name": "inference"}}
    [group] = inference["resourceGroups"]
    assert group["coveredResources"] == ["deviceclass.gen.dev/h100"]
    assert group["flavors"] == [{"name": "h100", "resources": [
        {"name": "deviceclass.gen.dev/h100", "nominalQuota": "8"}]}]
    batch = queues["gpu-batch"]
    assert isinstance(batch, dict)
    [group] = batch["resourceGroups"]
    assert all(len(f["resources"]) == len(group["coveredResources"]) for f in group["flavors"])
    locals_ = {(o["namespace"], o["cluster_queue"]) for o in objects["kueue/localqueue.yaml.j2"]}
    assert locals_ == {("batch", "gpu-batch"), ("inference", "gpu-inference")}
    assert [(o["name"], o["value"]) for o in
            objects["kueue/workloadpriorityclass.yaml.j2"]] == [("serving", 100)]
    assert "dra/resourcequota.yaml.j2" not in objects


def test_resourcequota_engine_keeps_resourcequotas(tmp_path: Path) -> None:
    """Without Kueue the quotas stay ResourceQuotas and nothing of Kueue is rendered."""
    plain = KUEUE_CLUSTER.replace("quota_engine: kueue\n", "")
    objects = _objects(tmp_path, **{"cluster.yaml": plain})
    assert len(objects["dra/resourcequota.yaml.j2"]) == 3
    assert not any(t.startswith("kueue/") for t in objects)


def test_queue_label_on_the_deployment(tmp_path: Path) -> None:
    """The vLLM Deployment carries its LocalQueue and priority class (queue_labels)."""
    built = cluster(tmp_path)
    assert built.local_queues == {"llama-70b": "gpu"}
    [deployment] = [s for s in built.manifests if s.template == "vllm/deployment.yaml.j2"]
    assert deployment.context["labels"][QUEUE_LABEL] == "gpu"
    assert deployment.context["labels"][PRIORITY_LABEL] == "serving"


def test_kueue_chart_values(tmp_path: Path) -> None:
    """The Configuration maps each counted DeviceClass, ignores undeclared resources and
    integrates Deployments; the gates it relies on are on."""
    built = cluster(tmp_path)
    values = built.kueue_values
    config = json.loads(values["managerConfig"]["controllerManagerConfigYaml"])
    assert config["kind"] == "Configuration"
    assert config["integrations"] == {"frameworks": ["deployment"]}
    assert config["resources"] == {
        "quotaCheckStrategy": "IgnoreUndeclared",
        "deviceClassMappings": [
            {"name": "deviceclass.gen.dev/h100", "deviceClassNames": ["h100"]},
            {"name": "deviceclass.gen.dev/mig-3g", "deviceClassNames": ["mig-3g"]},
        ],
    }
    assert values["controllerManager"]["featureGates"] == [
        {"name": "KueueDRAIntegration", "enabled": True},
        {"name": "QuotaCheckStrategy", "enabled": True},
    ]


def test_kueue_chart_is_a_platform_chart(tmp_path: Path) -> None:
    """The GitOps builder installs the pinned Kueue chart from its OCI registry, in a
    'restricted' namespace, with the values the Kueue capability decided."""
    from gen.gitops.build import platform_charts
    from gen.pins import pin

    built = cluster(tmp_path)
    [kueue] = [c for c in platform_charts(built) if c.release == "kueue"]
    assert kueue.repo_url == "oci://registry.k8s.io/kueue/charts"
    assert kueue.version == pin("kueue").version.removeprefix("v")
    assert kueue.namespace == "kueue-system"
    assert kueue.namespace_labels["pod-security.kubernetes.io/enforce"] == "restricted"
    assert kueue.values == built.kueue_values
    plain = cluster(tmp_path / "plain", **{"cluster.yaml": KUEUE_CLUSTER.replace(
        "quota_engine: kueue\n", "")})
    assert not [c for c in platform_charts(plain) if c.release == "kueue"]
