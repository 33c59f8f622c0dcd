"""Images in: loading files, checking user images, mixed sizes, devices; bad input loses nothing.

Covers DESIGN.md "What users will expect" (folders, globs, arrays, tensors, Datasets,
sample_data) and guarantee 5 (a clear error that names the problem, and the chain survives).
Everything is tiny (16x20 images, one- or two-step chains) so the file runs in seconds on CPU.
"""
from __future__ import annotations

import copy
import io
import os
import warnings
from pathlib import Path

os.environ.setdefault("KORNIA_INSTALLATION_MODE", "RAISE")

import numpy as np
import pytest
import torch
from PIL import Image
from torch.utils.data import Dataset, TensorDataset

import workbench as wb

from conftest import boxes_for

H, W = 16, 20
IMAGE_SUFFIXES = {".bmp", ".jpeg", ".jpg", ".png", ".tif", ".tiff", ".webp"}


# ----------------------------------------------------------------------------------------
# helpers and fixtures
# ----------------------------------------------------------------------------------------
def rgb(h: int = H, w: int = W, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


def gray(h: int = H, w: int = W, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w), dtype=np.uint8)


def flip_chain(seed: int = 1) -> wb.Chain:
    return wb.Chain(seed=seed).add("HorizontalFlip", p=1.0)


def flipped(img: np.ndarray) -> np.ndarray:
    """What a p=1 horizontal flip returns for an HxWx3 uint8 image: float32 in [0, 1]."""
    return (img[:, ::-1] / 255).astype(np.float32)


def pil_rgb(path: Path) -> np.ndarray:
    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))


def rel_image_paths(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                  if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)


@pytest.fixture(scope="module")
def image_folder(tmp_path_factory) -> tuple[Path, dict[str, np.ndarray]]:
    """An ImageFolder-style tree with PNG/JPEG (one upper-case .JPG), odd names and non-images.

    Every image has its own size so the loaded order can be checked from shapes and pixels.
    Returns the root and {relative posix path: expected RGB array}.
    """
    root = tmp_path_factory.mktemp("folder")
    expected: dict[str, np.ndarray] = {}

    def png(rel: str, img: Image.Image) -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        img.save(path, format="PNG")
        expected[rel] = np.asarray(img.convert("RGB"))

    def jpeg(rel: str, arr: np.ndarray) -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(arr).save(path, format="JPEG", quality=90)
        expected[rel] = pil_rgb(path)  # the contract: PIL decodes JPEG

    png("A_top.png", Image.fromarray(rgb(10, 12, 1)))
    png("b.png", Image.fromarray(rgb(11, 13, 2)))
    png("b/inner.png", Image.fromarray(rgb(12, 14, 3)))            # "b.png" < "b/inner.png"
    jpeg("cats/x1.JPG", rgb(20, 24, 4))                           # upper-case extension
    jpeg("cats/x0.jpeg", rgb(21, 25, 5))
    png("dogs/deep/z.png", Image.fromarray(gray(13, 15, 6), mode="L"))
    png("dogs/y.png", Image.fromarray(rgb(14, 17, 7)).convert("P", palette=Image.Palette.ADAPTIVE))
    (root / "notes.txt").write_text("not an image")
    (root / "README.md").write_text("# not an image")
    (root / "dogs" / "labels.csv").write_text("y.png,1\n")
    return root, expected


# ----------------------------------------------------------------------------------------
# 1. load_images: format, order, recursion, globs, single files, sample_data, pixel values
# ----------------------------------------------------------------------------------------
def test_folder_recursive_sorted_by_relative_posix_path(image_folder):
    root, expected = image_folder
    order = ["A_top.png", "b.png", "b/inner.png", "cats/x0.jpeg", "cats/x1.JPG", "dogs/deep/z.png", "dogs/y.png"]
    assert rel_image_paths(root) == order == sorted(expected)
    images = wb.load_images(root)
    assert len(images) == len(order)  # notes.txt, README.md and labels.csv skipped
    for img, rel in zip(images, order):
        assert isinstance(img, np.ndarray) and img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3
        assert img.flags.c_contiguous
        np.testing.assert_array_equal(img, expected[rel], err_msg=rel)
    # A str path gives the same result as a Path.
    for a, b in zip(wb.load_images(str(root)), images):
        np.testing.assert_array_equal(a, b)


def test_png_pixels_exactly_what_pil_wrote(tmp_path):
    src = rgb(H, W, 11)
    Image.fromarray(src).save(tmp_path / "exact.png")
    (img,) = wb.load_images(tmp_path)
    assert img.dtype == np.uint8 and img.shape == (H, W, 3)
    np.testing.assert_array_equal(img, src)


