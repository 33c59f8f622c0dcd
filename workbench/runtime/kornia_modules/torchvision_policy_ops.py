"""The 15 ops of torchvision's augmentation policies (v2.RandAugment, v2.TrivialAugmentWide, v2.AutoAugment) in
plain torch, bit for bit what torchvision's `_AutoAugmentBase._apply_image_or_video_transform` gives on a uint8
CHW tensor with fill=None (the policies' default: outside the image is 0), on any device.

Conventions:
- One image: a uint8 (C, H, W) tensor, C = 3 (RGB; 1 works too where torchvision allows it). The result is a
  uint8 (C, H, W) tensor on the same device. Identity, and posterize at 8 bits, return the input itself, as
  torchvision does; every other op returns a new tensor.
- Magnitudes are in reported units (see `tv_policy_op`): shear angles in degrees, translations in pixels
  (truncated by int()), rotation in degrees counter-clockwise, the colour ops' factors (1 + torchvision's
  magnitude), posterize's bits kept (truncated by int()), solarize's threshold as a fraction of 255.
- Exactness comes from doing torchvision's float32 arithmetic with the same torch calls in the same order:
  float results go back to uint8 by truncation (the colour ops) or by rounding half to even (sharpness's blur,
  the resampled geometric ops); the grey of saturation and contrast is floored. Fused forms such as
  `add(x, y, alpha=k)` are kept as such since their rounding can differ from `x + k * y` (it does in the blend),
  and the sampling grid is built with the same tensor shapes and layouts. On CUDA the same calls run the same
  kernels as torchvision's do there; CUDA's grid_sample unnormalizes coordinates with another formula than the
  CPU's, so a true rounding tie of nearest resampling may go the other way than on the CPU (for torchvision
  too). TF32 matmul, when a program enables it, changes torchvision's grid as it changes ours.
- Every top-level name starts with tv_policy_ / TV_POLICY_: the Kornia export copies the definitions of all
  runtime/kornia_modules files into one file.
"""
import math

import torch

TV_POLICY_INTERPOLATIONS = ("nearest", "bilinear")

# torchvision's grey: ITU-R 601-2 luma weights, accumulated in float32 in this order.
TV_POLICY_GRAY_WEIGHTS = (0.2989, 0.587, 0.114)


def tv_policy_check_factor(factor: float) -> float:
    """`factor` as a float, refused when negative (as torchvision's colour adjustments refuse it).

    >>> tv_policy_check_factor(1)
    1.0
    """
    factor = float(factor)
    if not factor >= 0.0:
        raise ValueError(f"a colour factor must be non-negative, got {factor}")
    return factor


def tv_policy_gray(image: torch.Tensor) -> torch.Tensor:
    """The float32 (1, H, W) grey of a uint8 RGB `image`, floored as torchvision floors it for integer images.
    The weights add up to 0.9999, so white is 254:

    >>> tv_policy_gray(torch.tensor([[[255]], [[255]], [[255]]], dtype=torch.uint8))
    tensor([[[254.]]])
    """
    r, g, b = image.unbind(dim=-3)
    wr, wg, wb = TV_POLICY_GRAY_WEIGHTS
    # The uint8 planes are promoted by the first product; the fused adds keep torchvision's rounding.
    gray = torch.add(torch.add(r * wr, g, alpha=wg), b, alpha=wb)
    return gray.unsqueeze(dim=-3).floor()


def tv_policy_blend(image: torch.Tensor, other: torch.Tensor, ratio: float) -> torch.Tensor:
    """ratio * image + (1 - ratio) * other in float32, clamped to [0, 255] and truncated to uint8.

    >>> tv_policy_blend(torch.tensor([100], dtype=torch.uint8), torch.tensor([0.0]), 0.5)
    tensor([50], dtype=torch.uint8)
    """
    ratio = float(ratio)
    return torch.add(image * ratio, other, alpha=1.0 - ratio).clamp(0, 255).to(torch.uint8)


def tv_policy_identity(image: torch.Tensor, magnitude: float = math.nan) -> torch.Tensor:
    """`image` itself (torchvision's Identity); `magnitude` is ignored."""
    return image


def tv_policy_brightness(image: torch.Tensor, factor: float) -> torch.Tensor:
    """torchvision's Brightness: image * factor, clamped, truncated.

    >>> tv_policy_brightness(torch.tensor([[[10, 200]]], dtype=torch.uint8), 1.5)
    tensor([[[ 15, 255]]], dtype=torch.uint8)
    """
    factor = tv_policy_check_factor(factor)
    return (image * factor).clamp(0, 255).to(torch.uint8)


