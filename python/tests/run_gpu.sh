#!/usr/bin/env bash
# run_gpu.sh SCRIPT: runs a GPU test of the Python package with the first
# Python here that has PyTorch (RNNC_TORCH_PYTHON, python3 on PATH, then
# /usr/bin/python3); exits 77 (skipped) where none has it.  The script
# itself exits 77 where there is no GPU.
for py in "${RNNC_TORCH_PYTHON:-}" python3 /usr/bin/python3; do
    [ -n "$py" ] && command -v "$py" >/dev/null || continue
    if "$py" -c "import torch" >/dev/null 2>&1; then
        exec "$py" "$1"
    fi
done
echo "SKIP: no Python with PyTorch here"
exit 77
