"""The exported Kornia training loader: batched RandomResizedCrop for mixed sizes, GPU decoding
(with its PIL fallbacks), and the byte-reading dataset. CPU tests; the CUDA ones skip without it."""
import builtins
import shutil
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

import workbench as wb
from workbench.runtime.common import decode_image

from conftest import assert_bench_output, import_export, run_script

CROP_CHAIN = {"seed": 4, "steps": [
    {"op": "RandomResizedCrop", "params": {"size": [56, 72], "scale": [0.2, 1.0], "ratio": [0.75, 1.3333]}},
    {"op": "HorizontalFlip", "p": 0.5},
    {"op": "Brightness", "params": {"factor": [0.8, 1.2]}}]}


@pytest.fixture(scope="module")
def crop_module(tmp_path_factory):
    """The exported module of CROP_CHAIN (first step RandomResizedCrop)."""
    return import_export(wb.Chain.from_dict(CROP_CHAIN), "kornia", tmp_path_factory.mktemp("crop"), "crop_aug",
                         gpu_decode=True)


@pytest.fixture(scope="module")
def mixed_folder(tmp_path_factory, sample_images):
    """Two classes of PNG photos of five different sizes: "dark" (pixels divided by 8) and "light"."""
    root = tmp_path_factory.mktemp("mixed")
    sizes = [(90, 120), (64, 64), (120, 80), (75, 100), (100, 150), (60, 90)]
    for i, (image, (h, w)) in enumerate(zip(sample_images, sizes)):
        pil = Image.fromarray(image).convert("RGB").resize((w, h), Image.BILINEAR)
        cls = "dark" if i % 2 == 0 else "light"
        (root / cls).mkdir(exist_ok=True)
        array = np.asarray(pil) // 8 if cls == "dark" else np.maximum(np.asarray(pil), 64)
        Image.fromarray(array.astype(np.uint8)).save(root / cls / f"img_{i:02d}.png")
    return root


def kornia_windows(module, height, width, count, seed):
    """Windows [x0, y0, w, h] that the chain's own Kornia RandomResizedCrop draws for a batch of one size."""
    crop = module.build_augmentation()[0]
    torch.manual_seed(seed)
    src = crop.forward_parameters((count, 3, height, width))["src"]
    return torch.stack([src[:, 0, 0], src[:, 0, 1], src[:, 1, 0] - src[:, 0, 0] + 1,
                        src[:, 2, 1] - src[:, 0, 1] + 1], dim=1).long()


# ----------------------------------------------------------------------------- the sampler
def test_emitted_crop_constant(crop_module, tmp_path):
    assert crop_module.RESIZED_CROP == {"size": (56, 72), "scale": (0.2, 1.0), "ratio": (0.75, 1.3333),
                                        "resample": "BILINEAR"}
    resize_first = import_export(wb.Chain.from_dict({"steps": [{"op": "Resize", "params": {"size": [40, 40]}},
                                                               {"op": "RandomResizedCrop"}]}), "kornia", tmp_path, "rf")
    assert resize_first.RESIZED_CROP is None


@pytest.mark.parametrize("height,width", [(300, 400), (90, 120), (40, 900), (900, 40)])
def test_sampler_draws_kornias_windows_for_one_size(crop_module, height, width):
    """On a batch of one size the batched sampler and Kornia's RandomResizedCrop draw the same
    windows from the same seed, the fallback for extreme shapes included."""
    ours = None
    for seed in (0, 1, 2):
        torch.manual_seed(seed)
        ours = crop_module.resized_crop_windows([height] * 64, [width] * 64)
        assert torch.equal(ours, kornia_windows(crop_module, height, width, 64, seed))
    assert ours.dtype == torch.int64 and ours.shape == (64, 4)


