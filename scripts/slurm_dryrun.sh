#!/usr/bin/env bash
# Run a Slurm batch script (slurm/*.sbatch) on a workstation, without Slurm.
#
#   scripts/slurm_dryrun.sh [OPTIONS] SCRIPT.sbatch [SCRIPT ARGUMENTS...]
#   scripts/slurm_dryrun.sh -n 2 -c 1 --time-limit 5 slurm/run.sbatch scenes/settle.ron
#   scripts/slurm_dryrun.sh -n 2 -c 1 slurm/strong.sbatch
#
# Options:
#   -n, --ntasks N        SLURM_NTASKS [the script's #SBATCH --ntasks, else 1]
#   -c, --cpus-per-task T SLURM_CPUS_PER_TASK [the script's #SBATCH --cpus-per-task, else 1]
#   --time-limit S        send SIGUSR1 to the batch script S seconds after each start
#                         (what #SBATCH --signal=B:USR1@T does T seconds before the limit)
#   --signal-when-exists PATH
#                         send SIGUSR1 to the batch script as soon as PATH exists, first
#                         start only (a stop at a known point of the run, for tests)
#   --max-requeues N      run the script again at most N times after `scontrol requeue` [20]
#   --job-id ID           SLURM_JOB_ID [4242]
#   -h, --help
#
# What it fakes: the SLURM_* variables of a batch job (SLURM_JOB_ID, SLURM_NTASKS,
# SLURM_CPUS_PER_TASK, SLURM_SUBMIT_DIR = the current directory, SLURM_RESTART_COUNT from
# the first requeue on, ...), and commands on PATH:
#   srun      mpirun -n SLURM_NTASKS --oversubscribe --bind-to none PROGRAM ARGS (srun's own
#             options are dropped; -n/--ntasks is honoured).  mpirun forwards SIGUSR1/SIGUSR2
#             to the ranks like srun does; on SIGTERM it sends SIGTERM to the ranks, SIGKILL
#             1 s later (Open MPI's odls_base_sigkill_timeout) and exits 1, where srun would
#             relay SIGTERM and let Slurm's KillWait (30 s) run: stop dry runs with SIGUSR1.
#   scontrol  `scontrol requeue ID` records the requeue: when the script has ended it is run
#             again, with SLURM_RESTART_COUNT incremented.  `scontrol show job` prints a line.
#   scancel   `scancel [--signal=SIG] [--batch|--full] ID` signals the srun steps / the batch
#             script like Slurm; plain `scancel ID` sends SIGTERM to both.
# Like sbatch, it runs a copy of the script (so the script cannot rely on its own location)
# in the current directory.  Exit status: the last run's.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/env.sh
source "$here/env.sh"

usage() { sed -n '2,33s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }
die() { echo "slurm_dryrun: $*" >&2; exit 2; }

ntasks="" cpus="" limit="" when="" max_requeues=20 job_id=4242
while (($#)); do
    case "$1" in
        -n | --ntasks) ntasks="$2"; shift 2 ;;
        --ntasks=*) ntasks="${1#*=}"; shift ;;
        -c | --cpus-per-task) cpus="$2"; shift 2 ;;
        --cpus-per-task=*) cpus="${1#*=}"; shift ;;
        --time-limit) limit="$2"; shift 2 ;;
        --signal-when-exists) when="$2"; shift 2 ;;
        --max-requeues) max_requeues="$2"; shift 2 ;;
        --job-id) job_id="$2"; shift 2 ;;
        -h | --help) usage; exit 0 ;;
        -*) die "unknown option '$1' (try --help)" ;;
        *) break ;;
    esac
done
(($#)) || die "give a batch script (try --help)"
script="$1"
shift
[[ -f "$script" ]] || die "no batch script '$script'"

# Defaults from the script's #SBATCH lines.
sbatch_opt() { # sbatch_opt LONG SHORT: value of #SBATCH --LONG=V / --LONG V / -SHORT V
    sed -n -e "s/^#SBATCH  *--$1[= ]\([^ ]*\).*/\1/p" -e "s/^#SBATCH  *-$2 \([^ ]*\).*/\1/p" \
        "$script" | head -n 1
}
ntasks="${ntasks:-$(sbatch_opt ntasks n)}"
cpus="${cpus:-$(sbatch_opt cpus-per-task c)}"
ntasks="${ntasks:-1}" cpus="${cpus:-1}"
name="$(sbatch_opt job-name J)"
name="${name:-$(basename "$script")}"
for v in ntasks cpus max_requeues; do
    [[ "${!v}" =~ ^[0-9]+$ ]] || die "$v must be a number, not '${!v}'"
done
[[ -z "$limit" || "$limit" =~ ^[0-9]+([.][0-9]+)?$ ]] || die "--time-limit takes seconds"

state="$(mktemp -d "${TMPDIR:-/tmp}/slurm_dryrun.XXXXXX")"
trap 'rm -rf "$state"' EXIT
mkdir -p "$state/bin"
cp "$script" "$state/slurm_script"

# --- command shims --------------------------------------------------------------
cat >"$state/bin/srun" <<'SHIM'
#!/usr/bin/env bash
# slurm_dryrun srun: mpirun underneath.
n="${SLURM_NTASKS:-1}"
while (($#)); do
    case "$1" in
        -n | --ntasks) n="$2"; shift 2 ;;
        --ntasks=*) n="${1#*=}"; shift ;;
        -c | -N | --nodes | --cpus-per-task | -J | --job-name | -o | --output | -e | --error | -p | --partition)
            shift 2 ;;
        -*) shift ;;
        *) break ;;
    esac
