"""What the measurement ran on, for estimates and benchmark tables."""
from __future__ import annotations

import os
import platform


def machine_info(device: str = "cpu") -> dict[str, str]:
    """Machine, Python and library versions (those importable), and the device's name.

    Example:
        >>> info = machine_info()
        >>> info["device"], int(info["cpu_cores"]) >= 1
        ('cpu', True)
    """
    import torch

    info = {"machine": platform.machine(), "cpu_cores": str(os.cpu_count()), "python": platform.python_version(),
            "torch": torch.__version__, "torch_threads": str(torch.get_num_threads()),
            "device": torch.cuda.get_device_name(device) if device.startswith("cuda") else "cpu"}
    from importlib import metadata

    # Installed versions, read without importing the libraries (importing DALI takes seconds).
    for key, distribution in (("kornia", "kornia"), ("dali", "nvidia-dali-cuda120"), ("dali", "nvidia-dali-cuda130"),
                              ("albumentations", "albumentations")):
        try:
            info[key] = metadata.version(distribution)
        except metadata.PackageNotFoundError:
            pass
    return info


def describe_machine(info: dict[str, str]) -> str:
    """One line: 'x86_64, 2 cores, cpu; python 3.11.7, torch 2.13.0+cpu, kornia 0.9.0, dali 2.4.0'.

    Example:
        >>> describe_machine({"machine": "x86_64", "cpu_cores": "2", "device": "cpu", "python": "3.11"})
        'x86_64, 2 cores, cpu; python 3.11'
    """
    versions = ", ".join(f"{k} {info[k]}" for k in ("python", "torch", "kornia", "dali", "albumentations")
                         if k in info)
    return f"{info['machine']}, {info['cpu_cores']} cores, {info['device']}; {versions}"
