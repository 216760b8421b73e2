#!/usr/bin/env bash
# The smoke configuration on a real one-node SLURM cluster, built on this machine (Debian 12, run
# as root, no systemd), through profiles/slurm; then the same configuration locally; the tables
# must be identical byte for byte. Daemons started here are stopped on exit.
#
#   tests/slurm_cluster.sh                 (opt-in pytest: EXPRIL_SLURM_TEST=1, tests/workflow/test_slurm.py)
#
# Environment: PYTHON (default .venv/bin/python), EXPRIL_SLURM_WORK (results folder, default
# results/slurm-check; on a shared file system), EXPRIL_SLURM_TIMEOUT (seconds per run, 3600).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-.venv/bin/python}
WORK=${EXPRIL_SLURM_WORK:-results/slurm-check}
LIMIT=${EXPRIL_SLURM_TIMEOUT:-3600}
TABLES=(table2.csv table1.csv accuracies.csv)
CONF=/etc/slurm/slurm.conf
JOBCOMP=/var/log/slurm/jobcomp.log

log() { echo "[slurm_cluster $(date +%T)] $*"; }
fail() { echo "[slurm_cluster] FAIL: $*" >&2; exit 1; }

# On exit: stop the daemons this script started (by their PID files, in reverse order) and put
# back the machine's slurm.conf. A slurm.conf naming a stopped controller would cost every later
# Snakemake start ~9 s: the SLURM plugin runs `scontrol show config` when it is imported.
started=()
conf_replaced=false
cleanup() {
    local i pidfile pid
    for ((i = ${#started[@]} - 1; i >= 0; i--)); do
        pidfile=${started[i]}
        [[ -s $pidfile ]] || continue
        pid=$(<"$pidfile")
        kill "$pid" 2>/dev/null || continue
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    done
    if $conf_replaced; then
        if [[ -e $CONF.expril-saved ]]; then mv -f "$CONF.expril-saved" "$CONF"; else rm -f "$CONF"; fi
    fi
}
trap cleanup EXIT

running() { [[ -s $1 ]] && kill -0 "$(<"$1")" 2>/dev/null; }

wait_for() {    # wait_for SECONDS DESCRIPTION COMMAND...
    local limit=$1 what=$2
    shift 2
    for _ in $(seq "$limit"); do "$@" >/dev/null 2>&1 && return 0; sleep 1; done
    fail "$what not reached within ${limit}s"
}

t0=$SECONDS
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    log "installing munge and SLURM"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        munge slurmctld slurmd slurm-client >/dev/null
fi

# munge: the key and runtime folders (apt's hooks do not create all of them without systemd)
[[ -s /etc/munge/munge.key ]] || mungekey --create
install -d -o munge -g munge -m 0755 /run/munge
install -d -o munge -g munge -m 0700 /var/log/munge /var/lib/munge /etc/munge
chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key
if ! running /run/munge/munged.pid; then
    runuser -u munge -- munged
    started+=(/run/munge/munged.pid)
fi
wait_for 20 "munge credential round trip" bash -c 'munge -n | unmunge'

# slurm.conf: one node, all of this machine's cores, about 90 % of its memory, no accounting
host=$(hostname -s)
memory=$(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')
install -d -o slurm -g slurm /run/slurm /var/lib/slurm/slurmctld /var/lib/slurm/slurmd /var/log/slurm
[[ ! -e $CONF ]] || mv "$CONF" "$CONF.expril-saved"
conf_replaced=true
cat >"$CONF" <<EOF
ClusterName=localcluster
SlurmctldHost=$host
SlurmUser=slurm
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1000
MinJobAge=600
SlurmctldPidFile=/run/slurm/slurmctld.pid
SlurmdPidFile=/run/slurm/slurmd.pid
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$JOBCOMP
NodeName=$host CPUs=$(nproc) RealMemory=$((memory * 9 / 10)) State=UNKNOWN
PartitionName=main Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF

if ! running /run/slurm/slurmctld.pid; then
    slurmctld
    started+=(/run/slurm/slurmctld.pid)
fi
wait_for 30 "scontrol ping UP" bash -c 'scontrol ping | grep -q UP'
if ! running /run/slurm/slurmd.pid; then
    slurmd
    started+=(/run/slurm/slurmd.pid)
fi
wait_for 60 "node idle" bash -c "sinfo -h -n $host -o %t | grep -qx idle"
setup=$((SECONDS - t0))
log "cluster up after ${setup}s: $(sinfo -h -o '%P %D nodes %c cpus %m MB %t')"

rm -rf "$WORK"
mkdir -p "$WORK"
snakemake=("$PYTHON" -m snakemake --configfile tests/smoke.yaml)

log "smoke configuration through SLURM (profiles/slurm)"
t=$SECONDS
timeout -s INT "$LIMIT" "${snakemake[@]}" --workflow-profile profiles/slurm --config "results=$WORK/slurm" \
    >"$WORK/slurm.log" 2>&1 || { tail -n 40 "$WORK/slurm.log"; fail "SLURM run (see $WORK/slurm.log)"; }
slurm_s=$((SECONDS - t))

# Jobs really went through sbatch: each SLURM job id Snakemake reported has a completion record.
mapfile -t ids < <(sed -n 's/.*submitted with SLURM jobid \([0-9]*\).*/\1/p' "$WORK/slurm.log")
((${#ids[@]} > 0)) || fail "no job was submitted to SLURM"
for id in "${ids[@]}"; do
    grep -q "^JobId=$id .*JobState=COMPLETED" "$JOBCOMP" || fail "SLURM job $id has no COMPLETED record"
done
log "SLURM run: ${slurm_s}s, ${#ids[@]} SLURM jobs, all COMPLETED"

log "smoke configuration locally (profiles/default)"
t=$SECONDS
timeout -s INT "$LIMIT" "${snakemake[@]}" --config "results=$WORK/local" >"$WORK/local.log" 2>&1 \
    || { tail -n 40 "$WORK/local.log"; fail "local run (see $WORK/local.log)"; }
local_s=$((SECONDS - t))
log "local run: ${local_s}s"

for table in "${TABLES[@]}"; do
    cmp "$WORK/slurm/$table" "$WORK/local/$table" || fail "$table differs between SLURM and local runs"
done
log "identical: ${TABLES[*]}"
cat <<EOF
SUMMARY date=$(date -u +%F) slurm=$(sinfo -V | cut -d' ' -f2) snakemake=$("$PYTHON" -m snakemake --version) \
plugin=$("$PYTHON" -c 'import importlib.metadata as m; print(m.version("snakemake-executor-plugin-slurm"))') \
setup_s=$setup slurm_s=$slurm_s slurm_jobs=${#ids[@]} local_s=$local_s tables=identical
EOF