def test_sampler_windows_follow_the_ops_ranges(crop_module):
    heights = [480, 375, 500, 333, 640, 427] * 40
    widths = [640, 500, 375, 500, 480, 640] * 40
    windows = crop_module.resized_crop_windows(heights, widths, torch.Generator().manual_seed(3))
    x0, y0, w, h = windows.T.double()
    H, W = torch.tensor(heights).double(), torch.tensor(widths).double()
    # Inside each image, and at least one pixel.
    assert (x0 >= 0).all() and (y0 >= 0).all() and (w >= 1).all() and (h >= 1).all()
    assert (x0 + w <= W).all() and (y0 + h <= H).all()
    # Area fraction in `scale` and aspect ratio in `ratio`, up to the rounding of each side to a pixel.
    slack = 0.5 / torch.minimum(w, h) * 2.2
    fraction, aspect = w * h / (H * W), w / h
    assert (fraction >= 0.2 * (1 - slack)).all() and (fraction <= 1.0).all()
    assert (aspect >= 0.75 * (1 - slack)).all() and (aspect <= 1.3333 * (1 + slack)).all()
    # Spread over the range, and different per sample.
    assert fraction.min() < 0.3 and fraction.max() > 0.9
    assert len({tuple(r) for r in windows.tolist()}) == len(windows)


def test_sampler_fallback_and_reproducibility(crop_module):
    """Images too narrow or too wide for `ratio` at any tried area keep the documented fallback
    window: the full width (height = width / 0.75) or the full height (width = height * 1.3333)."""
    windows = crop_module.resized_crop_windows([1000, 10], [10, 1000], torch.Generator().manual_seed(0))
    (x0, y0, w, h), (x1, y1, w1, h1) = windows.tolist()
    assert (x0, w, h) == (0, 10, round(10 / 0.75)) and 0 <= y0 <= 1000 - h
    assert (y1, h1, w1) == (0, 10, round(10 * 1.3333)) and 0 <= x1 <= 1000 - w1
    a = crop_module.resized_crop_windows([300, 200], [400, 500], torch.Generator().manual_seed(9))
    b = crop_module.resized_crop_windows([300, 200], [400, 500], torch.Generator().manual_seed(9))
    c = crop_module.resized_crop_windows([300, 200], [400, 500], torch.Generator().manual_seed(10))
    assert torch.equal(a, b) and not torch.equal(a, c)


# ------------------------------------------------------------------------- crop and resize
def per_image_reference(image, window, size, interpolation):
    """Kornia's own crop of one image (what RandomResizedCrop runs in slice mode): float in [0, 1]."""
    from kornia.geometry.transform import crop_by_indices

    x0, y0, w, h = window.tolist()
    box = torch.tensor([[[x0, y0], [x0 + w - 1, y0], [x0 + w - 1, y0 + h - 1], [x0, y0 + h - 1]]], dtype=torch.float32)
    return crop_by_indices(image[None].float().div(255), box, size, interpolation=interpolation,
                           align_corners=False if interpolation == "bilinear" else None)[0]


@pytest.mark.parametrize("scale,resample", [((0.08, 1.0), "BILINEAR"), ((0.001, 0.01), "BILINEAR"),
                                            ((0.05, 1.0), "NEAREST")])
def test_batched_crops_equal_per_image_crops(crop_module, sample_images, monkeypatch, scale, resample):
    """One batched crop-and-resize of the bundled photos (mixed sizes, downscaled and, with tiny
    windows, upscaled) equals Kornia's per-image crop of the same windows."""
    size = (64, 80)
    monkeypatch.setattr(crop_module, "RESIZED_CROP", {"size": size, "scale": scale, "ratio": (0.5, 2.0),
                                                      "resample": resample})
    images = [torch.from_numpy(np.ascontiguousarray(i)).permute(2, 0, 1) for i in sample_images]
    assert len({tuple(i.shape) for i in images}) > 3
    windows = crop_module.resized_crop_windows([i.shape[1] for i in images], [i.shape[2] for i in images],
                                               torch.Generator().manual_seed(5))
    out = crop_module.resized_crops(images, windows)
    assert out.shape == (len(images), 3, *size) and out.dtype == torch.float32
    mode = "bilinear" if resample == "BILINEAR" else "nearest-exact"
    for k, image in enumerate(images):
        reference = per_image_reference(image, windows[k], size, mode)
        assert torch.allclose(out[k], reference, atol=1e-5, rtol=0), f"image {k}: {(out[k] - reference).abs().max()}"


