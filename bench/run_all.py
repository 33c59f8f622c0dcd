"""The whole benchmark suite in one command; writes its tables into bench/RESULTS.md.

Runs each benchmark in a fresh process, one after the other (never two at once: they would
share the cores), and replaces the generated section of RESULTS.md (between the markers)
with their output, the machine and the commands. GPU rows are added when torch sees a GPU.
Usage (about 30 minutes on 2 CPU cores; --quick about 8):

    .venv/bin/python bench/run_all.py [--quick] [--out bench/RESULTS.md]
    python3 bench/run_all.py --gpu-only --out $OUT/RESULTS_GPU.md   # on a GPU machine
"""
from __future__ import annotations

import argparse
import datetime
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BEGIN, END = "<!-- run_all: begin -->", "<!-- run_all: end -->"


def suite(quick: bool, gpu: bool) -> list[tuple[str, list[str]]]:
    """(title, arguments) of every benchmark, CPU first, then GPU rows when there is a GPU."""
    runs = "3" if quick else "9"
    blocks = "3" if quick else "7"
    items = [
        ("Exported Kornia loader vs hand-written DataLoader + AugmentationSequential (target >= 0.95)",
         ["kornia_export_vs_handwritten.py", "--batch", "32", "--blocks", blocks]),
        ("chain.run (Kornia, what the preview runs) vs hand-written AugmentationSequential, batch 16",
         ["kornia_run_vs_handwritten.py", "--batch", "16", "--runs", runs]),
        ("chain.run (Kornia) vs hand-written AugmentationSequential, batch 64",
         ["kornia_run_vs_handwritten.py", "--batch", "64", "--runs", runs]),
        ("Exported DALI pipeline vs hand-written DALI pipeline, batch 16 (target >= 0.95)",
         ["dali_export_vs_handwritten.py", "--batch", "16", "--blocks", blocks]),
        ("Exported DALI pipeline vs hand-written DALI pipeline, batch 64",
         ["dali_export_vs_handwritten.py", "--batch", "64", "--blocks", blocks, "--block", "5"]),
        ("Exported Albumentations loader vs hand-written DataLoader + A.Compose (target >= 0.95)",
         ["albumentations_export_vs_handwritten.py", "--batch", "32", "--runs", "3" if quick else "7"]),
        ("DALI vs Kornia on the CPU: preview and exported loader",
         ["backends_cpu.py", "--runs", "3" if quick else "7"]),
        ("Tensor-resident augmentation on the CPU, fused, batch 256 (targets: >= 3x AugmentationSequential, "
         ">= 0.8x Albumentations)",
         ["tensor_resident.py", "--batch", "256", "--runs", "3" if quick else "7", "--device", "cpu"]),
        ("chain.run on the CPU vs AugmentationSequential and Albumentations over nine chains, three batch sizes "
         "and three image sizes (targets: median >= 3x and >= 1.0x, every row >= 0.8x Albumentations)",
         ["cpu_sweep.py"] + (["--quick"] if quick else [])),
        ("The CPU kernels behind the sweep's changes against what they replaced (uint8 resizes, the hue's mask)",
         ["cpu_kernels.py", "--runs", "11" if quick else "31"]),
        ("workbench check on 500x375 JPEGs, each mode (target: >= 1,000 files/s with headers only on 2 cores)",
         ["check_speed.py", "--files", "1000" if quick else "4000", "--runs", "3"]),
        ("DataLoader workers' unique memory on 2M stand-in paths (target: within 100 MiB of an empty dataset's)",
         ["loader_memory.py", "--paths", "200000" if quick else "2000000"]),
        ("Listing a folder of empty files against loading its index file",
         ["index_speed.py", "--files", "20000" if quick else "200000"]),
        ("Preview latency in the app, Kornia (target 50 ms on 2 CPU cores)",
         ["preview_latency.py", "--backend", "kornia", "--draws", "1", "--runs", runs]),
        ("Preview latency in the app, DALI",
         ["preview_latency.py", "--backend", "dali", "--draws", "1", "--runs", runs]),
        ("Estimate vs the exported script's --bench (target: within 10%)",
         ["estimate_accuracy.py"] + (["--quick", "--repeats", "2"] if quick else ["--repeats", "3"])),
    ]
    if gpu:
        items += gpu_suite(quick)
    return items


