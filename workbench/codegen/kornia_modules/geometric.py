"""The workbench's own Kornia modules for geometric ops and distortions."""
from __future__ import annotations

import kornia
import kornia.augmentation as K
import torch
