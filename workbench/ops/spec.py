"""The op spec: one declarative record per op that every part of the workbench reads."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..errors import ChainError, show
from ..literals import Name, identifier
from .params import Param

FAMILIES = ("geometric", "color", "blur/noise", "weather", "occlusion", "policies", "batch mixing", "normalize")
BACKEND_NAMES = ("kornia", "dali", "albumentations")
# Where each backend runs every op it supports (tests/test_gpu_paths.py runs each op on CUDA).
BACKEND_DEVICES = {"kornia": ("CPU", "GPU"), "dali": ("CPU", "GPU"), "albumentations": ("CPU",)}


@dataclass(frozen=True)
class KorniaLowering:
    """How an op becomes a `kornia.augmentation` module.

    `module` is the class name in `kornia.augmentation`; `args(params)` maps the op's
    validated parameters to that class's keyword arguments (literals only); `record`
    maps Kornia's sampled-parameter keys to the names the workbench reports per sample.
    `local`: `module` is a class of `workbench/runtime/kornia_modules/` (an augmentation
    Kornia lacks, written on Kornia's base classes), copied into the exported file.
    """

    module: str
    args: Callable[[Mapping[str, Any]], dict[str, Any]]
    record: Mapping[str, str] = field(default_factory=dict)
    local: bool = False
    # The inverse of `args` for a module of runtime/kornia_modules (local=True), for
    # `Chain.from_kornia`: given the arguments the module was built with (its `built_with`), this
    # op's parameters, or None when they are another op's; `ops/kornia_reading.arguments` writes the
    # usual one. (Kornia's own classes are read by `OpSpec.from_kornia`.)
    from_module: Callable[[Mapping[str, Any], list], dict[str, Any] | None] | None = None
    # Where Kornia's own class lacks a setting the op has (RandomResizedCrop's antialias): a class of
    # runtime/kornia_modules extending it, used when `local_when(params)`; `from_module` reads it.
    local_variant: str | None = None
    local_when: Callable[[Mapping[str, Any]], bool] | None = None

    def module_for(self, params: Mapping[str, Any]) -> tuple[str, bool]:
        """(class name, whether it is local) of the module for these validated params."""
        if self.local_variant is not None and self.local_when(params):
            return self.local_variant, True
        return self.module, self.local

    def local_modules(self) -> tuple[str, ...]:
        """The classes of runtime/kornia_modules this lowering may build."""
        return tuple(name for name, local in ((self.module, self.local), (self.local_variant, True))
                     if name is not None and local)


@dataclass(frozen=True)
class AlbumentationsLowering:
    """How an op becomes an Albumentations transform (uint8 HWC on the CPU).

    `transform` is the class name in `albumentations`; `args(params)` maps the op's
    validated parameters to that class's keyword arguments (literals only, `p` is added);
    `record` maps the transform's applied params (its `.params` after a call) to the names
    the workbench reports per sample: a {raw key: name} mapping, or a function of the raw
    dict returning {name: value} where a value must be derived (an angle from a matrix).
    `note`: what Albumentations does differently, for the support matrix.
    """

    transform: str
    args: Callable[[Mapping[str, Any]], dict[str, Any]]
    record: Mapping[str, str] | Callable[[Mapping[str, Any]], dict[str, Any]] = field(default_factory=dict)
    note: str = ""
    # The inverse of `args`, for `Chain.from_albumentations`: given a transform instance of
    # class `transform`, this op's parameters, or None when this op cannot express that
    # transform's settings (another op sharing the class may; else the import lists it as
    # unmapped with the reason). Raise ValueError with a reason for a near miss.
    from_transform: Callable[[Any], dict[str, Any] | None] | None = None
    # Other transform classes `from_transform` reads too (A.ShiftScaleRotate for Affine): only
    # these, never any subclass (A.MotionBlur is an A.Blur, but not a box blur).
    also_imports: tuple[str, ...] = ()
    # Where Albumentations' class lacks a setting the op has (JpegCompression's libjpeg codec): the
    # workbench's own transform (codegen/albumentations.py's OWN_TRANSFORMS), used when `local_when(params)`.
    local_variant: str | None = None
    local_when: Callable[[Mapping[str, Any]], bool] | None = None

    def transform_for(self, params: Mapping[str, Any]) -> str:
        """The transform class name for these validated params."""
        if self.local_variant is not None and self.local_when(params):
            return self.local_variant
        return self.transform


@dataclass(frozen=True)
class DaliContext:
    """What a DALI lowering may refer to while the emitter writes one step.

    `x`: the images variable (HWC; uint8 0-255 until a Normalize, float after it);
    `scale`: 255.0 while values are 0-255, 1.0 after a Normalize (fill values and means
    are given in [0, 1] units and multiplied by it); `height`/`width`: float nodes of the
    current image size; `applied`: the step's coin (or the literal 1 when p == 1).
    """

    x: Any
    scale: float
    height: Any
    width: Any
    applied: Any
    prefix: str = "s1_"
    # A horizontal flip's coin that this (Normalize) step may apply as crop_mirror_normalize's mirror.
    mirror: Any = None
    # The step's number in the chain; a path (group's number, child's, ...) inside a group.
    step: int | tuple[int, ...] = 1
    # Set when the step's input is still the encoded files (the training pipeline's first crop,
    # for lowerings with `decodes_region`): the lowering decodes only the window it cuts.
    encoded: Any = None
    # The source of the input's shape node when it is not `x.shape()`: the file's header, or
    # the size a Resize before the crop gives.
    input_shape: str | None = None
    # The params of a Resize that stands before this crop and is not done yet (region decoding
    # of Resize-then-crop): the window is in resized pixels; only its source is decoded.
    resized: Mapping[str, Any] | None = None

    def shape(self) -> str:
        """Source of the input's shape node (H, W, C): read from the file's header when the
        input is still encoded, so that the window is known before decoding."""
        return self.input_shape or f"{self.x}.shape()"

    def decode_window(self, start: str, shape: str) -> str:
        """The statement that decodes only the window [start, start + shape) (both (y, x)
        nodes or literals, in pixels) of the encoded input into the images variable."""
        return (f"{self.x} = fn.decoders.image_slice({self.encoded}, start={start}, shape={shape}, axis_names='HW', "
                f"device=decoder, output_type=types.RGB)")

    def seed(self, k: int):
        """The explicit seed of this step's k-th random operator (see RandomOp)."""
        # A step inside a group has a path, (group step, child, ...): its own seeds.
        step = tuple(int(v) for v in self.step) if isinstance(self.step, tuple) else int(self.step)
        return Name(f"op_seed(seed, {step!r}, {int(k)})")

    def var(self, name: str):
        """A step-local variable of the generated code (e.g. s3_crop_box)."""
        return Name(identifier(self.prefix + name))


@dataclass(frozen=True)
class Inverse:
    """How an importer reads another library's transform as this op (`OpSpec.from_kornia`,
    `OpSpec.from_torchvision`; the Albumentations one is `AlbumentationsLowering.from_transform`).

    `transform` is the library's class name, `also_imports` other classes it reads too. `read(t,
    notes)` gives this op's parameters, or None when the settings are another op's (one class can be
    several ops: v2.ColorJitter with only brightness given is Brightness); ValueError with the reason
    for a near miss; it may add a note where a setting maps with a stated difference. The importer
    takes the step's p from the transform. Helpers: `ops/kornia_reading.py`,
    `ops/torchvision_reading.py`.
    """

    transform: str
    read: Callable[[Any, list], dict[str, Any] | None]
    also_imports: tuple[str, ...] = ()


@dataclass(frozen=True)
class DaliLowering:
    """How an op becomes DALI operators inside the exported `augment` function.

    `draws(params)` gives the per-sample random values to create (reported name ->
    a `RandomOp`); `apply(params, ctx, draws)` gives the statements that
    transform `ctx.x`. `gate` says how p < 1 is honoured: "if" runs the statements under
    DALI's conditional execution, "arg" means the op takes the coin as an argument.
    """

    apply: Callable[[Mapping[str, Any], DaliContext, Mapping[str, Any]], list[str]]
    draws: Callable[[Mapping[str, Any]], dict[str, Any]] = lambda params: {}
    gate: str = "if"
    needs_size: bool = False
    # Step-local variables that `apply` defines and the run reports per sample (or a function of
    # the params giving them: see `reported`); draws whose name starts with "_" are internal and
    # not reported.
    reports: tuple[str, ...] | Callable[[Mapping[str, Any]], tuple[str, ...]] = ()
    # The output values leave 0-255 (Normalize): later steps work in [0, 1]-based units.
    unit_scale_after: bool = False
    # What DALI does differently from Kornia, for the support matrix (empty: nothing known).
    note: str = ""
    # The op gives the same result before or after a horizontal mirror (colour, blur), so a
    # flip can move past it into crop_mirror_normalize.
    mirror_invariant: bool = False

    def reported(self, params: Mapping[str, Any]) -> tuple[str, ...]:
        """The step-local variables reported for these params (`reports`)."""
        return tuple(self.reports(params)) if callable(self.reports) else self.reports
    # `apply` honours `ctx.encoded`: as the chain's first step it can decode only its window
    # (region decoding, as a hand-written DALI loader's fn.decoders.image_random_crop does).
    decodes_region: bool = False
    # A Resize: followed by a crop with `decodes_region`, the two decode only the file's pixels
    # the crop's window is resampled from (the crop's lowering does the resize, see `resized`).
    defers_to_crop: bool = False
    # A crop with `decodes_region` that can also take a pending Resize (its window is then in
    # resized pixels; `ctx.resized`).
    follows_resize: bool = False


@dataclass(frozen=True)
class Parity:
    """How closely backends agree on this op with ranges collapsed and p = 1, measured on
    the sample photographs away from a `border` of pixels: mean absolute error at most
    `mae` (in [0, 1] units) and PSNR at least `psnr` dB."""

    mae: float = 2 / 255
    psnr: float = 35.0
    border: int = 4
    # The collapsed parameters the parity test uses (ranges as [v, v]).
    params: Mapping[str, Any] = field(default_factory=dict)
    # Compare the per-channel mean and standard deviation of the change (output - input)
    # instead of pixels, within `mae`: for ops whose per-pixel randomness no two libraries
    # draw alike (noise). The test still checks the change is not nothing.
    statistics: bool = False
    # Same-size input images (crops that place windows at random need them).
    same_size: bool = False
    # For draws no collapsed range can pin down (a crop window, perspective corners, a
    # channel permutation): `reference(image, row)` gives the expected output in [0, 1]
    # float HWC for a uint8 HWC input and the sample's reported draws (`row`, as in
    # `RunResult.params[n][0]`); every backend is compared with it, from its own draws.
    reference: Callable[[Any, Mapping[str, Any]], Any] | None = None


@dataclass(frozen=True)
class TargetRule:
    """How an op moves masks, boxes and keypoints, from a sample's reported draws (the functions
    of workbench/runtime/targets.py, which every backend's run and every export share).

    `geometry`: the op's forward map (input to output pixel edges) from its params and the
    sample's row; `field`: for a displacement field that no matrix describes (the distortions), its
    (to_source, to_target) point maps from its params, the sample's row and the image size;
    `erase`: the rectangles an occlusion step erased (masks are marked there only
    when the chain asks); `mix`: "mixup", "cutmix" or "choice" (see runtime/targets.py's mix_samples);
    `unsupported`: why the op cannot move targets (a run with targets refuses it, naming this).
    An op with none of them leaves targets alone (colour, blur, noise, weather, normalize).
    """

    geometry: Callable[..., Any] | None = None
    # The output size, as runtime/targets.py's output_size reads it: "same", "fixed" (params
    # "size"), "padding" (the reported padding), "crop" (the reported crop_box), "drawn" (the reported
    # out_size) or "scale" (the reported scale).
    size: str = "same"
    # Boxes whose centre falls outside the reported crop_box are dropped (RandomIoUCrop's rule).
    keep_centres: bool = False
    field: Callable[..., Any] | None = None
    # Plain data the map needs beyond the step's params, added to them in the target plan: a
    # policy's op names by choice, which an exported file has no table to look up.
    plan_params: Callable[[Mapping[str, Any]], dict] | None = None
    erase: Callable[..., Any] | None = None
    mix: str | None = None
    unsupported: str = ""


@dataclass(frozen=True)
class OpSpec:
    """Everything about one op: parameters, defaults, docs and its lowering per backend.

    Example:
        >>> from workbench.ops import get_op
        >>> spec = get_op("Rotate")
        >>> spec.defaults()["degrees"], spec.supports("kornia")
        ([-15.0, 15.0], True)
    """

    name: str
    family: str
    doc: str
    params: tuple[Param, ...] = ()
    default_p: float = 1.0
    # Ops that change the image size (or its value scale) must apply to every sample of a
    # batch, otherwise the batch could not stay one tensor.
    always_applies: bool = False
    # Why p is fixed at 1, quoted by the validation error and the support matrix.
    always_applies_why: str = "it changes the image size or value scale"
    # True when the output size no longer depends on the input size; lets batches of
    # mixed-size images become one tensor from this step on.
    fixes_size: bool = False
    # Name of a Size parameter the input must be at least as large as (crops).
    input_at_least: str | None = None
    # The smallest input side the op takes, from its parameters, with why and what to change:
    # (pixels, reason). check_sizes refuses smaller images with that reason on every backend, so a
    # preview on one backend never promises what another backend's export cannot run.
    min_input: Callable[[Mapping[str, Any]], tuple[int, str]] | None = None
    # The op swaps height and width for some samples only (Transpose, RandomRotate90's odd
    # turns): its input must be square, so that every sample of a batch keeps one size.
    square_input: bool = False
    # The op blends each sample with a partner from the same batch (MixUp, CutMix): it needs a
    # whole same-size batch, p gates the whole batch, and its lowerings report `partner` (batch
    # index) and `weight` (the partner's share), with which the backends mix the labels too.
    mixes_batch: bool = False
    # The op draws each sample's output size (RandomShortestSize, RandomResize, ScaleJitter,
    # RandomZoomOut): the samples of a batch leave it at sizes of their own, so the chain runs image by
    # image from there until a step fixes the size; its lowerings report what the size comes from
    # (out_size [height, width], or the zoom out's padding).
    sizes_per_sample: bool = False
    # The op draws from each sample's boxes as they stand at its step (RandomIoUCrop): a run, an export's
    # --save and training loader need boxes (they move them through the steps before it and hand them
    # to the op), and it cannot be a group's child.
    reads_boxes: bool = False
    kornia: KorniaLowering | None = None
    dali: DaliLowering | None = None
    albumentations: AlbumentationsLowering | None = None
    from_kornia: Inverse | None = None  # reading a kornia.augmentation module as this op
    from_torchvision: Inverse | None = None  # reading a torchvision v2 transform (no torchvision backend)
    parity: Parity = field(default_factory=Parity)
    # What makes this op expensive and how to make it cheaper (the estimate's advice quotes it).
    cost_hint: str = ""
    # Why a backend cannot run this op, by backend name (the support matrix and the refusal
    # messages quote it); every backend without a lowering needs one.
    unsupported: Mapping[str, str] = field(default_factory=dict)
    # Backends that run this op on their GPU only, with the reason, by backend name (DALI's
    # fn.experimental.remap has no CPU operator): `supports(backend, "cpu")` is False there, and a
    # run, preview, exported script or estimate on that backend's CPU refuses the op quoting it.
    gpu_only: Mapping[str, str] = field(default_factory=dict)
    # How masks, boxes and keypoints follow the op (default: they are left alone).
    targets: TargetRule = field(default_factory=TargetRule)

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"op {self.name}: family must be one of {FAMILIES}")
        rule = self.targets
        if self.family in ("geometric", "policies") and not (rule.geometry or rule.field or rule.unsupported):
            raise ValueError(f"op {self.name}: a {self.family} op moves pixels, so its spec must say how targets "
                             "follow (TargetRule.geometry or .field) or why they cannot (TargetRule.unsupported)")
        if not self.name.isidentifier():
            raise ValueError(f"op name {self.name!r} must be a Python identifier")
        for backend in self.gpu_only:
            if getattr(self, backend, None) is None or "GPU" not in BACKEND_DEVICES.get(backend, ()):
                raise ValueError(f"op {self.name}: gpu_only names {backend!r}, which has no lowering for this op or "
                                 "no GPU; name a backend that runs the op on a GPU")

    @property
    def is_group(self) -> bool:
        """True for the specs of groups (OneOf, SomeOf, Sequential: see ops/groups.py)."""
        return False

    @property
    def backends(self) -> tuple[str, ...]:
        """Backends that can run and export this op."""
        return tuple(b for b in BACKEND_NAMES if getattr(self, b) is not None)

    def supports(self, backend: str, device: str | None = None) -> bool:
        """Whether `backend` runs this op; on `device` ("cpu", "cuda", "cuda:1") when given: an op
        `gpu_only` on a backend is not supported on its CPU.

        Example:
            >>> from workbench.ops import get_op
            >>> spec = get_op("OpticalDistortion")
            >>> spec.supports("dali"), spec.supports("dali", "cuda"), spec.supports("dali", "cpu")
            (True, True, False)
        """
        if backend not in self.backends:
            return False
        return not (backend in self.gpu_only and is_cpu(device))

    def output_size(self, params: Mapping[str, Any], height: int, width: int) -> tuple[int, int]:
        """Image size after this op, given the input size (the largest it can draw, for an op that
        draws each sample's size)."""
        return tuple(params["size"]) if self.fixes_size else (height, width)

    def size_bounds(self, params: Mapping[str, Any], height: int, width: int) -> tuple[tuple[int, int], ...]:
        """(smallest, largest) image size after this op, given the input size: one size twice
        unless the op draws each sample's size (sizes_per_sample)."""
        size = tuple(self.output_size(params, height, width))
        return size, size

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def defaults(self) -> dict[str, Any]:
        """Default parameter values, normalised as validation would return them."""
        return {p.name: p.validate(self.name, _plain(p.default)) for p in self.params}

    def validate_params(self, where: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """Check `params` against the spec; return a full, normalised dict (defaults filled in)."""
        if not isinstance(params, Mapping):
            raise ChainError(f"{where}: 'params' must be a mapping of name to value, got {type(params).__name__}")
        known = {p.name for p in self.params}
        for key in params:
            if key not in known:
                valid = ", ".join(sorted(known)) or "none"
                raise ChainError(f"{where}: unknown parameter {show(key)}; {self.name} takes: {valid}")
        out = {}
        for p in self.params:
            out[p.name] = p.validate(where, params[p.name] if p.name in params else _plain(p.default))
        return out


def is_cpu(device: str | None) -> bool:
    """Whether `device` names the CPU ("cpu"); None (any device), "cuda", "cuda:1" do not.

    Example:
        >>> is_cpu("cpu"), is_cpu("cuda:0"), is_cpu(None)
        (True, False, False)
    """
    return device is not None and str(device).split(":")[0].lower() == "cpu"


def largest(value: Any) -> float:
    """The top of a range parameter's validated value ([lo, hi]), or the number itself.

    Example:
        >>> largest([3, 7]), largest(5)
        (7, 5)
    """
    return max(value) if isinstance(value, (list, tuple)) else value


def kernel_reach(param: str, radius: Callable[[int], int] = lambda k: k // 2):
    """A `min_input` rule for a filter whose window of size `param` (or a radius: `radius` maps
    the parameter to the pixels the window reaches past a pixel) is reflected at the borders:
    a reflection needs the image to be wider than the reach (Kornia refuses otherwise, and
    OpenCV reflects a reflection).

    Example:
        >>> kernel_reach("kernel_size")({"kernel_size": [3, 7]})
        (4, 'its kernel_size up to 7 reaches 3 pixel(s) past each border, which is reflected; lower kernel_size')
    """
    def rule(params: Mapping[str, Any]) -> tuple[int, str]:
        size = int(largest(params[param]))
        reach = radius(size)
        return reach + 1, (f"its {param} up to {size} reaches {reach} pixel(s) past each border, which is "
                           f"reflected; lower {param}")
    return rule


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value