def test_batched_crop_of_a_whole_image_is_a_plain_resize(crop_module):
    """A full-image window resamples like torch's own bilinear resize (half-pixel centres)."""
    image = torch.randint(0, 256, (3, 30, 45), dtype=torch.uint8, generator=torch.Generator().manual_seed(1))
    out = crop_module.resized_crops([image], torch.tensor([[0, 0, 45, 30]]))
    expected = torch.nn.functional.interpolate(image[None].float() / 255, size=(56, 72), mode="bilinear",
                                               align_corners=False)
    assert torch.allclose(out, expected, atol=1e-5)


# ------------------------------------------------------------------------------ the loader
def loader_run(module, root, seed, batch_size=3):
    return [(e, x.numpy().copy(), y.tolist()) for e, x, y in
            module.training_batches(root, batch_size, epochs=2, workers=0, seed=seed, device="cpu", num_samples=6)]


def test_loader_crops_mixed_sizes_in_one_batched_op(crop_module, mixed_folder, monkeypatch):
    calls = []
    original = crop_module.resized_crops

    def spy(images, windows):
        calls.append(len(images))
        return original(images, windows)

    monkeypatch.setattr(crop_module, "resized_crops", spy)
    a, b, c = loader_run(crop_module, mixed_folder, 5), loader_run(crop_module, mixed_folder, 5), \
        loader_run(crop_module, mixed_folder, 6)
    assert calls and all(n == 3 for n in calls)  # batches of mixed sizes, each cropped in one call
    assert [e for e, _, _ in a] == [0, 0, 1, 1]
    for _, x, y in a:
        assert x.shape == (3, 3, 56, 72) and x.dtype == np.float32 and 0 <= x.min() and x.max() <= 1.2
        # Labels are the class folders ("dark" = 0, "light" = 1): dark images stay dark.
        means = x.reshape(3, -1).mean(1)
        assert all((m < 0.12) == (label == 0) for m, label in zip(means, y)), (means, y)
    assert all(np.array_equal(x1, x2) and y1 == y2 for (_, x1, y1), (_, x2, y2) in zip(a, b))
    assert not all(np.array_equal(x1, x2) for (_, x1, _), (_, x2, _) in zip(a, c))


def test_loader_without_a_first_crop_runs_the_head_per_image(mixed_folder, tmp_path, monkeypatch):
    chain = wb.Chain.from_dict({"seed": 2, "steps": [{"op": "Rotate", "p": 1.0, "params": {"degrees": [-10, 10]}},
                                                     {"op": "Resize", "params": {"size": [40, 48]}},
                                                     {"op": "RandomResizedCrop", "params": {"size": [32, 32]}}]})
    module = import_export(chain, "kornia", tmp_path, "rotate_first")
    assert module.RESIZED_CROP is None and module.HEAD_STEPS == 2
    monkeypatch.setattr(module, "resized_crops",
                        lambda *a: pytest.fail("no batched crop without a first RandomResizedCrop"))
    a, b = loader_run(module, mixed_folder, 1), loader_run(module, mixed_folder, 1)
    assert [x.shape for _, x, _ in a] == [(3, 3, 32, 32)] * 4
    assert all(np.array_equal(x1, x2) and y1 == y2 for (_, x1, y1), (_, x2, y2) in zip(a, b))


