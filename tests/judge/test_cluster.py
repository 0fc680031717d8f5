"""tools.judge.cluster: the real control plane starts, answers, refuses and stops cleanly."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tools.judge.build import ensure
from tools.judge.cluster import ControlPlane, running


def _config_map(name: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"}, "data": {"k": "v"}, **extra}


def test_version_is_the_pin(control_plane: ControlPlane) -> None:
    """The API server reports the pinned release (the build stamps it)."""
    body = control_plane.request("GET", "/version").body
    assert body["gitVersion"] == "v1.37.2"
    assert (body["major"], body["minor"]) == ("1", "37")


def test_dry_run_apply_persists_nothing(control_plane: ControlPlane) -> None:
    """A dry-run apply is validated and answered, and nothing is stored."""
    response = control_plane.apply(_config_map("judge-dry"), dry_run=True)
    assert response.ok, response.message
    assert control_plane.get("v1", "ConfigMap", "judge-dry", "default").status == 404


def test_strict_field_validation_refuses_unknown_fields(control_plane: ControlPlane) -> None:
    """Server-side apply with strict validation refuses a field the schema lacks."""
    response = control_plane.apply(_config_map("judge-unknown", spek={"x": 1}), dry_run=True)
    assert not response.ok
    assert "spek" in response.message


def test_admission_refuses_a_bad_device_class(control_plane: ControlPlane) -> None:
    """The API server compiles DeviceClass CEL at admission: a syntax error is refused."""
    cls = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
           "metadata": {"name": "judge-broken"},
           "spec": {"selectors": [{"cel": {"expression": "device.driver =="}}]}}
    response = control_plane.apply(cls, dry_run=True)
    assert response.status == 422
    assert "compilation failed" in response.message


def test_list_items_are_addressable(control_plane: ControlPlane) -> None:
    """Listed items carry apiVersion and kind, so they can be deleted by path."""
    control_plane.must(control_plane.apply(_config_map("judge-listed")), "apply")
    items = [i for i in control_plane.list("v1", "ConfigMap", "default")
             if i["metadata"]["name"] == "judge-listed"]
    assert items and items[0]["kind"] == "ConfigMap"
    assert control_plane.delete(items[0]).ok


def test_running_stops_every_process(tmp_path: Path) -> None:
    """Leaving the block stops etcd and the three components, even after an error inside."""
    pids = []
    with pytest.raises(RuntimeError, match="inside"), \
            running(tmp_path / "plane", ensure("controlplane")) as plane:
        pids = [p.popen.pid for p in plane.processes]
        assert len(pids) == 4
        raise RuntimeError("inside")
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
