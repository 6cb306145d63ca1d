#!/usr/bin/env bash
# Install everything demhpc needs on a fresh Debian 12 machine (run as root).
# Idempotent and fast when everything is present: it only calls apt-get for
# missing packages and rustup for a missing toolchain/component.
#
#   scripts/setup.sh            # install what is missing
#   scripts/setup.sh --peers    # also the peer codes the benchmarks run (LIGGGHTS and Yade)
#                               # and ParaView (its XDMF readers in tests/suite/xdmf_readers.rs, headless
#                               # rendering by scripts/render_drum.py): with their VTK, Qt,
#                               # Python dependencies hundreds of packages, so not for CI
#   DEMHPC_SKIP_SETUP=1 ...     # (honoured by run.sh / test.sh) skip this step
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/env.sh
source scripts/env.sh

PACKAGES=(
    build-essential pkg-config ca-certificates curl
    libopenmpi-dev openmpi-bin
    libhdf5-openmpi-dev hdf5-tools
    libclang-dev
    lammps
    shellcheck
    python3-h5py python3-numpy python3-matplotlib
    # XDMF reader of tests/suite/xdmf_readers.rs (~7 MB with its dependencies; ParaView is --peers)
    python3-meshio
)
# Peers for the side-by-side benchmarks only (bench/liggghts_hertz.sh, bench/yade_cpm.sh);
# LAMMPS above is also a test reference (bench/lammps_hooke_reference.sh).
# ParaView with its Python (pvbatch) and a virtual X server for rendering without a display:
# up to ~250 packages beyond the list above, ≤ 190 MB to download, ≤ 1 GB installed (Debian 12;
# paraview alone 440 MB, python3-paraview 105 MB), for one test that otherwise skips with a
# NOTICE (meshio above still reads the snapshots).
if [ "${1:-}" = --peers ]; then
    PACKAGES+=(liggghts yade paraview python3-paraview xvfb xauth)
fi

log() { printf 'setup: %s\n' "$*" >&2; }

is_installed() {
    local status
    status="$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)"
    [ "$status" = "install ok installed" ]
}

missing=()
for p in "${PACKAGES[@]}"; do
    is_installed "$p" || missing+=("$p")
done

if [ "${#missing[@]}" -gt 0 ]; then
    SUDO=()
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1; then
            SUDO=(sudo)
        else
            log "missing packages (${missing[*]}) and not root; install them or re-run as root"
            exit 1
        fi
    fi
    log "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    "${SUDO[@]}" apt-get update -qq
    "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Rust toolchain (rustup, minimal profile + rustfmt + clippy).
if ! command -v cargo >/dev/null 2>&1; then
    log "installing Rust toolchain with rustup"
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal >/dev/null
    export PATH="${HOME:-/root}/.cargo/bin:$PATH"
fi
if command -v rustup >/dev/null 2>&1; then
    for comp in rustfmt clippy; do
        if ! rustup component list --installed 2>/dev/null | grep -q "^${comp}"; then
            log "adding rustup component $comp"
            rustup component add "$comp" >/dev/null 2>&1 || log "warning: could not add $comp"
        fi
    done
fi

# NVRTC, CUDA's run-time compiler, for the compile check of the GPU kernels
# (tests/suite/gpu.rs kernels_compile_to_ptx; no GPU needed): libnvrtc.so.12 from NVIDIA's wheel
# nvidia-cuda-nvrtc-cu12, unpacked under $DEMHPC_NVRTC_DIR (scripts/env.sh puts it on the
# library path). pip with -s: the user's own site packages play no part.
if [ ! -e "$DEMHPC_NVRTC_DIR/libnvrtc.so.12" ]; then
    log "installing NVRTC $DEMHPC_NVRTC_VERSION into $DEMHPC_NVRTC_DIR"
    tmp="$(mktemp -d)"
    if python3 -s -m pip download -q --no-deps --only-binary=:all: \
        "nvidia-cuda-nvrtc-cu12==$DEMHPC_NVRTC_VERSION" -d "$tmp" &&
        python3 -s -m zipfile -e "$tmp"/nvidia_cuda_nvrtc_cu12-*.whl "$tmp/x"; then
        mkdir -p "$DEMHPC_NVRTC_DIR"
        cp "$tmp"/x/nvidia/cuda_nvrtc/lib/libnvrtc.so.12 \
            "$tmp"/x/nvidia/cuda_nvrtc/lib/libnvrtc-builtins.so.* "$DEMHPC_NVRTC_DIR/"
    else
        log "warning: could not install NVRTC: the GPU kernels' compile check will fail"
    fi
    rm -rf "$tmp"
fi

command -v cargo >/dev/null 2>&1 || { log "cargo still not on PATH"; exit 1; }
command -v mpirun >/dev/null 2>&1 || { log "mpirun missing after install"; exit 1; }
