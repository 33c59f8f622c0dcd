"""The workbench's own Kornia modules for blur, noise and degradation ops."""
from __future__ import annotations

import kornia
import kornia.augmentation as K
import torch
