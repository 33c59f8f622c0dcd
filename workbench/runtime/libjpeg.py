"""JPEG coding as libjpeg codes with its defaults: what torchvision's v2.JPEG (encode_jpeg, then
decode_jpeg) and PIL do, 4:2:0 chroma and the integer DCT. The Kornia module and the Albumentations
transform of JpegCompression's "libjpeg" codec share it; DALI's fn.jpeg_compression_distortion codes so
already.

Example:
    >>> import numpy as np
    >>> image = np.full((16, 16, 3), 128, np.uint8)
    >>> bool((libjpeg_round_trip(image, 90) == image).all())
    True
"""
import io

import numpy as np
from PIL import Image


def libjpeg_round_trip(image, quality):
    """The uint8 HxWx3 `image` encoded at the whole-number `quality` (1-100) and decoded again."""
    encoded = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(image)).save(encoded, "JPEG", quality=int(quality))
    return np.array(Image.open(io.BytesIO(encoded.getvalue())).convert("RGB"))