def test_mixing_chain_with_a_first_crop_mixes_labels(mixed_folder, tmp_path):
    chain = wb.Chain.from_dict({"seed": 1, "steps": [{"op": "RandomResizedCrop", "params": {"size": [32, 32]}},
                                                     {"op": "MixUp", "p": 1.0}]})
    module = import_export(chain, "kornia", tmp_path, "mix_first_crop")
    for _, x, y in module.training_batches(mixed_folder, 3, workers=0, seed=3, device="cpu", num_samples=6):
        assert x.shape == (3, 3, 32, 32) and y.shape == (3, 2) and y.dtype == torch.float32
        assert torch.allclose(y.sum(1), torch.ones(3))


# ------------------------------------------------------------------------------- decoding
@pytest.fixture(scope="module")
def jpeg_folder(tmp_path_factory, sample_images):
    """The bundled photos as JPEG files (greyscale ones as greyscale JPEGs), plus one PNG."""
    root = tmp_path_factory.mktemp("jpegs")
    for i, image in enumerate(sample_images[:5]):
        Image.fromarray(image).save(root / f"img_{i:02d}.jpg", quality=90)
    Image.fromarray(sample_images[0][:, :, 0]).save(root / "img_05.jpg", quality=90)  # a greyscale JPEG
    Image.fromarray(sample_images[5]).save(root / "img_06.png")
    return root


def test_encoded_dataset_returns_exact_jpeg_bytes(crop_module, jpeg_folder):
    ds = crop_module.EncodedImageFolderDataset(jpeg_folder)
    plain = crop_module.ImageFolderDataset(jpeg_folder)
    assert list(ds.files) == list(plain.files) and ds.labels.tolist() == plain.labels.tolist()
    for i, path in enumerate(ds.files):
        payload, label, skipped, name = ds[i]
        assert label == 0 and payload.dtype == torch.uint8 and skipped == ()
        assert name == (str(path) if path.suffix == ".jpg" else None)  # (how a GPU decoding error names it)
        if path.suffix == ".jpg":
            assert payload.dim() == 1 and payload.numpy().tobytes() == path.read_bytes()
        else:  # a PNG is decoded in the worker, as the PIL loader decodes it
            assert torch.equal(payload, torch.from_numpy(decode_image(path)).permute(2, 0, 1))


def test_a_batch_of_files_crosses_from_the_workers_packed_and_comes_back_whole(crop_module, jpeg_folder):
    ds = crop_module.EncodedImageFolderDataset(jpeg_folder)
    items = [ds[i] for i in range(len(ds))]
    (packed, sizes, decoded, names), labels, skipped = crop_module.collate_encoded(items)
    assert skipped == () and names == tuple(item[3] for item in items)
    assert packed.dim() == 1 and len(decoded) == 1 and (sizes < 0).sum() == 1  # one PNG, decoded in the worker
    assert packed.numel() == sum(path.stat().st_size for path in ds.files if path.suffix == ".jpg")
    for (payload, *_), unpacked in zip(items, crop_module.unpack_payloads((packed, sizes, decoded, names))):
        assert torch.equal(payload, unpacked)
    assert labels.tolist() == [item[1] for item in items]


def test_decode_batch_falls_back_to_pil_per_file(crop_module, jpeg_folder):
    """Files the GPU decoder refuses (None) or returns in another layout (one channel) are decoded
    with PIL, those only; every image ends as decode_image gives it."""
    ds = crop_module.EncodedImageFolderDataset(jpeg_folder)
    payloads = crop_module.unpack_payloads(crop_module.collate_encoded([ds[i] for i in range(len(ds))])[0])
    seen = []

    def fake_gpu_decode(encoded):  # stands in for nvImageCodec: exact for some files, refuses others
        seen.append(len(encoded))
        out = [crop_module.decode_bytes_with_pil(data) for data in encoded]
        if len(out) > 2:
            out[1], out[2] = None, out[2][:1]
        return out

    images, bad = crop_module.decode_batch(payloads, fake_gpu_decode, torch.device("cpu"))
    assert seen == [6] and bad == {}  # the six JPEGs in one call; the PNG was decoded by the worker
    assert isinstance(images, list) and len(images) == 7
    for image, path in zip(images, ds.files):
        assert torch.equal(image, torch.from_numpy(decode_image(path)).permute(2, 0, 1)), path
    same, _ = crop_module.decode_batch([payloads[0], payloads[0]], fake_gpu_decode, torch.device("cpu"))
    assert torch.is_tensor(same) and same.shape == (2, *images[0].shape)