@pytest.mark.parametrize("mode", ["L", "P", "RGBA", "LA"])
def test_png_modes_decode_to_rgb_like_pil_convert(tmp_path, mode):
    base = Image.fromarray(rgb(H, W, 12))
    if mode == "L":
        im = Image.fromarray(gray(H, W, 12), mode="L")
    elif mode == "P":
        im = base.convert("P", palette=Image.Palette.ADAPTIVE, colors=16)
    elif mode == "RGBA":
        alpha = np.random.default_rng(5).integers(0, 256, (H, W), dtype=np.uint8)
        im = Image.fromarray(np.dstack([np.asarray(base), alpha]), mode="RGBA")
    else:
        im = Image.fromarray(np.dstack([gray(H, W, 12), gray(H, W, 13)]), mode="LA")
    path = tmp_path / f"img_{mode}.png"
    im.save(path)
    with Image.open(path) as check:
        assert check.mode == mode
    (img,) = wb.load_images(path)
    assert img.dtype == np.uint8 and img.shape == (H, W, 3)
    np.testing.assert_array_equal(img, np.asarray(im.convert("RGB")))
    if mode in ("L", "LA"):
        np.testing.assert_array_equal(img[..., 0], img[..., 1])
        np.testing.assert_array_equal(img[..., 0], img[..., 2])
        np.testing.assert_array_equal(img[..., 0], gray(H, W, 12))
    if mode == "RGBA":  # alpha dropped, colour untouched (no premultiplication)
        np.testing.assert_array_equal(img, np.asarray(base))


