"""OpenCV's 8-bit RGB -> Lab lightness tables (RGB2Lab_b), shared by the Kornia module and the DALI
function that reproduce cv2's CLAHE on L (kornia_modules/color.py, dali_ops/clahe.py).

Example:
    >>> gamma, lightness = opencv_lab_tables()
    >>> len(gamma), int(gamma[255]), len(lightness), int(lightness[2040])
    (256, 2040, 2041, 255)
"""
import numpy as np


def opencv_lab_tables():
    """(gamma, lightness) as float64 arrays: each 8-bit value's sRGB-linearised level in 1/8 steps
    of a level (0..2040), and the 8-bit L of each fixed-point luminance y = Y * 255 * 8 (0..2040);
    rounded half to even as OpenCV rounds, so that cv2's L follows bit for bit."""
    v = np.arange(256, dtype=np.float64) / 255.0
    gamma = np.round(np.where(v <= 0.04045, v / 12.92, ((v + 0.055) / 1.055) ** 2.4) * (255.0 * 8.0))
    t = np.arange(2041, dtype=np.float64) / (255.0 * 8.0)
    cube_root = np.round(np.where(t < 0.008856, t * 7.787 + 16.0 / 116.0, t ** (1.0 / 3.0)) * 32768.0)
    lightness = np.clip(np.floor((296.0 * cube_root - 1336934.0 + 16384.0) / 32768.0), 0.0, 255.0)
    return gamma, lightness