def test_a_gpu_decoder_refusing_most_files_is_said_once(crop_module, jpeg_folder):
    # nvImageCodec without its nvJPEG plugin returns None for every file: PIL then decodes them all
    # in the main process, which must not go unsaid (but once, not every batch).
    ds = crop_module.EncodedImageFolderDataset(jpeg_folder)
    payloads = crop_module.unpack_payloads(crop_module.collate_encoded([ds[i] for i in range(len(ds))])[0])
    crop_module.GPU_DECODE_REFUSALS_WARNED.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        crop_module.decode_batch(payloads, lambda encoded: [crop_module.decode_bytes_with_pil(d) for d in encoded],
                                 torch.device("cpu"))
        assert caught == []
        for _ in range(2):
            images, _ = crop_module.decode_batch(payloads, lambda encoded: [None] * len(encoded),
                                                 torch.device("cpu"))
    said = [w for w in caught if "refused 6 of the 6 JPEGs" in str(w.message)]
    assert len(said) == 1 and "nvidia-nvjpeg-cu13" in str(said[0].message)
    for image, path in zip(images, ds.files):
        assert torch.equal(image, torch.from_numpy(decode_image(path)).permute(2, 0, 1)), path


def test_gpu_decoders_refuse_clearly_without_their_packages(crop_module, monkeypatch, tmp_path, jpeg_folder):
    real_import = builtins.__import__

    def no_gpu_decoders(name, globals=None, locals=None, fromlist=(), level=0):
        if name.startswith("torchvision") or (name == "nvidia" and "nvimgcodec" in (fromlist or ())) \
                or name.startswith("nvidia.nvimgcodec"):
            raise ImportError(f"No module named {name!r} (hidden by the test)")
        return real_import(name, globals, locals, fromlist, level)

    monkeypatch.setattr(builtins, "__import__", no_gpu_decoders)
    assert not crop_module.gpu_decoder_imports("nvimgcodec") and not crop_module.gpu_decoder_imports("torchvision")
    # "auto" falls back to PIL on CUDA too; a GPU decoder named outright says what to install.
    assert crop_module.resolve_decoder("auto", "cuda") == "pil"
    assert crop_module.resolve_decoder("auto", "cpu") == "pil"
    with pytest.raises(ImportError, match="decoder 'nvimgcodec' does not import here: install nvidia-nvimgcodec"):
        crop_module.resolve_decoder("nvimgcodec", "cuda:0")
    with pytest.raises(ImportError, match="decoder 'torchvision' does not import here"):
        crop_module.resolve_decoder("torchvision", "cuda")
    monkeypatch.setattr(builtins, "__import__", real_import)
    with pytest.raises(ValueError, match="decodes on a CUDA device, but the device is cpu"):
        crop_module.make_loader(jpeg_folder, 2, workers=0, device="cpu", decoder="nvimgcodec")
    with pytest.raises(ValueError, match="unknown decoder 'jpeg'; choose one of auto, pil, nvimgcodec"):
        crop_module.resolve_decoder("jpeg", "cpu")
    # On the CPU the default loader stays today's: PIL in the workers.
    assert isinstance(crop_module.make_loader(jpeg_folder, 2, workers=0).dataset, crop_module.ImageFolderDataset)
    assert not isinstance(crop_module.make_loader(jpeg_folder, 2, workers=0).dataset,
                          crop_module.EncodedImageFolderDataset)