done
echo "$$" >>"$SLURM_DRYRUN_STATE/srun.pids"
echo "[slurm_dryrun] srun -> mpirun -n $n --oversubscribe --bind-to none $*" >&2
# Open MPI would take the SLURM_* variables for a real allocation (and fail): hide them.
for v in "${!SLURM_@}"; do unset "$v"; done
exec mpirun -n "$n" --oversubscribe --bind-to none "$@"
SHIM
cat >"$state/bin/scontrol" <<'SHIM'
#!/usr/bin/env bash
# slurm_dryrun scontrol: requeue is recorded, the dry run starts the script again.
case "${1:-}" in
    requeue)
        echo "[slurm_dryrun] scontrol requeue ${2:-}: the script will run again" >&2
        touch "$SLURM_DRYRUN_STATE/requeue" ;;
    show)
        echo "JobId=$SLURM_JOB_ID JobName=$SLURM_JOB_NAME NumTasks=$SLURM_NTASKS" \
            "CPUs/Task=$SLURM_CPUS_PER_TASK Restarts=${SLURM_RESTART_COUNT:-0}" ;;
    *) echo "[slurm_dryrun] scontrol $*: not emulated" >&2; exit 1 ;;
esac
SHIM
cat >"$state/bin/scancel" <<'SHIM'
#!/usr/bin/env bash
# slurm_dryrun scancel: signals the srun steps and/or the batch script.
sig="" who=steps
while (($#)); do
    case "$1" in
        -s | --signal) sig="$2"; shift 2 ;;
        --signal=*) sig="${1#*=}"; shift ;;
        -b | --batch) who=batch; shift ;;
        -f | --full) who=all; shift ;;
        *) shift ;;
    esac
done
[[ -z "$sig" ]] && sig=TERM who=all
sig="${sig#SIG}"
echo "[slurm_dryrun] scancel: SIG$sig to the $who" >&2
if [[ "$who" != steps ]]; then kill -s "$sig" "$(cat "$SLURM_DRYRUN_STATE/batch.pid")" 2>/dev/null; fi
if [[ "$who" != batch && -f "$SLURM_DRYRUN_STATE/srun.pids" ]]; then
    while read -r p; do kill -s "$sig" "$p" 2>/dev/null; done <"$SLURM_DRYRUN_STATE/srun.pids"
fi
exit 0
SHIM
chmod +x "$state/bin/"*

# --- the fake job -----------------------------------------------------------------
export PATH="$state/bin:$PATH" SLURM_DRYRUN_STATE="$state"
export SLURM_JOB_ID="$job_id" SLURM_JOBID="$job_id" SLURM_JOB_NAME="$name"
export SLURM_NTASKS="$ntasks" SLURM_NPROCS="$ntasks" SLURM_CPUS_PER_TASK="$cpus"
export SLURM_SUBMIT_DIR="$PWD" SLURM_SUBMIT_HOST="${HOSTNAME:-localhost}"
export SLURM_JOB_NUM_NODES=1 SLURM_NNODES=1 SLURM_JOB_NODELIST="${HOSTNAME:-localhost}"
export SLURM_CPUS_ON_NODE="$((ntasks * cpus))" SLURM_JOB_PARTITION=dryrun
unset SLURM_RESTART_COUNT

attempt=0
while :; do
    rm -f "$state/requeue" "$state/srun.pids"
    echo "[slurm_dryrun] job $job_id ($name): $ntasks task(s) x $cpus cpu(s)," \
        "start $((attempt + 1))${limit:+, SIGUSR1 after $limit s}" >&2
    bash "$state/slurm_script" "$@" &
    pid=$!
    echo "$pid" >"$state/batch.pid"
    # (the watchers' sleeps hold no pipe open: a caller reading our output is not kept
    # waiting for a sleep left behind)
    watchers=()
    if [[ -n "$limit" ]]; then
        (sleep "$limit" >/dev/null 2>&1 && kill -0 "$pid" 2>/dev/null &&
            echo "[slurm_dryrun] time limit: SIGUSR1 to the batch script" >&2 &&
            kill -USR1 "$pid") &
        watchers+=($!)
    fi
    if [[ -n "$when" && "$attempt" == 0 ]]; then
        (while [[ ! -e "$when" ]]; do kill -0 "$pid" 2>/dev/null || exit 0; sleep 0.05 >/dev/null 2>&1; done
            echo "[slurm_dryrun] $when exists: SIGUSR1 to the batch script" >&2
            kill -USR1 "$pid") &
        watchers+=($!)
    fi
    rc=0
    wait "$pid" || rc=$?
    for w in "${watchers[@]}"; do
        kill "$w" 2>/dev/null || true
        wait "$w" 2>/dev/null || true
    done
    echo "[slurm_dryrun] the batch script exited with status $rc" >&2
    if [[ -f "$state/requeue" ]]; then
        if ((attempt >= max_requeues)); then
            echo "[slurm_dryrun] requeued $attempt times already (--max-requeues): stopping" >&2
            exit 1
        fi
        attempt=$((attempt + 1))
        export SLURM_RESTART_COUNT="$attempt"
        continue
    fi
    break
done
echo "[slurm_dryrun] done: $((attempt + 1)) start(s), $attempt requeue(s), exit status $rc" >&2
exit "$rc"