def test_sixteen_bit_png_is_not_silently_saturated(tmp_path):
    """A 16-bit grayscale PNG must be scaled to 8 bits (or refused with a message), not clipped."""
    g16 = (np.arange(H * W, dtype=np.uint32).reshape(H, W) * 65535 // (H * W - 1)).astype(np.uint16)
    path = tmp_path / "depth16.png"
    Image.fromarray(g16).save(path)
    with Image.open(path) as check:
        assert check.mode.startswith("I")
    try:
        (img,) = wb.load_images(path)
    except wb.InputError as exc:
        assert "16" in str(exc) and "depth16.png" in str(exc)
        return
    assert img.shape == (H, W, 3) and img.dtype == np.uint8
    # Clipping to 255 would leave almost every pixel white: values must follow g16 / 257.
    assert np.abs(img[..., 0].astype(np.float64) - g16 / 257.0).max() <= 1.0, \
        f"16-bit PNG decoded by clipping: {np.mean(img[..., 0] == 255):.0%} of pixels are 255"


def test_glob_patterns(image_folder):
    root, expected = image_folder
    pngs = wb.load_images(str(root / "**" / "*.png"))
    # Same name order as a folder (sorted relative posix paths): "b.png" before "b/inner.png".
    png_rels = ["A_top.png", "b.png", "b/inner.png", "dogs/deep/z.png", "dogs/y.png"]
    assert png_rels == [r for r in rel_image_paths(root) if r.endswith(".png")]
    assert [i.shape for i in pngs] == [expected[r].shape for r in png_rels], \
        "a glob orders files differently from the same files loaded as a folder"
    for img, rel in zip(pngs, png_rels):
        np.testing.assert_array_equal(img, expected[rel], err_msg=rel)
    upper = wb.load_images(str(root / "cats" / "*.JPG"))
    assert len(upper) == 1
    np.testing.assert_array_equal(upper[0], expected["cats/x1.JPG"])
    both = wb.load_images(str(root / "cats" / "*"))
    assert [i.shape for i in both] == [expected["cats/x0.jpeg"].shape, expected["cats/x1.JPG"].shape]
    # A glob that only matches non-images finds nothing and says so.
    with pytest.raises(wb.InputError, match="no image files"):
        wb.load_images(str(root / "*.txt"))


def test_single_file(image_folder):
    root, expected = image_folder
    for source in (root / "cats" / "x1.JPG", str(root / "dogs" / "y.png")):
        images = wb.load_images(source)
        assert isinstance(images, list) and len(images) == 1
        rel = Path(source).relative_to(root).as_posix()
        np.testing.assert_array_equal(images[0], expected[rel])


def test_no_argument_loads_bundled_sample_data():
    images = wb.load_images()
    files = sorted(p for p in wb.SAMPLE_DATA.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    assert len(images) == len(files) == 12
    grayscale_seen = 0
    for img, f in zip(images, files):
        assert img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3
        with Image.open(f) as im:
            assert img.shape[:2] == (im.height, im.width), f.name
            if im.mode == "L":
                grayscale_seen += 1
                assert (img[..., 0] == img[..., 1]).all() and (img[..., 0] == img[..., 2]).all()
    assert grayscale_seen >= 1  # the bundled set exercises grayscale PNG decoding
    assert len({img.shape for img in images}) > 1  # mixed sizes
    np.testing.assert_array_equal(images[0], pil_rgb(files[0]))


# ----------------------------------------------------------------------------------------
# 2. load_images errors name the problem
# ----------------------------------------------------------------------------------------
def good_and_bad_folder(tmp_path: Path, bad_name: str, bad_bytes: bytes) -> tuple[Path, list[np.ndarray]]:
    folder = tmp_path / "mixed"
    folder.mkdir()
    goods = [rgb(H, W, 21), rgb(H + 2, W, 22)]
    Image.fromarray(goods[0]).save(folder / "a_good.png")
    Image.fromarray(goods[1]).save(folder / "z_good.png")
    (folder / bad_name).write_bytes(bad_bytes)
    return folder, goods


def truncated_png_bytes() -> bytes:
    buf = io.BytesIO()
    Image.fromarray(rgb(32, 32, 9)).save(buf, format="PNG")
    data = buf.getvalue()
    return data[: len(data) // 2]


def test_missing_path():
    with pytest.raises(wb.InputError, match="no such file or folder") as info:
        wb.load_images("/definitely/not/here/imgs")
    assert "/definitely/not/here/imgs" in str(info.value)


def test_empty_folder(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(wb.InputError, match="no image files") as info:
        wb.load_images(empty)
    assert str(empty) in str(info.value) and ".png" in str(info.value)


def test_folder_with_only_non_images(tmp_path):
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text("x")
    (folder / "sub" / "b.md").write_text("y")
    with pytest.raises(wb.InputError, match="no image files") as info:
        wb.load_images(folder)
    assert str(folder) in str(info.value) and ".jpg" in str(info.value)


@pytest.mark.parametrize("bad_name, bad_bytes, reason", [
    ("corrupt.jpg", np.random.default_rng(3).integers(0, 256, 512, dtype=np.uint8).tobytes(), None),
    ("m_truncated.png", truncated_png_bytes(), "truncated"),
    ("m_empty.png", b"", None),
])
def test_undecodable_file_raises_naming_it(tmp_path, bad_name, bad_bytes, reason):
    folder, _ = good_and_bad_folder(tmp_path, bad_name, bad_bytes)
    with pytest.raises(wb.InputError) as info:
        wb.load_images(folder)
    msg = str(info.value)
    assert bad_name in msg and "on_error='skip'" in msg and "cannot decode" in msg
    if reason:
        assert reason in msg


@pytest.mark.parametrize("bad_name, bad_bytes", [
    ("corrupt.jpg", np.random.default_rng(4).integers(0, 256, 512, dtype=np.uint8).tobytes()),
    ("m_truncated.png", truncated_png_bytes()),
])
def test_on_error_skip_warns_and_keeps_good_images(tmp_path, bad_name, bad_bytes):
    folder, goods = good_and_bad_folder(tmp_path, bad_name, bad_bytes)
    with pytest.warns(UserWarning, match=bad_name.replace(".", r"\.")) as record:
        images = wb.load_images(folder, on_error="skip")
    assert any("skipped" in str(w.message) for w in record)
    assert len(images) == 2
    for img, good in zip(images, goods):
        np.testing.assert_array_equal(img, good)


def test_on_error_skip_with_nothing_decodable(tmp_path):
    folder = tmp_path / "allbad"
    folder.mkdir()
    (folder / "a.jpg").write_bytes(b"\xff\xd8garbage")
    (folder / "b.png").write_bytes(b"\x89PNG nope")
    with pytest.warns(UserWarning, match="skipped"):
        with pytest.raises(wb.InputError, match="could be decoded"):
            wb.load_images(folder, on_error="skip")


def test_non_image_named_as_single_file(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello")
    with pytest.raises(wb.InputError, match="notes.txt"):
        wb.load_images(path)


def test_on_error_value_checked(tmp_path):
    with pytest.raises(ValueError, match="skip"):
        wb.load_images(wb.SAMPLE_DATA, on_error="ignore")


# ----------------------------------------------------------------------------------------
# 3. as_image_list and chain.run: what is accepted, converted, refused
# ----------------------------------------------------------------------------------------
def test_list_of_hwc_uint8_and_exact_flip_output():
    imgs = [rgb(seed=1), rgb(seed=2)]
    checked = wb.as_image_list(imgs)
    assert len(checked) == 2
    for c, i in zip(checked, imgs):
        assert c.dtype == np.uint8 and c.shape == (H, W, 3)
        np.testing.assert_array_equal(c, i)
    res = flip_chain().run(imgs, backend="kornia", device="cpu")
    assert isinstance(res.images, np.ndarray) and res.images.dtype == np.float32
    assert res.images.shape == (2, H, W, 3)
    for out, img in zip(res.images, imgs):
        np.testing.assert_array_equal(out, flipped(img))
    assert [row[0]["applied"] for row in res.params] == [True, True]
    assert res.backend == "kornia" and res.device == "cpu" and res.seed == 1


def test_tuple_of_arrays_accepted():
    imgs = (rgb(seed=1), rgb(seed=2))
    res = flip_chain().run(imgs)
    np.testing.assert_array_equal(res.images[1], flipped(imgs[1]))


@pytest.mark.parametrize("shape", [(H, W), (H, W, 1)])
def test_grayscale_converted_with_warning(shape):
    g = gray(seed=3)
    arr = g.reshape(shape)
    with pytest.warns(UserWarning, match="grayscale"):
        (out,) = wb.as_image_list([arr])
    assert out.shape == (H, W, 3) and out.dtype == np.uint8
    for c in range(3):
        np.testing.assert_array_equal(out[..., c], g)
    with pytest.warns(UserWarning, match="grayscale"):
        res = flip_chain().run([arr])
    expected = flipped(np.repeat(g[..., None], 3, axis=2))
    np.testing.assert_array_equal(res.images[0], expected)


def test_rgba_converted_with_warning_alpha_dropped():
    rgba = np.dstack([rgb(seed=4), np.full((H, W), 7, np.uint8)])
    with pytest.warns(UserWarning, match="RGBA") as record:
        (out,) = wb.as_image_list([rgba])
    assert "alpha" in str(record[0].message)
    np.testing.assert_array_equal(out, rgba[..., :3])
    with pytest.warns(UserWarning, match="alpha"):
        res = flip_chain().run([rgba])
    np.testing.assert_array_equal(res.images[0], flipped(rgba[..., :3]))


def test_channels_first_numpy_rejected_with_transpose_fix():
    chw = np.ascontiguousarray(rgb(seed=5).transpose(2, 0, 1))
    for source in ([chw], chw, np.stack([chw, chw])):
        with pytest.raises(wb.InputError) as info:
            wb.as_image_list(source)
        msg = str(info.value)
        assert "channels-first" in msg and "np.transpose(img, (1, 2, 0))" in msg and "(3, 16, 20)" in msg
    with pytest.raises(wb.InputError, match="channels-first"):
        flip_chain().run([chw])


@pytest.mark.parametrize("dtype, fix", [
    (np.float32, "(img * 255).round().astype(np.uint8)"),
    (np.float64, "(img * 255).round().astype(np.uint8)"),
    (np.int16, "astype(np.uint8)"),
    (np.int64, "astype(np.uint8)"),
])
def test_wrong_dtype_rejected_naming_dtype_and_conversion(dtype, fix):
    arr = rgb(seed=6).astype(dtype)
    if np.issubdtype(dtype, np.floating):
        arr = arr / 255
    with pytest.raises(wb.InputError) as info:
        flip_chain().run([arr])
    msg = str(info.value)
    assert "uint8" in msg and np.dtype(dtype).name in msg and fix in msg and "image 1" in msg


def test_bool_array_rejected_with_a_conversion_that_makes_a_visible_image():
    """bool -> uint8 by astype alone gives 0/1 (a black image): the hint must scale by 255."""
    mask = rgb(seed=7) > 127
    with pytest.raises(wb.InputError) as info:
        wb.as_image_list([mask])
    msg = str(info.value)
    assert "bool" in msg and "uint8" in msg
    assert "* 255" in msg, f"hint for a bool mask does not scale to 0-255: {msg}"


def test_index_of_bad_image_in_list_is_named():
    with pytest.raises(wb.InputError, match="image 3") as info:
        wb.as_image_list([rgb(seed=1), rgb(seed=2), rgb(seed=3).astype(np.float32)])
    assert "float32" in str(info.value)
    with pytest.raises(wb.InputError, match="image 2.*str"):
        wb.as_image_list([rgb(seed=1), "not an image"])


@pytest.mark.parametrize("source, words", [
    ([], "no images given"),
    ((), "no images given"),
    (np.zeros((0, 5), np.uint8), "empty"),
    (np.zeros((H, 0, 3), np.uint8), "empty"),
    (np.zeros((0, H, W, 3), np.uint8), "no images given"),
    (np.zeros(5, np.uint8), "(5,)"),
    (np.zeros((1, 2, H, W, 3), np.uint8), "(1, 2, 16, 20, 3)"),
    (np.zeros((H, W, 2), np.uint8), "(16, 20, 2)"),
    (np.zeros((H, W, 5), np.uint8), "(16, 20, 5)"),
])
def test_empty_and_wrong_rank_rejected(source, words):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(wb.InputError) as info:
            wb.as_image_list(source)
        assert words in str(info.value)
        with pytest.raises(wb.InputError):
            flip_chain().run(source)


def test_4d_nhwc_array_split_into_images():
    batch = np.stack([rgb(seed=s) for s in range(3)])
    items = wb.as_image_list(batch)
    assert len(items) == 3
    for item, img in zip(items, batch):
        assert item.shape == (H, W, 3)
        np.testing.assert_array_equal(item, img)
    res = flip_chain().run(batch)
    assert res.images.shape == (3, H, W, 3) and len(res.params) == 3
    for out, img in zip(res.images, batch):
        np.testing.assert_array_equal(out, flipped(img))


def test_torch_chw_and_nchw_uint8_same_output_as_numpy():
    imgs = [rgb(seed=s) for s in range(2)]
    reference = flip_chain().run(imgs).images
    chw = [torch.from_numpy(i).permute(2, 0, 1) for i in imgs]
    nchw = torch.stack(chw)
    for source in (chw, nchw, chw[0]):
        res = flip_chain().run(source)
        n = 1 if torch.is_tensor(source) and source.ndim == 3 else 2
        np.testing.assert_array_equal(res.images, reference[:n])
    converted = wb.as_image_list(nchw)
    assert all(isinstance(c, np.ndarray) and c.shape == (H, W, 3) and c.dtype == np.uint8 for c in converted)
    np.testing.assert_array_equal(converted[1], imgs[1])


def test_torch_hwc_tensor_rejected_naming_permute():
    hwc = torch.from_numpy(rgb(seed=8))
    for source in (hwc, [hwc], hwc[None]):
        with pytest.raises(wb.InputError) as info:
            flip_chain().run(source)
        msg = str(info.value)
        assert "permute(2, 0, 1)" in msg and "(16, 20, 3)" in msg


def test_torch_float_tensor_rejected_naming_dtype():
    t = torch.from_numpy(rgb(seed=8)).permute(2, 0, 1).float() / 255
    with pytest.raises(wb.InputError, match="float32"):
        wb.as_image_list(t)


def test_torch_bfloat16_tensor_rejected_with_input_error():
    """bfloat16 has no numpy dtype: the check must not leak torch's TypeError."""
    t = (torch.from_numpy(rgb(seed=8)).permute(2, 0, 1).float() / 255).to(torch.bfloat16)
    with pytest.raises(wb.InputError, match="bfloat16"):
        wb.as_image_list([t])


def test_pil_images_accepted():
    arr = rgb(seed=9)
    im = Image.fromarray(arr)
    (out,) = wb.as_image_list([im])
    np.testing.assert_array_equal(out, arr)
    res = flip_chain().run([im, im.convert("P", palette=Image.Palette.ADAPTIVE)])
    np.testing.assert_array_equal(res.images[0], flipped(arr))
    pal = np.asarray(im.convert("P", palette=Image.Palette.ADAPTIVE).convert("RGB"))
    np.testing.assert_array_equal(res.images[1], flipped(pal))
    with pytest.warns(UserWarning, match="grayscale"):
        (g,) = wb.as_image_list([Image.fromarray(gray(seed=9), mode="L")])
    np.testing.assert_array_equal(g[..., 2], gray(seed=9))
    with pytest.warns(UserWarning, match="alpha"):
        (a,) = wb.as_image_list([im.convert("RGBA")])
    np.testing.assert_array_equal(a, arr)


class PairDataset(Dataset):
    """A user's Dataset: (image, label) pairs, the image as a CHW uint8 tensor, numpy or PIL."""

    def __init__(self, images, kind="tensor"):
        self.images, self.kind = images, kind

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        img = self.images[i]
        if self.kind == "tensor":
            img = torch.from_numpy(img).permute(2, 0, 1)
        elif self.kind == "pil":
            img = Image.fromarray(img)
        return img, i % 2


class ImageOnlyDataset(PairDataset):
    def __getitem__(self, i):
        return torch.from_numpy(self.images[i]).permute(2, 0, 1)


@pytest.mark.parametrize("kind", ["tensor", "numpy", "pil"])
def test_torch_dataset_of_pairs_accepted(kind):
    imgs = [rgb(seed=s) for s in range(3)]
    ds = PairDataset(imgs, kind)
    items = wb.as_image_list(ds)
    assert len(items) == 3
    for item, img in zip(items, imgs):
        np.testing.assert_array_equal(item, img)
    res = flip_chain().run(ds)
    np.testing.assert_array_equal(res.images, np.stack([flipped(i) for i in imgs]))


def test_torch_dataset_of_images_accepted():
    imgs = [rgb(seed=s) for s in range(2)]
    res = flip_chain().run(ImageOnlyDataset(imgs))
    np.testing.assert_array_equal(res.images, np.stack([flipped(i) for i in imgs]))


def test_tensor_dataset_with_tensor_labels_accepted():
    """TensorDataset(images, labels) yields (CHW tensor, 0-d tensor label) pairs."""
    imgs = [rgb(seed=s) for s in range(2)]
    ds = TensorDataset(torch.stack([torch.from_numpy(i).permute(2, 0, 1) for i in imgs]), torch.tensor([0, 1]))
    items = wb.as_image_list(ds)
    assert len(items) == 2
    np.testing.assert_array_equal(items[1], imgs[1])


def test_string_and_path_folder_accepted(tmp_path):
    imgs = [rgb(seed=s) for s in range(2)]
    for i, img in enumerate(imgs):
        Image.fromarray(img).save(tmp_path / f"im{i}.png")
    for source in (str(tmp_path), tmp_path):
        items = wb.as_image_list(source)
        assert len(items) == 2
        np.testing.assert_array_equal(items[0], imgs[0])
        res = flip_chain().run(source)
        np.testing.assert_array_equal(res.images, np.stack([flipped(i) for i in imgs]))


@pytest.mark.parametrize("source, name", [(5, "int"), ({"a": rgb()}, "dict"), (3.5, "float"),
                                          (object(), "object")])
def test_wrong_types_rejected(source, name):
    with pytest.raises(wb.InputError) as info:
        wb.as_image_list(source)
    assert name in str(info.value) and "folder" in str(info.value)
    with pytest.raises(wb.InputError):
        flip_chain().run(source)


# ----------------------------------------------------------------------------------------
# 4. mixed sizes
# ----------------------------------------------------------------------------------------
MIXED = [rgb(H, W, 31), rgb(24, 18, 32), rgb(20, 20, 33)]


def test_mixed_sizes_resize_gives_one_batch():
    res = wb.Chain(seed=3).add("Resize", size=[32, 32]).run(MIXED)
    assert isinstance(res.images, np.ndarray) and res.images.shape == (3, 32, 32, 3)
    assert res.images.dtype == np.float32 and len(res.params) == 3


def test_mixed_sizes_flip_only_returns_list_of_original_sizes():
    """RunResult: 'a list of arrays when the chain leaves images of different sizes'."""
    res = flip_chain().run(MIXED)
    assert isinstance(res.images, list) and len(res.images) == 3
    for out, img in zip(res.images, MIXED):
        assert out.shape == img.shape
        np.testing.assert_array_equal(out, flipped(img))


def test_mixed_sizes_rotate_then_resize_is_seeded():
    chain = wb.Chain(seed=5).add("Rotate", p=1.0, degrees=[-30, 30]).add("Resize", size=[32, 32])
    a = chain.run(MIXED)
    b = chain.run(MIXED)
    assert isinstance(a.images, np.ndarray) and a.images.shape == (3, 32, 32, 3)
    np.testing.assert_array_equal(a.images, b.images)
    assert a.params == b.params
    c = chain.run(MIXED, seed=6)
    assert c.seed == 6 and chain.seed == 5
    assert not np.array_equal(a.images, c.images)
    assert a.params != c.params  # the sampled angles differ too


# ----------------------------------------------------------------------------------------
# 5. devices and backends
# ----------------------------------------------------------------------------------------
no_gpu = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without a GPU")


@no_gpu
@pytest.mark.parametrize("device", ["cuda", "cuda:0"])
def test_cuda_without_gpu_names_device_and_alternatives(device):
    with pytest.raises(wb.WorkbenchError) as info:
        flip_chain().run([rgb()], device=device)
    msg = str(info.value)
    assert repr(device) in msg and "'cpu'" in msg and "'auto'" in msg and "GPU" in msg


@no_gpu
def test_auto_device_falls_back_to_cpu():
    res = flip_chain().run([rgb()], device="auto")
    assert res.device == "cpu"
    np.testing.assert_array_equal(res.images[0], flipped(rgb()))


@pytest.mark.parametrize("device", ["tpu", "CPU", "", "cuda:x", 0, None])
def test_unknown_device_rejected(device):
    with pytest.raises(wb.WorkbenchError) as info:
        flip_chain().run([rgb()], device=device)
    msg = str(info.value)
    assert repr(device) in msg and "'cpu'" in msg and "'auto'" in msg


@pytest.mark.parametrize("backend", ["tensorflow", "Kornia", "", None])
def test_unknown_backend_names_valid_ones(backend):
    with pytest.raises(wb.ChainError) as info:
        flip_chain().run([rgb()], backend=backend)
    msg = str(info.value)
    assert repr(backend) in msg and "unknown backend" in msg
    assert wb.BACKENDS and all(name in msg for name in wb.BACKENDS)


# ----------------------------------------------------------------------------------------
# 6. guarantee 5: a failed run loses nothing
# ----------------------------------------------------------------------------------------
def _corrupt_folder(tmp_path):
    folder, _ = good_and_bad_folder(tmp_path, "corrupt.jpg", b"\x00not a jpeg" * 20)
    return str(folder)


BAD_RUNS = {
    "channels-first": lambda tmp: dict(images=[np.zeros((3, H, W), np.uint8)]),
    "float": lambda tmp: dict(images=[np.zeros((H, W, 3), np.float32)]),
    "bool": lambda tmp: dict(images=[np.zeros((H, W, 3), bool)]),
    "empty-list": lambda tmp: dict(images=[]),
    "5-D": lambda tmp: dict(images=np.zeros((1, 1, H, W, 3), np.uint8)),
    "int": lambda tmp: dict(images=7),
    "torch-hwc": lambda tmp: dict(images=torch.zeros(H, W, 3, dtype=torch.uint8)),
    "missing-folder": lambda tmp: dict(images=str(tmp / "nope")),
    "corrupt-file": lambda tmp: dict(images=_corrupt_folder(tmp)),
    "cuda": lambda tmp: dict(images=[rgb()], device="cuda"),
    "tpu": lambda tmp: dict(images=[rgb()], device="tpu"),
    "backend": lambda tmp: dict(images=[rgb()], backend="nope"),
    "seed": lambda tmp: dict(images=[rgb()], seed="abc"),
    "negative-seed": lambda tmp: dict(images=[rgb()], seed=-3),
}


@pytest.mark.parametrize("case", sorted(BAD_RUNS))
def test_failed_run_leaves_chain_unchanged_and_usable(tmp_path, case):
    if case == "cuda" and torch.cuda.is_available():
        pytest.skip("needs a machine without a GPU")

    def make():
        return (wb.Chain(seed=11).add("Rotate", p=1.0, degrees=[-15, 15])
                .add("HorizontalFlip", p=0.5).add("Resize", size=[24, 24]))

    chain = make()
    before = copy.deepcopy(chain.to_dict())
    good = [rgb(seed=40), rgb(seed=41)]
    originals = [g.copy() for g in good]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(wb.WorkbenchError) as info:
            chain.run(**BAD_RUNS[case](tmp_path))
    assert str(info.value)  # a message, not an empty error
    assert chain.to_dict() == before
    assert chain == make()
    res = chain.run(good)
    np.testing.assert_array_equal(res.images, make().run(good).images)
    assert res.images.shape == (2, 24, 24, 3) and res.seed == 11
    for g, o in zip(good, originals):  # the user's arrays are not modified by a run
        np.testing.assert_array_equal(g, o)


@pytest.mark.parametrize("backend", ["kornia", "dali", "albumentations"])
@pytest.mark.parametrize("sizes", ["one size", "mixed sizes"])
def test_read_only_arrays_run_uncopied_and_unchanged(backend, sizes):
    """np.asarray of a PIL image is read-only: a run takes it as it is (no copy of the batch, no
    warning from torch) and gives what writable copies of it give, on every backend and in the
    preview's caches, and the arrays keep their values."""
    from workbench.backends.dali_cache import DaliPrefixCache
    from workbench.backends.kornia_cache import PrefixCache

    shapes = [(40, 48)] * 3 if sizes == "one size" else [(40, 48), (36, 52), (44, 40)]
    arrays = [np.asarray(Image.fromarray(rgb(h, w, seed=50 + i))) for i, (h, w) in enumerate(shapes)]
    assert not any(a.flags.writeable for a in arrays)
    originals = [a.copy() for a in arrays]
    assert all(a is b for a, b in zip(wb.as_image_list(arrays), arrays))  # not copied
    chain = wb.Chain(seed=5).add("Rotate", p=1.0, degrees=[-20, 20]).add("Resize", size=[32, 32]) \
        .add("Brightness", p=1.0, factor=[0.8, 1.2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch's "not writable" warning included
        got = chain.run(arrays, backend=backend)
        cache = {"kornia": PrefixCache, "dali": DaliPrefixCache}.get(backend)
        cached = cache().run(chain, arrays) if cache else got
    expected = chain.run(originals, backend=backend)
    np.testing.assert_array_equal(got.images, expected.images)
    np.testing.assert_array_equal(cached.images, expected.images)
    assert got.params == expected.params
    for a, o in zip(arrays, originals):
        np.testing.assert_array_equal(a, o)


# ----------------------------------------------------------------------------------------
# 6. tiny images from files: a file's layout is known, so no size is ambiguous
# ----------------------------------------------------------------------------------------
@pytest.fixture
def tiny_files(tmp_path):
    """PNG files of 1x1, 1x3, 3x1 (RGB) and 2x2 (greyscale): shapes a bare array could not tell apart
    from channels-first."""
    folder = tmp_path / "tiny"
    folder.mkdir()
    arrays = {"a_1x1.png": rgb(1, 1, 40), "b_1x3.png": rgb(1, 3, 41), "c_3x1.png": rgb(3, 1, 42)}
    for name, array in arrays.items():
        Image.fromarray(array).save(folder / name)
    Image.fromarray(gray(2, 2, 43)).save(folder / "d_2x2.png")
    arrays["d_2x2.png"] = np.repeat(gray(2, 2, 43)[:, :, None], 3, axis=2)
    return folder, arrays


@pytest.mark.parametrize("backend", ["kornia", "dali", "albumentations"])
def test_tiny_image_files_run_on_every_backend(tiny_files, backend):
    folder, arrays = tiny_files
    images = wb.load_images(folder)
    assert [im.shape for im in images] == [(1, 1, 3), (1, 3, 3), (3, 1, 3), (2, 2, 3)]
    chain = wb.Chain(seed=2).add("HorizontalFlip", p=1.0).add("Invert", p=1.0)
    for source in (images, folder, str(folder / "b_1x3.png")):
        res = chain.run(source, backend=backend)
        outs = res.images if isinstance(res.images, list) else list(res.images)
        # Kornia returns floats in [0, 1], DALI and Albumentations uint8 (Invert keeps the scale).
        expected = [(255 - a[:, ::-1]) / (255.0 if backend == "kornia" else 1) for a in arrays.values()]
        if len(outs) == 1:
            expected = expected[1:2]
        assert [o.shape for o in outs] == [e.shape for e in expected]
        assert all(np.allclose(o, e, atol=1e-6, rtol=0) for o, e in zip(outs, expected))


def test_a_bare_array_of_an_ambiguous_shape_is_still_refused_but_its_file_is_not(tiny_files):
    folder, arrays = tiny_files
    with pytest.raises(wb.InputError, match=r"ambiguous between CxHxW and HxWxC.*wb.load_images"):
        flip_chain().run([arrays["b_1x3.png"]])
    decoded = wb.load_images(folder / "b_1x3.png")[0]
    assert np.array_equal(flip_chain().run([decoded]).images[0], flipped(arrays["b_1x3.png"]))
    # A transpose of a decoded image is a bare array again: its layout is no longer the file's.
    with pytest.raises(wb.InputError, match="ambiguous"):
        flip_chain().run([wb.load_images(folder / "a_1x1.png")[0].transpose(2, 0, 1)])  # (3, 1, 1)


def test_tiny_images_get_a_clear_error_where_an_op_needs_more_pixels(tiny_files):
    folder, _ = tiny_files
    images = wb.load_images(folder)
    cases = [("MedianBlur", {"kernel_size": [3, 7]}, "smaller than the 4x4 MedianBlur needs", "lower kernel_size"),
             ("Defocus", {"radius": [3, 4]}, "smaller than the 9x9 Defocus needs", "lower radius"),
             ("GridDistortion", {"num_steps": 5}, "smaller than the 5x5 GridDistortion needs", "lower num_steps"),
             ("Downscale", {"scale": [0.25, 0.5]}, "smaller than the 3x3 Downscale needs", "raise the scale"),
             ("CenterCrop", {"size": [2, 2]}, "is larger than image 1 (1x1 at that step)", "resize first")]
    for op, params, words, fix in cases:
        chain = wb.Chain(seed=1).add("Invert").add(op, p=1.0, **params)
        for backend in ("kornia", "albumentations"):
            with pytest.raises(wb.InputError) as info:
                chain.run(images, backend=backend)
            msg = str(info.value)
            assert f"step 2 ({op})" in msg and words in msg and fix in msg, msg
    # Inside a group the same rule holds, named by the child that needs the pixels.
    grouped = wb.Chain(seed=1).add("OneOf", steps=[wb.Step.create("Invert"), wb.Step.create("Blur")])
    with pytest.raises(wb.InputError, match=r"step 1 \(Blur\): image 1 is 1x1 .* 4x4 Blur needs"):
        grouped.run(images)
    # Big enough: the same ops run.
    assert wb.Chain(seed=1).add("MedianBlur", p=1.0, kernel_size=[3, 3]).run(images[3:]).images.shape == (1, 2, 2, 3)


def test_every_op_on_tiny_files_runs_or_says_which_step_needs_more(tmp_path):
    """Held-out sizes from 1x2 to 3x4: each op, on each backend, either runs or is refused up front
    by check_sizes (the same on every backend), never a library's own error or a crash."""
    files = []
    for h, w in ((1, 2), (3, 4)):
        files.append(tmp_path / f"t{h}x{w}.png")
        Image.fromarray(rgb(h, w, h * 7 + w)).save(files[-1])
    failures = []
    for path in files:
        images = wb.load_images(path) * 2  # two samples: the mixing ops need a partner
        for op in wb.list_ops():
            spec = wb.get_op(op)
            chain = wb.Chain(seed=4).add(op, p=None if spec.always_applies else 1.0)
            verdicts = {}
            for backend in spec.backends:
                if not spec.supports(backend, "cpu"):
                    continue  # GPU only there: the CPU run refuses it (tests/test_ops_distortion.py)
                try:
                    chain.run(images, backend=backend, **boxes_for(chain, images))
                    verdicts[backend] = "runs"
                except wb.InputError as exc:
                    verdicts[backend] = "refused" if f"({op})" in str(exc) else f"unnamed: {exc}"
                except Exception as exc:  # noqa: BLE001 - any other error is the failure this test looks for
                    verdicts[backend] = f"{type(exc).__name__}: {str(exc)[:120]}"
            if set(verdicts.values()) - {"runs", "refused"} or len(set(verdicts.values())) > 1:
                failures.append(f"{path.name} {op}: {verdicts}")
    assert not failures, "\n".join(failures)