def test_decoder_flag_on_the_cpu(tmp_path, jpeg_folder):
    script = tmp_path / "aug.py"
    wb.Chain.from_dict(CROP_CHAIN).export("kornia", path=script.name, folder=tmp_path, gpu_decode=True)
    bench = run_script(script, "--images", str(jpeg_folder), "--bench", "--batch-size", "4", "--batches", "2",
                       "--runs", "1", "--warmup", "1", "--workers", "1", "--decoder", "pil")
    assert "decoder: pil" in bench.stdout
    assert_bench_output(bench.stdout, runs=1)


def test_a_program_without_gpu_decoding_decodes_with_pil_and_refuses_a_named_gpu_decoder(tmp_path, jpeg_folder):
    module = import_export(wb.Chain.from_dict(CROP_CHAIN), "kornia", tmp_path, "crop_plain")
    assert module.resolve_decoder("auto", "cpu") == "pil" and module.resolve_decoder("pil", "cpu") == "pil"
    with pytest.raises(SystemExit, match="exported without them. Export the chain again with gpu_decode=True"):
        module.make_loader(jpeg_folder, 4, workers=0, decoder="torchvision")
    with pytest.raises(ValueError, match="unknown decoder 'nvjpeg'; choose one of auto, pil, nvimgcodec, torchvision"):
        module.resolve_decoder("nvjpeg", "cpu")


# ----------------------------------------------------------------------------------- CUDA
cuda = pytest.mark.cuda


@cuda
def test_a_program_without_gpu_decoding_trains_on_cuda_with_pil_and_says_so_once(tmp_path, jpeg_folder):
    module = import_export(wb.Chain.from_dict(CROP_CHAIN), "kornia", tmp_path, "crop_plain_cuda")
    with pytest.warns(RuntimeWarning, match="exported without GPU decoding; export it with gpu_decode=True"):
        batches = list(module.training_batches(jpeg_folder, 3, workers=1, seed=1, device="cuda", num_samples=6))
    assert [tuple(x.shape) for _, x, _ in batches] == [(3, 3, 56, 72)] * 2 and all(x.is_cuda for _, x, _ in batches)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*exported without GPU decoding")  # said once a process
        next(module.training_batches(jpeg_folder, 3, workers=0, seed=1, device="cuda", num_samples=3))


@cuda
@pytest.mark.parametrize("decoder", ["auto", "nvimgcodec", "torchvision"])
def test_gpu_decoding_matches_pil(crop_module, jpeg_folder, decoder):
    device = torch.device("cuda")
    if decoder != "auto" and not crop_module.gpu_decoder_imports(decoder):
        pytest.skip(f"{decoder} does not import here")
    name = crop_module.resolve_decoder(decoder, device)
    assert name != "pil", "no GPU decoder imports on this CUDA machine"
    loader = crop_module.make_loader(jpeg_folder, 7, workers=0, device=device, decoder=name)
    ds = loader.dataset
    payloads = crop_module.unpack_payloads(crop_module.collate_encoded([ds[i] for i in range(len(ds))])[0])
    decode = loader.decode
    images, _ = crop_module.decode_batch(payloads, decode, device)
    for image, path in zip(images, ds.files):
        expected = torch.from_numpy(decode_image(path)).permute(2, 0, 1).to(device)
        assert image.device.type == "cuda" and image.shape == expected.shape and image.dtype == torch.uint8
        assert (image.float() - expected.float()).abs().mean().item() < 2.0, path
    # The training loop on the GPU: float batches on the device, cropped in one op.
    for _, x, y in crop_module.training_batches(jpeg_folder, 3, workers=1, seed=1, device=device, num_samples=6,
                                                decoder=name):
        assert x.device.type == "cuda" and x.shape == (3, 3, 56, 72) and y.device.type == "cuda"