def tv_policy_color(image: torch.Tensor, factor: float) -> torch.Tensor:
    """torchvision's Color (saturation): a blend of the image with its floored grey; one channel is kept.

    >>> tv_policy_color(torch.tensor([[[200]], [[0]], [[0]]], dtype=torch.uint8), 0.0).flatten()
    tensor([59, 59, 59], dtype=torch.uint8)
    """
    factor = tv_policy_check_factor(factor)
    if image.shape[-3] == 1:
        return image
    return tv_policy_blend(image, tv_policy_gray(image), factor)


def tv_policy_contrast(image: torch.Tensor, factor: float) -> torch.Tensor:
    """torchvision's Contrast: a blend of the image with the mean of its floored grey (of the image, one channel).

    >>> tv_policy_contrast(torch.tensor([[[0, 100]]], dtype=torch.uint8), 0.5)
    tensor([[[25, 75]]], dtype=torch.uint8)
    """
    factor = tv_policy_check_factor(factor)
    gray = tv_policy_gray(image) if image.shape[-3] == 3 else image.to(torch.float32)
    # One reduction over the (1, H, W) grey, as torchvision does: another split could round differently.
    mean = gray.mean(dim=(-3, -2, -1), keepdim=True)
    return tv_policy_blend(image, mean, factor)


def tv_policy_sharpness(image: torch.Tensor, factor: float) -> torch.Tensor:
    """torchvision's Sharpness: the inner pixels blended with a rounded 3x3 blur (1s around a 5, over 13); the
    one-pixel border is kept, and images of 2 pixels or fewer across are returned as they are.

    >>> flat = torch.full((3, 4, 4), 9, dtype=torch.uint8)
    >>> bool((tv_policy_sharpness(flat, 1.9) == flat).all())
    True
    """
    factor = tv_policy_check_factor(factor)
    channels, height, width = image.shape[-3:]
    if image.numel() == 0 or height <= 2 or width <= 2:
        return image
    edge, middle = 1.0 / 13.0, 5.0 / 13.0
    kernel = torch.tensor([[edge, edge, edge], [edge, middle, edge], [edge, edge, edge]], dtype=torch.float32,
                          device=image.device).expand(channels, 1, 3, 3)
    # Contiguous: a channels-last input would send the blur on CUDA to cuDNN, where TF32 (on by default there)
    # rounds the 1/13 weights enough to move a rounded blur by 1. Any float32 order is safe: a 3x3 sum of integers
    # over 13 is never within 1/26 of a half.
    out = image.to(torch.float32).contiguous()
    blurred = torch.nn.functional.conv2d(out, kernel, groups=channels).round()
    inner = out[..., 1:-1, 1:-1]
    # inner + (1 - factor) * (blurred - inner), written into `out` through the view, fused as torchvision's.
    inner.add_(blurred - inner, alpha=1.0 - factor)
    return out.clamp(0, 255).to(torch.uint8)


def tv_policy_posterize(image: torch.Tensor, bits: float) -> torch.Tensor:
    """torchvision's Posterize: keeps the int(bits) high bits of each value; 8 bits returns the image itself.

    >>> tv_policy_posterize(torch.tensor([255, 100], dtype=torch.uint8), 2)
    tensor([192,  64], dtype=torch.uint8)
    """
    bits = int(bits)
    if not 0 <= bits <= 8:
        raise ValueError(f"posterize keeps 0 to 8 bits, got {bits}")
    if bits == 8:
        return image
    return image & (((1 << bits) - 1) << (8 - bits))


def tv_policy_solarize(image: torch.Tensor, fraction: float) -> torch.Tensor:
    """torchvision's Solarize: values >= 255 * fraction are inverted (fraction 0 inverts all, 1 only 255).

    >>> tv_policy_solarize(torch.tensor([0, 127, 128, 255], dtype=torch.uint8), 0.5)
    tensor([  0, 127, 127,   0], dtype=torch.uint8)
    """
    threshold = 255 * float(fraction)
    if threshold > 255:
        raise ValueError(f"the solarize threshold is a fraction of 255 at most 1, got {fraction}")
    return torch.where(image >= threshold, image.bitwise_not(), image)


