#!/usr/bin/env bash
# Whole test suite: prerequisites, optimised build (profile `ci`), cargo tests (which may
# spawn mpirun and that binary), unit and physics tests in a debug build, then
# syntax + shellcheck of every shell
# script in the repository.
#
#   scripts/test.sh          the suite (CI: .ci/run)
#   scripts/test.sh --long   also the long tests (`#[ignore]`d: settling a deposition to rest,
#                            about four minutes more on 2 cores)  Exits non-zero if any step fails; all lint steps
# run even after a failure so one run reports everything.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/env.sh
source scripts/env.sh

long=()
for a in "$@"; do
    case "$a" in
    --long) long=(--include-ignored) ;;
    *)
        echo "usage: scripts/test.sh [--long]" >&2
        exit 2
        ;;
    esac
done

if [ "${DEMHPC_SKIP_SETUP:-0}" != 1 ]; then
    scripts/setup.sh
fi

failed=()
step() {
    local name="$1"
    shift
    echo "==> $name" >&2
    if "$@"; then
        return 0
    fi
    echo "FAILED: $name" >&2
    failed+=("$name")
    return 1
}

# Profile `ci` (Cargo.toml): release code without LTO, which links the test binaries in a
# fraction of the time; `cargo build --release` (LTO) is what users and bench/ run.
# With the `gpu` feature (issue 34): the GPU step's CUDA code is built too, and its kernels are
# compiled to PTX by NVRTC (installed by setup.sh; a missing NVRTC fails that test here); the
# tests that need a GPU say they are skipped. The debug build below is without the feature.
export DEMHPC_REQUIRE_NVRTC=1
if step "cargo build --profile ci --features gpu" cargo build --profile ci --features gpu; then
    step "cargo test --profile ci --features gpu" \
        cargo test --profile ci --features gpu -- --test-threads=2 "${long[@]}" || true
else
    failed+=("cargo test --profile ci (not run: build failed)")
fi
# Debug build without the `gpu` feature: overflow, alignment and debug_assert! checks (the unit
# tests and the physics scenes; the rest runs in release above).
step "cargo test (debug: unit tests, physics)" cargo test --lib --test physics -- --test-threads=2 || true

# Shell scripts: every file that exists among these patterns.
shopt -s nullglob
scripts=(scripts/*.sh slurm/*.sbatch bench/*.sh bench/*/*.sh bench/scaling .ci/run)
shopt -u nullglob
if [ "${#scripts[@]}" -gt 0 ]; then
    syntax_ok=1
    for f in "${scripts[@]}"; do
        bash -n "$f" || { echo "bash -n failed: $f" >&2; syntax_ok=0; }
    done
    [ "$syntax_ok" = 1 ] || failed+=("bash -n")
    step "shellcheck (${#scripts[@]} files)" shellcheck -x "${scripts[@]}" || true
fi

if [ "${#failed[@]}" -gt 0 ]; then
    echo "test.sh: ${#failed[@]} step(s) failed:" >&2
    printf '  - %s\n' "${failed[@]}" >&2
    exit 1
fi
echo "test.sh: all steps passed" >&2
