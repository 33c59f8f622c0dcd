"""Colour ops in the Albumentations recipes' dialect: brightness/contrast together, HSV shifts, RGB shifts, CLAHE."""

OPS = ()
