#!/usr/bin/env bash
# The GPU check on this project's lent GPU machine, once ../shared/gpu/README.md's parts have been
# sent (the last one installs DALI, Kornia and Albumentations into /tmp/wbgpu/site). One `run`:
#   carry: [".gpu/extra"]   command: bash bench/gpu_check.sh
# The parts' folders are gone from the machine by then (a call keeps only the ignored paths it
# carries), so this sets the paths receive.sh would. $OUT takes back at most 8 files: this leaves
# report.md and gpu_check.tar.gz (logs, figures, the tests' JUnit XML) there. Arguments go to
# bench/gpu_check.py (--parts tests, --budget 300, ...).
set -uo pipefail
if [ ! -f /tmp/wbgpu/installed ]; then
  echo "the GPU bundle is not installed on this machine: send .gpu/c0 .. .gpu/cN first (../shared/gpu/README.md)"
  exit 2
fi
export PYTHONPATH="/tmp/wbgpu/site:$PWD${PYTHONPATH:+:$PYTHONPATH}" NO_ALBUMENTATIONS_UPDATE=1 PYTHONUNBUFFERED=1
work="$(mktemp -d)"
wheels=()
[ -d .gpu/extra ] && wheels=(--wheels .gpu/extra)
# The check keeps to its own budget; this bound only stops a hang from costing the whole lease.
timeout 540 python3 bench/gpu_check.py "${wheels[@]}" --out "$work/gpu_check" "$@"
rc=$?
out="${OUT:-gpu_check_out}"
mkdir -p "$out"
cp "$work/gpu_check/report.md" "$out/" 2>/dev/null
tar -czf "$out/gpu_check.tar.gz" -C "$work" gpu_check
echo "report: $out/report.md; logs and figures: $out/gpu_check.tar.gz"
exit $rc
