"""The machine a job runs on: a one-line description recorded next to every benchmark result, and
whether its CPU computes bf16 in hardware (which decides the embedded model's and the distillation
recipes' ``auto`` precision)."""

from __future__ import annotations

import functools
import os
import platform


@functools.cache  # asked for every embedded model id; the CPU does not change within a process
def cpu_has_native_bf16() -> bool:
    """Whether this CPU multiplies bf16 matrices in hardware (AVX512-BF16 or AMX tiles).

    Without them PyTorch runs bf16 matrix products in a reference kernel: on an AVX2-only CPU the
    embedded model's answer prompts took 3.9x as long in bf16 as in fp32, and a distillation step
    under bf16 autocast took minutes (docs/bench-models.md, "Embedded model dtype and the CPU")."""
    import torch

    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(bool(getattr(torch.cpu, name, lambda: False)()) for name in checks)


def cpu_name() -> str:
    """The CPU's model name as the kernel reports it ('' where /proc/cpuinfo is not readable)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def machine_description() -> str:
    """``"x86_64 AMD EPYC (no native bf16), 2 cores, 24 GiB, Python 3.11.7"``."""
    import psutil

    memory = round(psutil.virtual_memory().total / 2**30)
    bf16 = "native bf16" if cpu_has_native_bf16() else "no native bf16"
    cpu = " ".join(part for part in (platform.machine(), cpu_name()) if part)
    return f"{cpu} ({bf16}), {os.cpu_count()} cores, {memory} GiB, Python {platform.python_version()}"
