"""``gen apple-fit``: the unified-memory fit of a model on an Apple GPU, term by term."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from gen.cli._boundary import handle_errors
from gen.cli._options import profiles_option

if TYPE_CHECKING:
    from gen.apple.fit import AppleFitReport

__all__ = ["apple_fit_command"]


@click.command("apple-fit")
@click.option("--service", default=None,
              help="An Apple service of the profiles: the fit lint decided, per device.")
@click.option("--cluster", "clusters", multiple=True, help="Only these clusters (--service).")
@profiles_option
@click.option("--model", "model_name", default=None, help="Hugging Face id of a catalog model.")
@click.option("--chip", default=None, help="Apple chip, e.g. m2-ultra ('gen catalog gpus').")
@click.option("--memory-gb", type=click.IntRange(min=1), default=None,
              help="The Mac's unified memory (Apple's GB).")
@click.option("--vm-memory-gb", type=click.IntRange(min=1), default=None,
              help="Serve from a krunkit VM with this much RAM (Vulkan) instead of macOS.")
@click.option("--engine", type=click.Choice(["llama-server", "vllm-metal", "vllm-mlx"]),
              default="llama-server", show_default=True, help="Engine.")
@click.option("--max-model-len", type=click.IntRange(min=1), default=None,
              help="Context per request [default: the model's maximum].")
@click.option("--parallel", type=click.IntRange(min=1), default=1, show_default=True,
              help="llama-server slots (--parallel); each holds max-model-len tokens.")
@click.option("--gpu-memory-utilization", type=click.FloatRange(0, 1, min_open=True),
              default=0.90, show_default=True, help="gen's share of the cap.")
@click.option("--json", "as_json", is_flag=True, help="Print the versioned JSON report.")
@handle_errors
def apple_fit_command(service: str | None, clusters: tuple[str, ...], profiles_dir: Path,
                      model_name: str | None, chip: str | None, memory_gb: int | None,
                      vm_memory_gb: int | None, engine: str, max_model_len: int | None,
                      parallel: int, gpu_memory_utilization: float, as_json: bool) -> int:
    """Does a model fit an Apple GPU (a Mac's Metal cap or a krunkit VM's window)?

    Either --service NAME (the decision lint made, for each pool or Mac of the service) or
    --model with --chip and --memory-gb. Exit 0 if every report fits, 1 if not.
    """
    if service is not None:
        from gen.apple.decide import service_fits
        from gen.pipeline import load_plan

        if model_name or chip or memory_gb or vm_memory_gb:
            raise click.UsageError("--service takes no --model, --chip or memory options")
        found = service_fits(load_plan(profiles_dir), service, clusters)
    else:
        found = [("", _direct(model_name, chip, memory_gb, vm_memory_gb, engine,
                              max_model_len, parallel, gpu_memory_utilization))]
    reports = [r for _, r in found]
    if as_json:
        data = {"schema_version": 1, "service": service,
                "reports": [{"where": where, **r.to_json()} for where, r in found]}
        click.echo(json.dumps(data, indent=2))
    else:
        blocks = [(f"{where}\n" if where else "") + r.format() for where, r in found]
        click.echo("\n\n".join(blocks))
    return 0 if all(r.fits for r in reports) else 1


def _direct(model_name: str | None, chip: str | None, memory_gb: int | None,
            vm_memory_gb: int | None, engine: str, max_model_len: int | None,
            parallel: int, utilization: float) -> AppleFitReport:
    from gen.apple.chips import (
        krunkit_vm_gpu_memory_bytes,
        lookup_chip,
        macos_gpu_fraction,
        usable_unified_memory_bytes,
    )
    from gen.apple.fit import AppleGPU, apple_fit
    from gen.serving.model_catalog import model_catalog

    if model_name is None or chip is None or memory_gb is None:
        raise click.UsageError("give --service NAME, or --model, --chip and --memory-gb")
    if parallel > 1 and engine != "llama-server":
        raise click.UsageError("--parallel is for --engine llama-server")
    found = lookup_chip(chip)
    if vm_memory_gb is not None:
        if engine != "llama-server":
            raise click.UsageError("a krunkit VM serves llama-server only (Vulkan)")
        device = AppleGPU(
            f"{found.name} Venus GPU (krunkit VM with {vm_memory_gb} GB RAM)",
            krunkit_vm_gpu_memory_bytes(vm_memory_gb, memory_gb), "venus",
            f"krunkit's VRAM window for a {vm_memory_gb} GB VM on a {memory_gb} GB Mac")
    else:
        device = AppleGPU(
            f"{found.name} ({memory_gb} GB)", usable_unified_memory_bytes(memory_gb), "metal",
            f"macOS's default Metal working set, {macos_gpu_fraction(memory_gb)} of "
            f"{memory_gb} GB")
    return apple_fit(model_catalog().lookup(model_name), device, engine=engine,
                     max_model_len=max_model_len, slots=parallel,
                     gpu_memory_utilization=utilization)