@cuda
def test_torchvision_gpu_decoding_waits_for_the_work_queued_before_it(crop_module, jpeg_folder, monkeypatch):
    """nvJPEG writes torchvision's outputs on a stream of its own: while the GPU lags the host, a
    new batch's decoding could overwrite memory the previous batch's augmentation still reads
    (SUSPECTS.md, vision PR 9606). Each decode here follows a queued 0.1 s GPU sleep; the batches,
    kept on the GPU until the end (a copy to the host would wait and hide it), must equal those of
    an unhurried run."""
    device = torch.device("cuda")
    if not crop_module.gpu_decoder_imports("torchvision"):
        pytest.skip("torchvision's GPU decoder does not import here")

    def batches():
        return [x for _, x, _ in crop_module.training_batches(jpeg_folder, 3, workers=0, seed=5, device=device,
                                                              num_samples=12, decoder="torchvision")]

    calm = [x.cpu() for x in batches()]
    real = crop_module.torchvision_jpeg_decoder

    def lagging(dev):
        decode = real(dev)
        return lambda encoded: (torch.cuda._sleep(int(2e8)), decode(encoded))[1]

    monkeypatch.setattr(crop_module, "torchvision_jpeg_decoder", lagging)
    hurried = batches()
    assert len(hurried) == len(calm) >= 2
    for k, (x, y) in enumerate(zip(hurried, calm)):
        assert torch.equal(x.cpu(), y), f"batch {k} changed while the GPU lagged"


@cuda
def test_bench_on_cuda(tmp_path, jpeg_folder):
    script = tmp_path / "aug.py"
    wb.Chain.from_dict(CROP_CHAIN).export("kornia", path=script.name, folder=tmp_path, gpu_decode=True)
    bench = run_script(script, "--images", str(jpeg_folder), "--bench", "--device", "cuda", "--batch-size", "4",
                       "--batches", "3", "--runs", "2", "--warmup", "1", "--workers", "2")
    assert "device: cuda" in bench.stdout
    assert_bench_output(bench.stdout, runs=2)


def test_nvimgcodec_settings_decode_what_pil_decodes(crop_module, jpeg_folder):
    """The export's nvImageCodec options and parameters, on nvImageCodec's CPU backend (the GPU
    one is checked where there is a GPU): one batched call, PIL's pixels exactly, greyscale JPEGs
    as three channels."""
    nvimgcodec = pytest.importorskip("nvidia.nvimgcodec")
    decoder = nvimgcodec.Decoder(device_id=nvimgcodec.NVIMGCODEC_DEVICE_CPU_ONLY,
                                 backends=[nvimgcodec.Backend(nvimgcodec.BackendKind.CPU_ONLY)],
                                 options=crop_module.NVIMGCODEC_OPTIONS)
    files = sorted(jpeg_folder.glob("*.jpg"))
    streams = [nvimgcodec.CodeStream(np.fromfile(f, dtype=np.uint8)) for f in files]
    images = decoder.decode(streams, params=crop_module.nvimgcodec_params())
    for path, image in zip(files, images):
        assert np.array_equal(np.asarray(image.cpu()), decode_image(path)), path.name


def test_gpu_decoding_loader_end_to_end_with_worker_processes(crop_module, jpeg_folder):
    """The GPU path's plumbing on the CPU: two worker processes read and pack the bytes, the
    loader unpacks and hands every batch's JPEGs to the decoder in one call (here PIL on the
    bytes, standing in for nvImageCodec), and the images are the files' own."""
    from torch.utils.data import DataLoader

    calls = []

    def decode(encoded):
        calls.append(len(encoded))
        return [crop_module.decode_bytes_with_pil(data) for data in encoded]

    ds = crop_module.EncodedImageFolderDataset(jpeg_folder)
    loader = crop_module.GpuDecodingLoader(DataLoader(ds, batch_size=4, num_workers=2,
                                                      collate_fn=crop_module.collate_encoded),
                                           decode, torch.device("cpu"), "stand-in")
    images = [image for batch, _, _ in loader for image in batch]
    assert len(images) == len(ds.files) and calls == [4, 2]  # the PNG (one of the 7) was decoded in a worker
    for image, path in zip(images, ds.files):
        assert torch.equal(image, torch.from_numpy(decode_image(path)).permute(2, 0, 1)), path.name


