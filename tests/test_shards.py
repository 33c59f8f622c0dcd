"""WebDataset tar shards in the exported training loaders (Kornia and DALI): --shards patterns,
how members group into samples, labels from .cls members, and sharding by rank (every sample
exactly once per epoch across the ranks, reshuffled per epoch)."""
import io
import json
import socket
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

import workbench as wb
from workbench.runtime.common import expand_braces, shard_paths, shard_samples

from conftest import ENV, import_export

SHARDS, PER_SHARD = 4, 4
COUNT = SHARDS * PER_SHARD
PATTERN = "train-{0000..0003}.tar"


def level(n):
    """Sample n's image is one flat grey level, so that any output pixel tells which sample it is."""
    return 10 * n + 5


def expected_label(n):
    """Sample n's class id (two digits for odd n); every fourth sample has no .cls: label 0."""
    return 0 if n % 4 == 0 else n % 3 + 10 * (n % 2)


def add_member(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def encoded(n, fmt):
    buffer = io.BytesIO()
    Image.fromarray(np.full((20, 24, 3), level(n), np.uint8)).save(buffer, fmt, quality=95)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def shard_dir(tmp_path_factory):
    """Four shards of four samples: JPEG and PNG images (one .JPG), .cls members as b"2" or
    b" 11\\n", missing on every fourth sample, and a metadata-only entry that is no sample."""
    folder = tmp_path_factory.mktemp("shards")
    for s in range(SHARDS):
        with tarfile.open(folder / f"train-{s:04d}.tar", "w") as tar:
            for n in range(s * PER_SHARD, (s + 1) * PER_SHARD):
                ext = {0: "jpg", 1: "png", 2: "JPG", 3: "png"}[n % 4]
                add_member(tar, f"part{s}/sample{n:03d}.{ext}", encoded(n, "PNG" if ext == "png" else "JPEG"))
                if n % 4:
                    text = f" {expected_label(n)}\n" if n % 2 else str(expected_label(n))
                    add_member(tar, f"part{s}/sample{n:03d}.cls", text.encode())
            add_member(tar, f"part{s}/meta.json", b"{}")  # no image: not a sample
    return folder


@pytest.fixture(scope="module")
def resize_chain():
    return wb.Chain(seed=1).add("Resize", size=[32, 32])


@pytest.fixture(scope="module")
def kornia_module(tmp_path_factory, resize_chain):
    return import_export(resize_chain, "kornia", tmp_path_factory.mktemp("kornia_export"), "shards_kornia", shards=True,
                         gpu_decode=True)


@pytest.fixture(scope="module")
def dali_module(tmp_path_factory, resize_chain):
    return import_export(resize_chain, "dali", tmp_path_factory.mktemp("dali_export"), "shards_dali", shards=True)


def sample_of(value):
    """The sample whose grey level `value` (0-255) is."""
    n = round((float(value) - 5) / 10)
    assert abs(float(value) - level(n)) <= 3, value
    return n


def test_patterns_expand_and_a_bad_pattern_says_how_to_write_it(shard_dir, monkeypatch):
    assert expand_braces("t-{0008..0011}.tar") == ["t-0008.tar", "t-0009.tar", "t-0010.tar", "t-0011.tar"]
    assert expand_braces("{a,b}-{1..2}") == ["a-1", "a-2", "b-1", "b-2"]
    monkeypatch.chdir(shard_dir)
    names = [f"train-{s:04d}.tar" for s in range(SHARDS)]
    for spec in (PATTERN, "train-*.tar", "train-0000.tar,train-{0001..0003}.tar", names):
        assert [p.name for p in shard_paths(spec)] == names
    with pytest.raises(FileNotFoundError, match=r"shards 'train-\{0000\.\.0004\}\.tar' names 5 files, 1 of them "
                                                r"missing \(first missing: train-0004\.tar.*brace range"):
        shard_paths("train-{0000..0004}.tar")
    with pytest.raises(ValueError, match=r"shards 'train-\{0000\.\.\}\.tar': \{0000\.\.\} is neither a range"):
        shard_paths("train-{0000..}.tar")
    with pytest.raises(ValueError, match=r"is not closed"):
        shard_paths("train-{0000..0003.tar")
    with pytest.raises(FileNotFoundError, match=r"is a folder, not a tar file.*--images"):
        shard_paths(".")


@pytest.mark.parametrize("backend", ["kornia", "dali"])
def test_exported_script_refuses_a_bad_shards_pattern(backend, kornia_module, dali_module, shard_dir, tmp_path,
                                                      capsys):
    module = kornia_module if backend == "kornia" else dali_module
    pattern = str(shard_dir / "val-{0000..0003}.tar")
    with pytest.raises(SystemExit) as stopped:
        module.main(["--shards", pattern, "--save", str(tmp_path / "out.npz")])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and not (tmp_path / "out.npz").exists()
    assert f"error: shards {pattern!r} matches no file" in err and "'data/train-{0000..0099}.tar'" in err
    assert "quote it on the command line" in err
    with pytest.raises(SystemExit):  # one source, not both
        module.main(["--shards", pattern, "--images", str(shard_dir)])
    assert "not allowed with argument" in capsys.readouterr().err


def test_members_group_into_samples_as_dali_groups_them(shard_dir, tmp_path):
    samples = shard_samples(shard_dir / "train-0000.tar")
    assert [(key, image[0], label) for key, image, label, _ in samples] == [
        ("part0/sample000", "part0/sample000.jpg", 0), ("part0/sample001", "part0/sample001.png", 11),
        ("part0/sample002", "part0/sample002.JPG", 2), ("part0/sample003", "part0/sample003.png", 10)]
    assert samples[0][3] is None and samples[1][3][2] == 3  # no .cls; b" 11\n" without its newline
    # A harder tar: keys keep their folder (dots there do not count), the extension is all after
    # the first dot of the file name ("a.b.png" is no png), hidden files and folders are
    # skipped, and a key that comes back later is another sample.
    odd = tmp_path / "odd.tar"
    with tarfile.open(odd, "w") as tar:
        folder = tarfile.TarInfo("d.x")
        folder.type = tarfile.DIRTYPE
        tar.addfile(folder)
        for name, data in [("d.x/f.png", encoded(1, "PNG")), ("d.x/f.cls", b"7"), ("a.b.png", encoded(2, "PNG")),
                           ("a.b.cls", b"5"), (".hidden.png", encoded(3, "PNG")), ("c.png", encoded(4, "PNG")),
                           ("e.cls", b"12"), ("e.png", encoded(5, "PNG")), ("c.jpg", encoded(6, "JPEG"))]:
            add_member(tar, name, data)
    ours = [(image[0], label) for _, image, label, _ in shard_samples(odd)]
    assert ours == [("d.x/f.png", 7), ("c.png", 0), ("e.png", 12), ("c.jpg", 0)]

    # DALI's own reader (its own index of the tar) finds the same image members.
    from nvidia.dali import fn, pipeline_def

    @pipeline_def
    def images_only():
        return fn.readers.webdataset(paths=[str(odd)], ext=["png;jpg"], missing_component_behavior="skip",
                                     name="Reader")

    pipe = images_only(batch_size=1, num_threads=1, device_id=None)
    pipe.build()
    dali = [pipe.run()[0][0].source_info().rsplit(":", 1)[-1] for _ in range(pipe.reader_meta("Reader")["epoch_size"])]
    assert dali == [image for image, _ in ours]

    bad = tmp_path / "bad.tar"
    with tarfile.open(bad, "w") as tar:
        add_member(tar, "x.jpg", encoded(1, "JPEG"))
        add_member(tar, "x.cls", b"cat")
    with pytest.raises(ValueError, match=r"bad\.tar: x\.cls holds b'cat', not a class id: .*non-negative whole number"):
        shard_samples(bad)
    with tarfile.open(tmp_path / "zipped.tar.gz", "w:gz") as tar:
        add_member(tar, "x.jpg", encoded(1, "JPEG"))
    with pytest.raises(ValueError, match=r"zipped\.tar\.gz is not an uncompressed tar file"):
        shard_samples(tmp_path / "zipped.tar.gz")


def test_kornia_loader_two_ranks_see_every_sample_once_per_epoch(kornia_module, shard_dir, tmp_path):
    """torchrun with two ranks (gloo, CPU): per epoch the ranks' samples are disjoint, together
    every sample once, with the labels of their .cls members; each epoch reshuffles."""
    driver = tmp_path / "driver.py"
    driver.write_text(
        "import json, sys\n"
        "import torch.distributed as dist\n"
        f"sys.path.insert(0, {str(Path(kornia_module.__file__).parent)!r})\n"
        "import shards_kornia\n"
        "dist.init_process_group('gloo')\n"
        "seen = [[], []]\n"
        f"for epoch, images, labels in shards_kornia.training_batches(shards={str(shard_dir / PATTERN)!r}, "
        "batch_size=2, epochs=2, workers=1, seed=3, device='cpu'):\n"
        "    seen[epoch] += [[float(x[0, 0, 0]) * 255, int(y)] for x, y in zip(images, labels)]\n"
        f"json.dump(seen, open({str(tmp_path)!r} + f'/rank{{dist.get_rank()}}.json', 'w'))\n"
        "dist.destroy_process_group()\n")
    with socket.socket() as sock:  # a free port for the rendezvous
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-addr",
                           "127.0.0.1", "--master-port", str(port), str(driver)], capture_output=True, text=True,
                          env=ENV, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    for epoch in (0, 1):
        parts = [[(sample_of(value), label) for value, label in rank[epoch]] for rank in ranks]
        assert [len(part) for part in parts] == [COUNT // 2] * 2
        assert sorted(parts[0] + parts[1]) == [(n, expected_label(n)) for n in range(COUNT)]
    orders = [[sample_of(value) for value, _ in rank[epoch]] for rank in ranks for epoch in (0, 1)]
    assert orders[0] != orders[1] and orders[2] != orders[3]  # each rank's samples change order every epoch


def test_kornia_loader_on_shards_in_one_process(kornia_module, shard_dir, tmp_path, capsys):
    pattern = str(shard_dir / PATTERN)
    dataset = kornia_module.TarShardDataset(pattern)
    assert len(dataset) == COUNT and dataset.labels.tolist() == [expected_label(n) for n in range(COUNT)]
    assert dataset.keys[5] == "part1/sample005" and dataset.classes == list(range(13))
    image, label, skipped = dataset[5]
    assert skipped == ()
    assert image.dtype == torch.uint8 and image.shape == (3, 20, 24) and int(image[0, 0, 0]) == level(5)
    # For GPU decoding a JPEG comes back as its member's exact bytes, other formats decoded.
    gpu_dataset = kornia_module.EncodedTarShardDataset([shard_dir / f"train-{s:04d}.tar" for s in range(SHARDS)])
    with tarfile.open(shard_dir / "train-0001.tar") as tar:
        jpeg = tar.extractfile("part1/sample004.jpg").read()
    assert gpu_dataset[4][0].numpy().tobytes() == jpeg and gpu_dataset[5][0].shape == (3, 20, 24)

    def order(seed):
        return [(sample_of(x[0, 0, 0] * 255), int(y)) for _, batch, labels in kornia_module.training_batches(
            shards=pattern, batch_size=4, workers=0, seed=seed, device="cpu") for x, y in zip(batch, labels)]

    first, again, other = order(5), order(5), order(6)
    assert first == again and first != other and sorted(first) == [(n, expected_label(n)) for n in range(COUNT)]
    kornia_module.main(["--shards", pattern, "--epochs", "2", "--batch-size", "4", "--workers", "0"])
    assert "rank 0/1: 32 augmented images over 2 epoch(s)" in capsys.readouterr().out
    kornia_module.main(["--shards", pattern, "--save", str(tmp_path / "out.npz")])
    saved = np.load(tmp_path / "out.npz")["images"]
    assert saved.shape == (COUNT, 32, 32, 3)
    assert [sample_of(v) for v in saved[:, 0, 0, 0] * 255] == list(range(COUNT))  # shard by shard, in order


def test_dali_loader_reads_every_sample_once_per_epoch_per_shard_id(dali_module, kornia_module, shard_dir, tmp_path,
                                                                     monkeypatch, capsys):
    pattern = str(shard_dir / PATTERN)

    def epochs(rank, world, count=2):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", str(world))
        loader = dali_module.make_loader(shards=pattern, batch_size=2, seed=3, gpu=False, threads=1)
        out = []
        for _ in range(count):
            out.append([(sample_of(x[0, 0, 0]), int(y)) for batch in loader
                        for x, y in zip(batch[0]["images"], batch[0]["labels"].ravel())])
        return out

    everything = [(n, expected_label(n)) for n in range(COUNT)]
    one = epochs(0, 1)
    assert all(sorted(epoch) == everything for epoch in one)
    assert one[0] != everything  # shuffled
    # The same samples and labels as the Kornia loader's (one index of the shards for both).
    dataset = kornia_module.TarShardDataset(pattern)
    assert sorted(zip(range(COUNT), dataset.labels.tolist())) == everything
    ranks = [epochs(0, 2), epochs(1, 2)]
    for epoch in (0, 1):
        assert [len(rank[epoch]) for rank in ranks] == [COUNT // 2] * 2
        assert sorted(ranks[0][epoch] + ranks[1][epoch]) == everything
    assert set(ranks[0][0]) == set(ranks[1][1])  # each epoch every shard id moves on to the next part
    monkeypatch.delenv("RANK")
    monkeypatch.delenv("WORLD_SIZE")
    dali_module.main(["--shards", pattern, "--save", str(tmp_path / "dali.npz")])
    saved = np.load(tmp_path / "dali.npz")["images"]
    assert saved.dtype == np.uint8 and [sample_of(v) for v in saved[:, 0, 0, 0]] == list(range(COUNT))
    dali_module.main(["--shards", pattern, "--epochs", "1", "--batch-size", "4"])
    assert "rank 0/1: 16 augmented images over 1 epoch(s)" in capsys.readouterr().out


def test_dali_mixing_chain_on_shards_and_its_gpu_graph(shard_dir, tmp_path):
    """A mixing step's soft targets span the shards' class ids (0 up to the largest .cls); the
    same pipeline with GPU decoding defines (DALI checks a GPU graph when it is defined)."""
    mixing = import_export(wb.Chain(seed=4).add("Resize", size=[16, 16]).add("MixUp"), "dali", tmp_path,
                           "shards_dali_mixup", shards=True)
    loader = mixing.make_loader(shards=str(shard_dir / PATTERN), batch_size=4, seed=1, gpu=False, threads=1)
    labels = np.concatenate([batch[0]["labels"].numpy() for batch in loader])
    assert labels.shape == (COUNT, 13) and np.allclose(labels.sum(axis=1), 1.0)
    assert set(np.flatnonzero(labels.sum(axis=0))) <= {expected_label(n) for n in range(COUNT)}
    mixing.training_pipeline([], [0, 12], shards=[str(shard_dir / "train-0000.tar")], index_paths=None, gpu=True,
                             batch_size=4, num_threads=1, device_id=None)
