#!/usr/bin/env bash
# Installs what the Slurm test (tests/slurm.rs) runs a one-node cluster with: Debian's
# slurm-wlm (slurmctld, slurmd, sbatch, squeue, scancel) and munge, with apt-get, if missing.
# The test writes its own slurm.conf and starts and stops the daemons itself.
# Prints (for eval):  MOSAIC_SLURM=1
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

installed() {
    local tool
    for tool in slurmctld slurmd sbatch squeue scancel munged; do
        command -v "$tool" >/dev/null || [[ -x "/usr/sbin/$tool" ]] || return 1
    done
}

install_slurm() {
    installed && return 0
    command -v apt-get >/dev/null || die "Slurm is missing and apt-get is not available; install slurm-wlm and munge"
    local sudo=()
    [[ $(id -u) -eq 0 ]] || sudo=(sudo -n)
    log "installing slurm-wlm and munge with apt-get (log: $MOSAIC_CACHE/logs/slurm.log)"
    quiet slurm "${sudo[@]}" apt-get update
    quiet slurm env DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y --no-install-recommends slurm-wlm munge
    installed || die "apt-get installed slurm-wlm but its programs were not found"
}

with_lock slurm install_slurm
log "ok: slurm-wlm $(dpkg-query -W -f '${Version}' slurm-wlm 2>/dev/null || echo "(not from a package)") and munge ready"
echo "MOSAIC_SLURM=1"
