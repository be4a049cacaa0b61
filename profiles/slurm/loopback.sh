#!/usr/bin/env bash
# A throwaway single-node Slurm on 127.0.0.1 (munge, slurmctld, slurmd, two fake GPUs), for the
# integration test and for trying profiles/slurm on one machine. Needs root: Slurm only reads
# /etc/slurm/slurm.conf inside jobs, and the daemons run as root here.
#
#   profiles/slurm/loopback.sh install           # Debian/Ubuntu: apt-get the four packages
#   profiles/slurm/loopback.sh up   [RUN_DIR]    # write the config, start the daemons, wait for "idle"
#   profiles/slurm/loopback.sh down [RUN_DIR]    # stop exactly the daemons `up` started, remove the config
#
# RUN_DIR (default /tmp/clinsent-slurm) holds state, spool, logs and the pids `up` started.
# The fake GPUs are GRES backed by /dev/null and /dev/zero: a job that asks for --gpus=1 sees
# CUDA_VISIBLE_DEVICES=0, one over two processes (training.processes: 2) --gpus=2 and 0,1; there is
# no CUDA device (training falls back to the CPU, its processes to gloo).
set -euo pipefail

cmd=${1:-}
RUN=$(realpath -m "${2:-/tmp/clinsent-slurm}")
MARK="# clinsent loopback cluster"
CONF=/etc/slurm/slurm.conf
GRES=/etc/slurm/gres.conf

die() { echo "loopback.sh: $*" >&2; exit 1; }

need_root() { [ "$(id -u)" = 0 ] || die "needs root (it writes /etc/slurm and starts the Slurm daemons)"; }

install_packages() {
    need_root
    command -v apt-get >/dev/null || die "apt-get not found: install slurmctld, slurmd, slurm-client and munge with your package manager"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null
}

alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }

write_config() {
    if [ -e "$CONF" ] && ! grep -qF "$MARK" "$CONF"; then
        die "$CONF exists and is not ours; refusing to overwrite a real cluster's config"
    fi
    local cpus mem
    cpus=$(nproc)
    mem=$(awk '/MemTotal/ {printf "%d", $2 / 1024 * 0.8}' /proc/meminfo)
    mkdir -p /etc/slurm "$RUN/state" "$RUN/spool" "$RUN/log"
    cat > "$CONF" <<EOF
$MARK (written by profiles/slurm/loopback.sh; removed by 'down')
ClusterName=clinsent
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
MpiDefault=none
StateSaveLocation=$RUN/state
SlurmdSpoolDir=$RUN/spool
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd.pid
SlurmctldLogFile=$RUN/log/slurmctld.log
SlurmdLogFile=$RUN/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=500
ReturnToService=2
MinJobAge=300
GresTypes=gpu
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
    cat > "$GRES" <<EOF
$MARK
AutoDetect=off
NodeName=localhost Name=gpu File=/dev/null
NodeName=localhost Name=gpu File=/dev/zero
EOF
}

up() {
    need_root
    for b in munged slurmctld slurmd sinfo sbatch; do
        command -v "$b" >/dev/null || [ -x "/usr/sbin/$b" ] || die "$b not found: run '$0 install' first"
    done
    write_config
    : > "$RUN/pids"
    if [ ! -s /etc/munge/munge.key ]; then
        if command -v mungekey >/dev/null; then mungekey --create --force >/dev/null 2>&1 || true; fi
        [ -s /etc/munge/munge.key ] || { dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null; }
        chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
    fi
    mkdir -p /run/munge && chown munge:munge /run/munge
    local pid
    pid=$(cat /run/munge/munged.pid 2>/dev/null || true)
    if ! alive "$pid"; then
        runuser -u munge -- /usr/sbin/munged
        for _ in $(seq 50); do pid=$(cat /run/munge/munged.pid 2>/dev/null || true); alive "$pid" && break; sleep 0.1; done
        alive "$pid" || die "munged did not start"
        echo "munged $pid" >> "$RUN/pids"
    fi
    /usr/sbin/slurmctld
    for _ in $(seq 100); do [ -s "$RUN/slurmctld.pid" ] && break; sleep 0.1; done
    echo "slurmctld $(cat "$RUN/slurmctld.pid")" >> "$RUN/pids"
    /usr/sbin/slurmd -N localhost
    for _ in $(seq 100); do [ -s "$RUN/slurmd.pid" ] && break; sleep 0.1; done
    echo "slurmd $(cat "$RUN/slurmd.pid")" >> "$RUN/pids"
    local state=""
    for _ in $(seq 120); do
        state=$(sinfo -h -o %T 2>/dev/null | head -1 || true)
        case "$state" in
            idle) echo "loopback Slurm is up (run dir $RUN)"; return 0 ;;
            drain*|down*|inval*) scontrol update nodename=localhost state=resume >/dev/null 2>&1 || true ;;
        esac
        sleep 0.5
    done
    die "the node did not become idle (state '$state'); see $RUN/log/"
}

down() {
    local rc=0
    if [ -f "$RUN/pids" ]; then
        # reverse order: slurmd, slurmctld, then munged (only if `up` started it)
        tac "$RUN/pids" | while read -r name pid; do
            if alive "$pid"; then
                kill "$pid" 2>/dev/null || true
                for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
                if alive "$pid"; then kill -9 "$pid" 2>/dev/null || true; fi
            fi
            alive "$pid" && { echo "loopback.sh: $name ($pid) is still running" >&2; exit 1; }
            true
        done || rc=1
        rm -f "$RUN/pids"
    fi
    for f in "$CONF" "$GRES"; do
        if [ -f "$f" ] && grep -qF "$MARK" "$f"; then rm -f "$f"; fi
    done
    return $rc
}

case "$cmd" in
    install) install_packages ;;
    up) up ;;
    down) down ;;
    *) echo "usage: $0 install | up [RUN_DIR] | down [RUN_DIR]" >&2; exit 2 ;;
esac
