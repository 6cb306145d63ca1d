#!/usr/bin/env bash
# Variants of the GPU step's kernel on the LAMMPS chute tiled to 1 024 000 spheres (issue 34's
# 2e9 particle-steps/s target), each a run of demhpc --gpu with a knob set at run time, no
# rebuild: the kernels of another directory (DEMHPC_GPU_KERNELS: here the first version, kept
# in K0), pair constants kept in the histories (DEMHPC_GPU_STORE_PHYS=1), launch bounds
# (DEMHPC_GPU_NVRTC=-DDEM_STEP_MIN_BLOCKS=k), threads per block (DEMHPC_GPU_BLOCK); then the
# step kernel's registers and spills (ptxas -v on the PTX demhpc wrote, DEMHPC_GPU_PTX) and the
# GPU tests. From the relocatable bundle on the lent GPU machine, in the repository root:
#
#   mkdir -p .bundle/k0 && git show 3dea1a7:src/gpu/kernels/dem.h > .bundle/k0/dem.h &&
#   git show 3dea1a7:src/gpu/kernels/step.cu > .bundle/k0/step.cu      # (on this machine)
#   bash bench/gpu_variants.sh                                           # (there; OUT=dir for logs)
#
# The bundle (.bundle/mpi.tar.xz) holds demhpc built with --features gpu and the test binary
# of tests/suite/gpu.rs as gpu_tests: ../shared/tools/mpi-bundle/build.sh .bundle/mpi.tar.xz
# target/release/demhpc target/release/deps/gpu-HASH (renamed gpu_tests).
set -uo pipefail
T0=$(date +%s)
el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
rm -rf /tmp/b; mkdir -p /tmp/b && tar -xJf .bundle/mpi.tar.xz -C /tmp/b
export B=/tmp/b
# shellcheck source=/dev/null
source /tmp/b/env.sh
export CUDA_LIB=/usr/local/cuda/lib64:/usr/local/nvidia/lib64
L="$BUNDLE_LD:$CUDA_LIB"
D=/tmp/b/usr/bin/demhpc
mkdir -p /tmp/gb
sed -e "s#../bench/data/data.chute#$PWD/bench/data/data.chute#" -e "s#^Scene(#Scene(\n    replicate: (8, 4, 1),#" \
    -e "s#series_every: 100#series_every: 500#" scenes/chute.ron > /tmp/gb/chute.ron
var() { # name, env...
    local name="$1"; shift
    rm -rf "/tmp/v_$name"
    env "$@" LD_LIBRARY_PATH="$L" "$D" -q --gpu 0 --steps 2000 --out "/tmp/v_$name" /tmp/gb/chute.ron > "/tmp/v_$name.log" 2>&1 ||
        { echo "$name failed"; tail -5 "/tmp/v_$name.log"; return; }
    python3 -c "import json; d=json.load(open('/tmp/v_$name/timing.json')); p=d['phases_s']; t=p['contact']+p['collide']; print('$name', 'step', p['contact'], 'rebuild', p['collide'], d['rebuilds'], 'psps %.3e' % (1024000*2000/t))"
}
el "variants"
var head DEMHPC_GPU_KERNELS="${K0:-.bundle/k0}" DEMHPC_GPU_PTX=/tmp/k0.ptx
var prefetch DEMHPC_GPU_PTX=/tmp/k1.ptx
var phys DEMHPC_GPU_STORE_PHYS=1
var mb4 DEMHPC_GPU_NVRTC=-DDEM_STEP_MIN_BLOCKS=4 DEMHPC_GPU_PTX=/tmp/k1mb4.ptx
var phys_mb4 DEMHPC_GPU_STORE_PHYS=1 DEMHPC_GPU_NVRTC=-DDEM_STEP_MIN_BLOCKS=4
var phys_mb3 DEMHPC_GPU_STORE_PHYS=1 DEMHPC_GPU_NVRTC=-DDEM_STEP_MIN_BLOCKS=3
var phys_b64 DEMHPC_GPU_STORE_PHYS=1 DEMHPC_GPU_BLOCK=64
el "registers"
for k in k0 k1 k1mb4; do
    [ -f /tmp/$k.ptx ] && /usr/local/cuda/bin/ptxas -arch=sm_90 -v /tmp/$k.ptx -o /dev/null 2>&1 | grep -A1 "k_step" | grep -E "registers|spill" | sed "s/^/$k: /"
done
el "tests"
DEMHPC_BIN=$D timeout 200 env LD_LIBRARY_PATH="$L" /tmp/b/usr/bin/gpu_tests --test-threads 1 --nocapture > "${OUT:-/tmp}/tests.log" 2>&1
echo "tests rc=$?"; grep -E "^test |test result|panicked" "${OUT:-/tmp}/tests.log" | head -20
el "end"
