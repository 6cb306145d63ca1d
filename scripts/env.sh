# shellcheck shell=bash
# Common environment for demhpc scripts.  Source it, do not execute it:
#     source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
# Safe under `set -euo pipefail` and idempotent (may be sourced several times).

# Repository root = parent of the directory holding this file.
DEMHPC_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export DEMHPC_ROOT

# Rust toolchain installed by rustup lives in ~/.cargo/bin.
case ":${PATH:-}:" in
    *":${HOME:-/root}/.cargo/bin:"*) ;;
    *) PATH="${HOME:-/root}/.cargo/bin:${PATH:-/usr/local/bin:/usr/bin:/bin}" ;;
esac
export PATH

# Debian's h5py / numpy / matplotlib belong to the system interpreter; a pyenv
# shim named python3 on PATH would not see them.
export DEMHPC_PYTHON="${DEMHPC_PYTHON:-/usr/bin/python3}"

# Open MPI: allow running as root (containers, CI), allow more ranks than
# cores, and make idle ranks yield the CPU instead of busy-polling (matters
# when ranks are oversubscribed on a 2-core machine).
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mpi_yield_when_idle=1
# Equivalent of `mpirun --oversubscribe` for every mpirun started by us or by tests.
export OMPI_MCA_rmaps_base_oversubscribe=1
# Quiet the "no high-performance network" warnings on machines without IB.
export OMPI_MCA_btl_base_warn_component_unused=0
# Flag for scripts that call mpirun explicitly.
export DEMHPC_MPIRUN_FLAGS="--oversubscribe"


# NVRTC (CUDA's run-time compiler) for the GPU kernels' compile check, installed by setup.sh
# from NVIDIA's wheel; on the library path so that the `gpu` build finds libnvrtc.so.12.
export DEMHPC_NVRTC_VERSION="${DEMHPC_NVRTC_VERSION:-12.9.86}"
export DEMHPC_NVRTC_DIR="${DEMHPC_NVRTC_DIR:-${HOME:-/root}/.cache/demhpc/nvrtc-$DEMHPC_NVRTC_VERSION}"
case ":${LD_LIBRARY_PATH:-}:" in
    *":$DEMHPC_NVRTC_DIR:"*) ;;
    *) LD_LIBRARY_PATH="$DEMHPC_NVRTC_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;;
esac
export LD_LIBRARY_PATH
