"""Shared fixtures: small real photographs and the DESIGN.md example chain."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

os.environ.setdefault("KORNIA_INSTALLATION_MODE", "RAISE")

import workbench as wb
from workbench.examples import IMAGENET_TRAIN

ROOT = Path(__file__).resolve().parent.parent

DESIGN_CHAIN = IMAGENET_TRAIN


@pytest.fixture(scope="session")
def sample_images() -> list[np.ndarray]:
    return wb.load_images(ROOT / "sample_data")


@pytest.fixture(scope="session")
def small_images(sample_images) -> list[np.ndarray]:
    """Six sample photos cut to the same 96x128 size (centre crops of downscaled photos)."""
    out = []
    for img in sample_images[:6]:
        pil = Image.fromarray(img)
        scale = 144 / min(pil.size)
        pil = pil.resize((round(pil.width * scale), round(pil.height * scale)), Image.BILINEAR)
        w, h = pil.size
        out.append(np.asarray(pil)[(h - 96) // 2:(h - 96) // 2 + 96, (w - 128) // 2:(w - 128) // 2 + 128].copy())
    return out


@pytest.fixture(scope="session")
def small_folder(tmp_path_factory, small_images) -> Path:
    """The small images as lossless PNG files, names in the same order as the list."""
    folder = tmp_path_factory.mktemp("small_images")
    for i, img in enumerate(small_images):
        Image.fromarray(img).save(folder / f"img_{i:02d}.png")
    return folder


@pytest.fixture
def design_chain() -> wb.Chain:
    return wb.Chain.from_dict(DESIGN_CHAIN)


def random_step_dict(op: str, rng: np.random.Generator, p: float | None = None) -> dict:
    """A valid step for `op` with every parameter drawn at random from its valid domain."""
    spec = wb.get_op(op)
    if p is None:
        p = 1.0 if spec.always_applies else round(float(rng.uniform(0, 1)), 3)
    return {"op": op, "params": {prm.name: prm.random(rng) for prm in spec.params}, "p": p,
            "enabled": bool(rng.integers(2)) or True}
