"""The workbench's own Kornia modules for colour ops."""
from __future__ import annotations

import kornia
import kornia.augmentation as K
import torch