def test_decoding_ahead_gives_the_same_batches_in_the_same_order(crop_module, jpeg_folder):
    """decode_ahead: a thread decodes batch k + 1 while the caller holds batch k; the batches, their
    order and the labels are the loader's, the decoder sees each batch once, and a decoding error
    reaches the caller (on the CPU here, with PIL standing in for the GPU decoder)."""
    from torch.utils.data import DataLoader

    ds = crop_module.EncodedImageFolderDataset(jpeg_folder)

    def run(ahead, decode):
        loader = crop_module.GpuDecodingLoader(DataLoader(ds, batch_size=2, num_workers=0,
                                                          collate_fn=crop_module.collate_encoded),
                                               decode, torch.device("cpu"), "stand-in", ahead=ahead)
        return [(images, labels) for images, labels, _ in loader]

    calls = []

    def decode(encoded):
        calls.append(threading.current_thread().name)
        return [crop_module.decode_bytes_with_pil(data) for data in encoded]

    plain, ahead = run(False, decode), run(True, decode)
    assert len(plain) == len(ahead) == 4  # (7 files by 2: the last batch is the PNG, decoded in the dataset)
    for (a, la), (b, lb) in zip(plain, ahead):
        assert torch.equal(la, lb) and all(torch.equal(x, y) for x, y in zip(a, b))
    assert calls[:3] == ["MainThread"] * 3 and all(name.startswith("decode-ahead") for name in calls[3:])

    def broken(encoded):
        raise RuntimeError("the decoder failed")

    with pytest.raises(RuntimeError, match="the decoder failed"):
        run(True, broken)


@cuda
def test_decoding_ahead_on_the_gpu_gives_the_same_batches(crop_module, jpeg_folder):
    """--decode-ahead with the GPU decoder: the same images, bit for bit, in the same order, while a
    lagging GPU (a sleep queued before each batch is used) keeps the decoding thread ahead."""
    device = torch.device("cuda")
    runs = []
    for ahead in (False, True):
        loader = crop_module.make_loader(jpeg_folder, 2, workers=0, device=device, seed=4, decode_ahead=ahead)
        assert loader.ahead is ahead
        batches = []
        for images, labels, _ in loader:
            torch.cuda._sleep(int(2e7))  # the caller's kernels lag: the next batch decodes meanwhile
            batches.append(([image.clone() for image in images], labels.clone()))
        runs.append(batches)
    torch.cuda.synchronize()
    assert len(runs[0]) == len(runs[1]) > 1
    for (a, la), (b, lb) in zip(*runs):
        assert torch.equal(la, lb) and all(torch.equal(x, y) for x, y in zip(a, b))


@cuda
def test_the_gpu_decoding_loader_names_or_skips_bad_files_on_cuda(crop_module, jpeg_folder, tmp_path):
    """A truncated JPEG (cut before its end marker: PIL in the worker), an empty file and text named
    .jpg among real JPEGs, decoded on the GPU: one line naming the first met, or with skip_bad full
    batches of the readable files (CPU stand-in: tests/test_bad_files.py)."""
    bad = Path(__file__).parent / "data" / "bad_images"
    root = tmp_path / "train"
    shutil.copytree(jpeg_folder, root)
    for name in ("truncated.jpg", "empty.jpg", "notes.jpg"):
        shutil.copy(bad / name, root / f"x_{name}")
    with pytest.raises(crop_module.BadImageError, match=r"x_\w+\.jpg: ") as caught:
        list(crop_module.training_batches(str(root), 5, workers=1, seed=2, device="cuda", decoder="auto"))
    assert "\n" not in str(caught.value)
    batches = list(crop_module.training_batches(str(root), 5, workers=1, seed=2, device="cuda", decoder="auto",
                                                skip_bad=True))
    assert len(batches) == 2 and all(images.shape[0] == 5 and images.is_cuda for _, images, _ in batches)
