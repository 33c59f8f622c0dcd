#!/usr/bin/env bash
# The wheels the GPU check needs beyond ../shared/gpu/prepare.sh's (DALI, Kornia, Albumentations):
# ipywidgets and matplotlib for the app's preview latency, pytest-xdist and pytest-timeout for the
# CUDA tests. The lent GPU machine (Python 3.12) cannot download; run this HERE, from the project's
# root, then send .gpu/extra with the check (about 30 MiB, one `run` call):
#   carry: [".gpu/extra"]   command: bash bench/gpu_check.sh
# bench/gpu_check.py installs only the wheels whose distribution that machine lacks.
set -euo pipefail
EX="$(git rev-parse --git-path info/exclude)"; mkdir -p "$(dirname "$EX")"
grep -qx '/.gpu/' "$EX" 2>/dev/null || echo '/.gpu/' >> "$EX"
rm -rf .gpu/extra && mkdir -p .gpu/extra
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any \
  -d .gpu/extra ipywidgets matplotlib pytest pytest-xdist pytest-timeout pyyaml pygments
# numpy and pillow come with the machine's torch and torchvision: a second copy would shadow theirs.
rm -f .gpu/extra/numpy-*.whl .gpu/extra/pillow-*.whl
echo "$(ls .gpu/extra | wc -l) wheels, $(du -sh .gpu/extra | cut -f1) in .gpu/extra"