def tv_policy_auto_contrast(image: torch.Tensor, magnitude: float = math.nan) -> torch.Tensor:
    """torchvision's AutoContrast: each channel stretched from [min, max] to [0, 255] in float32, truncated; a
    flat channel is kept. `magnitude` is ignored. The float32 scale can leave the top just under 255:

    >>> tv_policy_auto_contrast(torch.tensor([[[50, 100, 150]]], dtype=torch.uint8))
    tensor([[[  0, 127, 254]]], dtype=torch.uint8)
    """
    values = image.to(torch.float32)
    low = values.amin(dim=(-2, -1), keepdim=True)
    high = values.amax(dim=(-2, -1), keepdim=True)
    flat = high == low
    # Multiplied by the reciprocal, not divided by 255, as torchvision does (the two can round apart).
    inverse_scale = torch.where(flat, 1.0, (high - low) * (1.0 / 255))
    low = torch.where(flat, 0.0, low)
    return ((values - low) / inverse_scale).clamp(0, 255).to(torch.uint8)


def tv_policy_equalize(image: torch.Tensor, magnitude: float = math.nan) -> torch.Tensor:
    """torchvision's Equalize (PIL's scheme), per channel: with `step` = (pixels not at the channel's largest
    value) // 255, value v maps to (pixels below v + step // 2) // step, clamped to 255; a channel whose step is 0
    is kept. Integer arithmetic throughout. `magnitude` is ignored.

    >>> tv_policy_equalize(torch.arange(0, 256, dtype=torch.uint8).view(1, 16, 16)).flatten()[:4]
    tensor([0, 1, 2, 3], dtype=torch.uint8)
    """
    if image.numel() == 0:
        return image
    channels = image.shape[-3]
    flat = image.reshape(channels, -1).to(torch.long)
    counts = torch.zeros(channels, 256, dtype=torch.long, device=image.device)
    counts.scatter_add_(1, flat, torch.ones_like(flat))
    at_top = counts.gather(1, flat.amax(dim=1, keepdim=True))
    step = (flat.shape[1] - at_top) // 255
    below = counts.cumsum(dim=1)[:, :-1]
    # max(step, 1) only spares a division by zero: those channels are kept below.
    lut = ((below + step // 2) // step.clamp(min=1)).clamp(0, 255)
    lut = torch.cat([torch.zeros_like(lut[:, :1]), lut], dim=1).to(torch.uint8)
    equalized = lut.gather(1, flat).view(image.shape)
    return torch.where(step.view(channels, 1, 1) > 0, equalized, image)


def tv_policy_invert(image: torch.Tensor, magnitude: float = math.nan) -> torch.Tensor:
    """torchvision's Invert: 255 - value. `magnitude` is ignored.

    >>> tv_policy_invert(torch.tensor([0, 55], dtype=torch.uint8))
    tensor([255, 200], dtype=torch.uint8)
    """
    return image.bitwise_not()


def tv_policy_inverse_matrix(center, angle: float, translate, shear) -> list:
    """The 6 coefficients of the output-to-input affine map torchvision samples with (unit scale), in pixel
    units about the image centre: the forward map is translate . centre . rotate(angle) . shear_y . shear_x .
    centre^-1, angles in degrees, `center` relative to the image centre. Python float arithmetic in
    torchvision's order, so that the float32 cast of each coefficient is the same.

    >>> tv_policy_inverse_matrix([0.0, 0.0], 0.0, [3.0, 0.0], [0.0, 0.0])
    [1.0, 0.0, -3.0, -0.0, 1.0, 0.0]
    """
    rotation, shear_x, shear_y = math.radians(angle), math.radians(shear[0]), math.radians(shear[1])
    cx, cy = center
    moved_x, moved_y = cx + translate[0], cy + translate[1]
    cos_y, tan_x = math.cos(shear_y), math.tan(shear_x)
    a = math.cos(rotation - shear_y) / cos_y
    b = -(a * tan_x + math.sin(rotation))
    c = math.sin(rotation - shear_y) / cos_y
    d = math.cos(rotation) - c * tan_x
    # The determinant is 1, so the inverse of [[a, b], [c, d]] is [[d, -b], [-c, a]].
    m = [d, -b, 0.0, -c, a, 0.0]
    m[2] += cx - m[0] * moved_x - m[1] * moved_y
    m[5] += cy - m[3] * moved_x - m[4] * moved_y
    return m


def tv_policy_grid(matrix, height: int, width: int, device) -> torch.Tensor:
    """The (1, H, W, 2) grid_sample grid (align_corners=False) of the output-to-input `matrix`: pixel centres
    relative to the image centre, mapped, then divided by half the size.

    >>> tv_policy_grid([1.0, 0.0, 0.0, 0.0, 1.0, 0.0], 1, 2, "cpu")
    tensor([[[[-0.5000,  0.0000],
              [ 0.5000,  0.0000]]]])
    """
    theta = torch.tensor(matrix, dtype=torch.float32, device=device).reshape(1, 2, 3)
    half = torch.tensor([0.5 * width, 0.5 * height], dtype=torch.float32, device=device)
    # Laid out as torchvision lays it (a transposed view, then bmm) so that the same matmul kernel runs on every
    # device; a contiguous copy or an elementwise sum gave the same grid on one CPU, but nothing promises it.
    scaled = theta.transpose(1, 2).div_(half)
    xs = torch.linspace((1.0 - width) * 0.5, (width - 1.0) * 0.5, steps=width, device=device)
    ys = torch.linspace((1.0 - height) * 0.5, (height - 1.0) * 0.5, steps=height, device=device)
    base = torch.empty(1, height, width, 3, dtype=torch.float32, device=device)
    base[..., 0] = xs
    base[..., 1] = ys.unsqueeze(-1)
    base[..., 2] = 1.0
    return torch.bmm(base.view(1, height * width, 3), scaled).view(1, height, width, 2)


def tv_policy_warp(image: torch.Tensor, matrix, interpolation: str) -> torch.Tensor:
    """`image` resampled through the output-to-input `matrix` (see tv_policy_inverse_matrix) at its own size:
    float32 grid_sample with zeros outside, rounded half to even back to uint8."""
    tv_policy_check_interpolation(interpolation)
    height, width = image.shape[-2:]
    grid = tv_policy_grid(matrix, height, width, image.device)
    values = image.to(torch.float32).unsqueeze(0)
    out = torch.nn.functional.grid_sample(values, grid, mode=interpolation, padding_mode="zeros",
                                          align_corners=False)
    return out.round().to(torch.uint8).squeeze(0)


def tv_policy_shear(image: torch.Tensor, degrees_x: float, degrees_y: float, interpolation: str) -> torch.Tensor:
    """An affine shear about the top-left corner (torchvision's center=[0, 0]), angles in degrees."""
    height, width = image.shape[-2:]
    corner = [0.0 - width * 0.5, 0.0 - height * 0.5]
    matrix = tv_policy_inverse_matrix(corner, 0.0, [0.0, 0.0], [float(degrees_x), float(degrees_y)])
    return tv_policy_warp(image, matrix, interpolation)


def tv_policy_shear_x(image: torch.Tensor, degrees: float, interpolation: str = "nearest") -> torch.Tensor:
    """torchvision's ShearX by the angle `degrees` (its magnitude m is tan(radians(degrees))): the row at y moves
    by -y * tan: the top row stays."""
    return tv_policy_shear(image, degrees, 0.0, interpolation)


def tv_policy_shear_y(image: torch.Tensor, degrees: float, interpolation: str = "nearest") -> torch.Tensor:
    """torchvision's ShearY by the angle `degrees`: the column at x moves by -x * tan; the left column stays."""
    return tv_policy_shear(image, 0.0, degrees, interpolation)


def tv_policy_translate(image: torch.Tensor, dx: float, dy: float, interpolation: str) -> torch.Tensor:
    """An affine translation by (int(dx), int(dy)) pixels, resampled as torchvision resamples it."""
    matrix = tv_policy_inverse_matrix([0.0, 0.0], 0.0, [float(int(dx)), float(int(dy))], [0.0, 0.0])
    return tv_policy_warp(image, matrix, interpolation)


def tv_policy_translate_x(image: torch.Tensor, pixels: float, interpolation: str = "nearest") -> torch.Tensor:
    """torchvision's TranslateX: the content moves right by int(pixels) (truncated toward 0); 0 comes in.

    >>> img = torch.arange(1, 4, dtype=torch.uint8).view(1, 1, 3)
    >>> tv_policy_translate_x(img, 1.9)
    tensor([[[0, 1, 2]]], dtype=torch.uint8)
    """
    return tv_policy_translate(image, pixels, 0.0, interpolation)


def tv_policy_translate_y(image: torch.Tensor, pixels: float, interpolation: str = "nearest") -> torch.Tensor:
    """torchvision's TranslateY: the content moves down by int(pixels) (truncated toward 0); 0 comes in."""
    return tv_policy_translate(image, 0.0, pixels, interpolation)


def tv_policy_rotate(image: torch.Tensor, degrees: float, interpolation: str = "nearest") -> torch.Tensor:
    """torchvision's Rotate: counter-clockwise by `degrees` about the image centre, same size, 0 outside.
    Multiples of 180 degrees, and of 90 on a square image, are exact index shuffles, as in torchvision.

    >>> tv_policy_rotate(torch.arange(4, dtype=torch.uint8).view(1, 2, 2), 90.0)
    tensor([[[1, 3],
             [0, 2]]], dtype=torch.uint8)
    """
    tv_policy_check_interpolation(interpolation)
    # Reduced first, as torchvision does: it decides the index shuffles below (-90, -180).
    angle = float(degrees) % 360
    height, width = image.shape[-2:]
    if angle == 0:
        return image.clone()
    if angle == 180 or (height == width and angle in (90, 270)):
        return torch.rot90(image, k=int(angle) // 90, dims=(-2, -1))
    # torchvision's rotate turns its affine map's clockwise angle around.
    matrix = tv_policy_inverse_matrix([0.0, 0.0], -angle, [0.0, 0.0], [0.0, 0.0])
    return tv_policy_warp(image, matrix, interpolation)


def tv_policy_check_interpolation(interpolation: str) -> str:
    """`interpolation` when it is one torchvision's tensor affine kernels support, else a ValueError.

    >>> tv_policy_check_interpolation("bilinear")
    'bilinear'
    """
    if interpolation not in TV_POLICY_INTERPOLATIONS:
        raise ValueError(f"interpolation must be one of {TV_POLICY_INTERPOLATIONS}, got {interpolation!r}")
    return interpolation


# name -> f(image, magnitude, interpolation): the resampling ops.
TV_POLICY_GEOMETRIC = {
    "shear_x": tv_policy_shear_x,
    "shear_y": tv_policy_shear_y,
    "translate_x": tv_policy_translate_x,
    "translate_y": tv_policy_translate_y,
    "rotate": tv_policy_rotate,
}

# name -> f(image, magnitude): the per-pixel and histogram ops (magnitude NaN where it is ignored).
TV_POLICY_COLOUR = {
    "identity": tv_policy_identity,
    "brightness": tv_policy_brightness,
    "color": tv_policy_color,
    "contrast": tv_policy_contrast,
    "sharpness": tv_policy_sharpness,
    "posterize": tv_policy_posterize,
    "solarize": tv_policy_solarize,
    "auto_contrast": tv_policy_auto_contrast,
    "equalize": tv_policy_equalize,
    "invert": tv_policy_invert,
}

TV_POLICY_OP_NAMES = tuple(TV_POLICY_COLOUR) + tuple(TV_POLICY_GEOMETRIC)


def tv_policy_op(image: torch.Tensor, name: str, magnitude: float, interpolation: str = "nearest") -> torch.Tensor:
    """One policy op `name` on one uint8 CHW `image` at `magnitude` in reported units: shear_x/shear_y the angle
    in degrees, translate_x/translate_y pixels, rotate degrees counter-clockwise, brightness/color/contrast/
    sharpness the factor, posterize the bits kept, solarize the threshold as a fraction of 255, NaN (ignored) for
    identity/auto_contrast/equalize/invert. `interpolation` ("nearest" or "bilinear") is for the geometric ops.

    >>> img = torch.tensor([[[10, 250]]], dtype=torch.uint8).expand(3, 1, 2)
    >>> tv_policy_op(img, "solarize", 0.5)[0]
    tensor([[10,  5]], dtype=torch.uint8)
    """
    tv_policy_check_interpolation(interpolation)
    if image.dtype != torch.uint8 or image.dim() != 3:
        raise TypeError(f"a policy op takes one uint8 (C, H, W) image, got {image.dtype} {tuple(image.shape)}")
    if name in TV_POLICY_GEOMETRIC:
        return TV_POLICY_GEOMETRIC[name](image, magnitude, interpolation)
    if name in TV_POLICY_COLOUR:
        return TV_POLICY_COLOUR[name](image, magnitude)
    raise ValueError(f"unknown policy op {name!r}; known: {', '.join(TV_POLICY_OP_NAMES)}")