def gpu_suite(quick: bool) -> list[tuple[str, list[str]]]:
    """The GPU rows: loaders, tensor-resident augmentation, chain.run, preview and estimate."""
    runs = "3" if quick else "9"
    blocks = "3" if quick else "7"
    threads = "8"
    return [
        ("GPU: exported Kornia and DALI loaders, ImageNet chain, batch 256 (targets: Kornia >= 10k images/s "
         "and >= 0.5x DALI)",
         ["loaders_imagenet.py", "--batch", "256", "--files", "4096", "--workers", threads, "--device", "cuda",
          "--repeats", "2" if quick else "3"]),
        ("GPU: exported DALI pipeline vs hand-written expert DALI (image_random_crop), batch 256 (target >= 1.0)",
         ["dali_export_vs_handwritten.py", "--device", "gpu", "--batch", "256", "--threads", threads,
          "--blocks", blocks, "--block", "10"]),
        ("GPU: exported Kornia loader vs hand-written DataLoader + AugmentationSequential",
         ["kornia_export_vs_handwritten.py", "--batch", "64", "--blocks", blocks, "--device", "cuda"]),
        ("GPU: tensor-resident augmentation, fused and compiled, batch 256 (targets: >= 10x AugmentationSequential, "
         ">= 50k images/s on an H100)",
         ["tensor_resident.py", "--batch", "256", "--runs", runs, "--device", "cuda", "--compile"]),
        ("GPU: chain.run(device='cuda') vs hand-written, batch 16 (target >= 0.95)",
         ["kornia_run_vs_handwritten.py", "--batch", "16", "--runs", runs, "--device", "cuda"]),
        ("GPU: chain.run(device='cuda') vs hand-written, batch 256 (target >= 0.95)",
         ["kornia_run_vs_handwritten.py", "--batch", "256", "--runs", runs, "--device", "cuda"]),
        ("GPU: preview latency in the app, Kornia (target 30 ms)",
         ["preview_latency.py", "--backend", "kornia", "--device", "cuda", "--runs", runs]),
        ("GPU: preview latency in the app, DALI",
         ["preview_latency.py", "--backend", "dali", "--device", "cuda", "--runs", runs]),
        ("GPU: estimate vs --bench (target: within 10%)",
         ["estimate_accuracy.py", "--device", "cuda"] + (["--quick"] if quick else [])),
    ]


def run(title: str, args: list[str]) -> str:
    command = "python bench/" + " ".join(args)
    print(f"== {title}\n   {command}", file=sys.stderr, flush=True)
    start = time.time()
    proc = subprocess.run([sys.executable, str(HERE / args[0]), *args[1:]], capture_output=True, text=True)
    seconds = time.time() - start
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    if proc.returncode != 0:
        lines = [f"FAILED (exit {proc.returncode}):", "```", *proc.stderr.strip().splitlines()[-15:], "```"]
    print("\n".join(lines[-6:]), file=sys.stderr, flush=True)
    return "\n".join([f"### {title}", "", f"`{command}` ({seconds:.0f} s)", "", *_markdown(lines), ""])


def _markdown(lines: list[str]) -> list[str]:
    # Tables stay tables; other lines become paragraphs (a blank line before each table).
    out = []
    for line in lines:
        if line.startswith("|") and (not out or not out[-1].startswith("|")):
            out.append("")
        elif not line.startswith("|") and out and out[-1].startswith("|"):
            out.append("")
        out.append(line if line.startswith(("|", "#", "```")) else line + "  ")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs and a smaller estimate grid")
    parser.add_argument("--out", default=str(HERE / "RESULTS.md"))
    parser.add_argument("--gpu-only", action="store_true", help="only the GPU rows (on a lent GPU machine)")
    args = parser.parse_args()
    import torch

    gpu = torch.cuda.is_available()
    if args.gpu_only and not gpu:
        raise SystemExit("--gpu-only: torch sees no GPU here")
    sys.path.insert(0, str(HERE))
    from common import machine_line

    items = gpu_suite(args.quick) if args.gpu_only else suite(args.quick, gpu)
    sections = [run(title, argv) for title, argv in items]
    when = datetime.date.today().isoformat()
    generated = "\n".join([
        BEGIN, "## Latest full run (generated by `bench/run_all.py`)", "",
        f"{machine_line('cuda' if gpu else 'cpu')}. {when}{', quick' if args.quick else ''}."
        f"{'' if gpu else ' No GPU on this machine: no GPU rows.'}", "", *sections, END])
    out = Path(args.out)
    text = out.read_text(encoding="utf-8") if out.exists() else "# Benchmark results\n\n"
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + generated + text[text.index(END) + len(END):]
    else:
        head, sep, rest = text.partition("\n## ")
        text = head.rstrip() + "\n\n" + generated + "\n" + (sep + rest if sep else "")
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
