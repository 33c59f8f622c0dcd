"""The workbench's own Kornia modules for weather ops (rain, fog, sun flare, shadow)."""
from __future__ import annotations

import kornia
import kornia.augmentation as K
import torch
