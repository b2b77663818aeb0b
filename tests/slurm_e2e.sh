#!/usr/bin/env bash
# End-to-end: rdrr-batch as a Slurm job array on a real single-node cluster (Debian's slurm-wlm + munge,
# both daemons on this machine with their own config in a temp folder). Submits a 3-task array over the
# fixture jobs, waits, and checks that every pack verified and that the merged report lists them all.
# Usage: slurm_e2e.sh BIN_DIR FIXTURES_DIR. Exit 77 (ctest: skipped) only when not root, since slurmd and
# munged need it, or when tools/setup.sh could not install slurm-wlm / munge (it says so).
set -euo pipefail
bin_dir="$1"
fixtures="$2"
if [ "$(id -u)" -ne 0 ]; then
  echo "slurm_e2e: needs root to start munged and slurmd; skipped" >&2
  exit 77
fi
for b in munged slurmctld slurmd sbatch sinfo scontrol; do
  command -v "$b" >/dev/null || { echo "slurm_e2e: $b not installed (tools/setup.sh installs slurm-wlm and munge); skipped" >&2; exit 77; }
done

tmp="$(mktemp -d /tmp/rdrr-slurm.XXXXXX)"
chmod 755 "$tmp"
cleanup() {
  for p in slurmd slurmctld munged; do
    [ -f "$tmp/$p.pid" ] && kill "$(cat "$tmp/$p.pid")" 2>/dev/null || true
  done
  sleep 1
  if [ "${KEEP_TMP:-0}" != 1 ]; then rm -rf "$tmp"; fi
}
trap cleanup EXIT
dump_logs() {
  for f in munged.log slurmctld.log slurmd.log work/logs/sbatch.log; do
    [ -f "$tmp/$f" ] && { echo "=== $f"; tail -n 40 "$tmp/$f"; }
  done
  for f in "$tmp"/work/logs/*; do echo "=== $f"; tail -n 20 "$f"; done 2>/dev/null || true
}

# munge: its own key and socket.
dd if=/dev/urandom of="$tmp/munge.key" bs=1024 count=1 status=none
chmod 400 "$tmp/munge.key"
munged --force --key-file="$tmp/munge.key" --socket="$tmp/munge.sock" --pid-file="$tmp/munged.pid" \
  --log-file="$tmp/munged.log" --seed-file="$tmp/munge.seed"

host="$(hostname -s)"
port=$((20000 + RANDOM % 20000))
mkdir -p "$tmp/state" "$tmp/spool"
cat > "$tmp/slurm.conf" <<CONF
ClusterName=rdrrtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$tmp/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=rdrr Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
export SLURM_CONF="$tmp/slurm.conf"
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
for i in $(seq 1 60); do
  state="$(sinfo -h -N -o '%T' 2>/dev/null | head -n 1 || true)"
  [ "$state" = "idle" ] && break
  sleep 1
done
if [ "${state:-}" != "idle" ]; then
  echo "slurm_e2e: the node did not become idle (state '${state:-}')" >&2
  dump_logs
  exit 1
fi

cat > "$tmp/jobs.json" <<JOBS
{"jobs": [
  {"source": "$fixtures/tiny-llama/hf", "output": "packs/tiny-llama-f32", "flags": ["--quantize", "f32"]},
  {"source": "$fixtures/tiny-qwen2/hf", "output": "packs/tiny-qwen2-q8_0", "flags": ["--quantize", "q8_0"]},
  {"source": "$fixtures/tiny-gemma3/hf", "output": "packs/tiny-gemma3-q4_k_m",
   "flags": ["--quantize", "q4_k_m", "--q4k-layout", "column_wise"]}
]}
JOBS
set +e
"$bin_dir/rdrr-batch" "$tmp/jobs.json" --slurm --array-tasks 3 --work-dir "$tmp/work" -j 1
rc=$?
set -e
if [ "$rc" -ne 0 ]; then
  echo "slurm_e2e: rdrr-batch --slurm exited $rc" >&2
  dump_logs
  exit 1
fi
report="$tmp/work/report.json"
for i in 0 1 2; do
  [ -f "$tmp/work/report.shard-$i-of-3.json" ] || { echo "slurm_e2e: shard report $i missing" >&2; exit 1; }
done
verified="$(grep -c '"status": "verified"' "$report" || true)"
if [ "$verified" -ne 3 ]; then
  echo "slurm_e2e: expected 3 verified jobs in $report, found $verified" >&2
  cat "$report" >&2
  exit 1
fi
for p in tiny-llama-f32 tiny-qwen2-q8_0 tiny-gemma3-q4_k_m; do
  [ -f "$tmp/packs/$p/manifest.json" ] || { echo "slurm_e2e: pack $p missing" >&2; exit 1; }
  [ -f "$tmp/packs/$p.rdrr-batch.json" ] || { echo "slurm_e2e: verified record of $p missing" >&2; exit 1; }
done
# Slurm really ran them: three array tasks left their output files.
n_out="$(ls "$tmp"/work/logs/slurm-*_*.out 2>/dev/null | wc -l)"
[ "$n_out" -eq 3 ] || { echo "slurm_e2e: expected 3 array task logs, found $n_out" >&2; exit 1; }
# Re-running the same array skips every job (resume).
"$bin_dir/rdrr-batch" "$tmp/jobs.json" --slurm --array-tasks 3 --work-dir "$tmp/work" -j 1 > "$tmp/rerun.txt"
skipped="$(grep -c '"status": "skipped"' "$report" || true)"
[ "$skipped" -eq 3 ] || { echo "slurm_e2e: expected 3 skipped jobs on the re-run, found $skipped" >&2; cat "$report" >&2; exit 1; }
echo "slurm_e2e: 3 jobs verified through a 3-task Slurm array, then skipped on the re-run"
