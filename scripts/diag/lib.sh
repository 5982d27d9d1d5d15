# Shared preamble of the per-call device scripts (sourced, not run): the call's clock and
# deadline, a log in $OUT, the GPU's identity, and a packer that tars /tmp/v into $OUT every 15 s
# so that a call cut by its limit still returns what it had. Each h200-*-call*.sh used to repeat
# these lines.
#   END=540 source scripts/diag/lib.sh      (then: el MSG; left; pack; stop_packer)
# shellcheck shell=bash
root=$PWD
exec > >(tee -a "$OUT/log.txt") 2>&1
t0=$(date +%s)
END=${END:-540}
el() { echo "[$(($(date +%s) - t0)) s] $*"; }
left() { echo $((END - ($(date +%s) - t0))); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader
mkdir -p /tmp/v
pack() { (cd /tmp/v && tar cf "$OUT/verify.tar.tmp" . 2>/dev/null && mv "$OUT/verify.tar.tmp" "$OUT/verify.tar"); }
(while true; do
  sleep 15
  pack
done) &
packer=$!
stop_packer() {
  kill "$packer" 2>/dev/null
  pack
}
# Runs "$@" in the background under a deadline of D s (default: what is left less 20 s), its
# output in /tmp/v/NAME.log with the exit status and the time it ended.
bg_run() {
  local n=$1
  shift
  local d=${D:-$(($(left) - 20))}
  [ "$d" -lt 10 ] && d=10
  (
    timeout -k 3 "$d" "$@" >"/tmp/v/$n.log" 2>&1
    echo "[$n rc $? at $(($(date +%s) - t0)) s]" >>"/tmp/v/$n.log"
  ) &
}
# Waits for the background jobs other than the packer, or until 4 s are left.
wait_jobs() {
  while [ "$(left)" -gt 4 ] && [ "$(jobs -rp | grep -vc "^$packer$")" -gt 0 ]; do sleep 2; done
}
