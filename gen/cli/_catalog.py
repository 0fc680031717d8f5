"""``gen catalog gpus|models``: the built-in catalogs."""

from __future__ import annotations

import json
from typing import Any

import click

from gen.cli._boundary import handle_errors


def gpu_rows() -> list[dict[str, Any]]:
    """Every catalog accelerator as a JSON-ready row: NVIDIA GPUs, then Apple chips."""
    from gen.apple.chips import apple_chips
    from gen.nvidia.gpus import gpu_catalog

    rows: list[dict[str, Any]] = []
    for gpu in gpu_catalog().all():
        rows.append({
            "id": gpu.id,
            "vendor": gpu.vendor,
            "name": gpu.name,
            "product_name": gpu.product_name,
            "pci_device_ids": list(gpu.pci_device_ids),
            "architecture": gpu.architecture,
            "compute_capability": gpu.compute_capability,
            "memory_mib": gpu.memory_mib,
            # What vLLM budgets from (gen fit's "CUDA-visible total") and whether a log gave it.
            "cuda_visible_mib": gpu.cuda_visible_mib,
            "cuda_total_logged": gpu.cuda_total_mib is not None,
            "unified_memory": gpu.unified_memory,
            "mig_units": gpu.mig_units,
            "mig_profiles": [p.name for p in gpu.mig_profiles],
        })
    for chip in apple_chips():
        rows.append({
            "id": chip.id,
            "vendor": "apple",
            "name": chip.name,
            "product_name": chip.name,
            "pci_device_ids": [],
            "architecture": f"Apple {chip.family}",
            "compute_capability": None,
            "memory_mib": None,
            "cuda_visible_mib": None,
            "cuda_total_logged": False,
            "memory_gb_options": list(chip.memory_gb_options),
            "gpu_cores": list(chip.gpu_cores),
            "unified_memory": True,
            "mig_units": 0,
            "mig_profiles": [],
        })
    return rows


def model_rows(family: str | None = None, min_parameters: int | None = None,
               max_parameters: int | None = None) -> list[dict[str, Any]]:
    """The catalog models that pass the filters, as JSON-ready rows."""
    from gen.serving.model_catalog import model_catalog

    specs = model_catalog().select(family=family, min_parameters=min_parameters,
                                   max_parameters=max_parameters)
    return [m.to_json() for m in specs]


_SIZE_SUFFIXES = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}


class _ParameterCount(click.ParamType[int]):
    """A parameter count: ``7B``, ``500M``, ``1.5T`` or a plain integer."""

    name = "COUNT"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        text = str(value).strip().lower()
        suffix = text[-1:] if text[-1:] in _SIZE_SUFFIXES else ""
        number = text[: len(text) - len(suffix)]
        try:
            count = float(number) * _SIZE_SUFFIXES[suffix]
        except ValueError:
            self.fail(f"{value!r} is not a parameter count (e.g. 7B, 500M, 1T)", param, ctx)
        if not 0 <= count < 10**16:
            self.fail(f"{value!r} is out of range", param, ctx)
        return int(count)


def _experts(row: dict[str, Any]) -> str:
    if not row["experts"]:
        return "-"
    shared = f"+{row['shared_experts']}" if row["shared_experts"] else ""
    return f"{row['experts_per_token']}/{row['experts']}{shared}"


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines)


@click.group("catalog")
def catalog_command() -> None:
    """Show the built-in GPU and model catalogs."""


@catalog_command.command("gpus")
@click.option("--json", "as_json", is_flag=True, help="JSON array on stdout.")
@handle_errors
def gpus_command(as_json: bool) -> None:
    """GPUs (and Apple chips) gen knows: memory, architecture, MIG profiles."""
    rows = gpu_rows()
    if as_json:
        click.echo(json.dumps(rows, indent=2, sort_keys=True))
        return
    table = []
    for r in rows:
        if r["vendor"] == "apple":
            memory = "unified " + "/".join(str(m) for m in r["memory_gb_options"]) + " GB"
            ids = f"{'/'.join(str(c) for c in r['gpu_cores'])} GPU cores"
        else:
            memory = f"{r['memory_mib']} MiB" + (" unified" if r["unified_memory"] else "")
            ids = ",".join(r["pci_device_ids"])
        table.append([r["id"], r["product_name"], r["architecture"], memory, ids,
                      str(len(r["mig_profiles"])) if r["mig_profiles"] else "-"])
    click.echo(_table(["ID", "PRODUCT", "ARCH", "MEMORY", "PCI IDS / CORES", "MIG"], table))
    click.echo("")
    click.echo(_mig_profile_lines(rows))


def _mig_profile_lines(rows: list[dict[str, Any]]) -> str:
    """The MIG profile names the table's MIG column counts, one line per distinct profile
    list with the GPUs that share it (most MIG-capable products share theirs with a sibling)."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for r in rows:
        if r["mig_profiles"]:
            groups.setdefault(tuple(r["mig_profiles"]), []).append(r["id"])
    lines = ["MIG PROFILES (what the MIG column counts; the names layouts and classes take)"]
    for profiles, ids in groups.items():
        lines.append(f"  {', '.join(ids)}:")
        lines.append(f"    {' '.join(profiles)}")
    return "\n".join(lines)


@catalog_command.command("models")
@click.option("--family", default=None, metavar="TEXT",
              help="Only models whose organisation, name or architecture contains TEXT "
              "(case-insensitive): qwen, llama, deepseek, ...")
@click.option("--min-params", "min_parameters", type=_ParameterCount(), default=None,
              help="Only models with at least this many parameters (7B, 500M, 1T).")
@click.option("--max-params", "max_parameters", type=_ParameterCount(), default=None,
              help="Only models with at most this many parameters.")
@click.option("--json", "as_json", is_flag=True, help="JSON array on stdout.")
@handle_errors
def models_command(family: str | None, min_parameters: int | None,
                   max_parameters: int | None, as_json: bool) -> None:
    """Models gen knows: size, layers, heads, experts, context."""
    rows = model_rows(family, min_parameters, max_parameters)
    if as_json:
        click.echo(json.dumps(rows, indent=2, sort_keys=True))
        return
    if not rows:
        click.echo("no catalog model matches these filters", err=True)
        return
    table = [
        [r["id"], f"{r['parameters'] / 1e9:.1f}B", r["weight_dtype"] + (
            f"/{r['quantization']}" if r["quantization"] not in (None, r["weight_dtype"]) else ""),
         str(r["layers"]), f"{r['attention_heads']}/{r['kv_heads']}",
         "mla" if r["kv_lora_rank"] else "gqa", _experts(r), str(r["max_context"]),
         f"{r['weight_bytes'] / 2**30:.1f}"]
        for r in rows
    ]
    click.echo(_table(["MODEL", "PARAMS", "DTYPE", "LAYERS", "HEADS/KV", "ATTN", "EXPERTS",
                       "CONTEXT", "GiB"], table))
