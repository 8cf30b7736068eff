#!/bin/bash
# Buffer-size sweep: how much shared switch buffer does a 16:1 incast need,
# lossy and with PFC? Runs scenarios/incast.yaml at several buffer sizes, with
# PFC off and on, and prints one line per point (drops, retransmits, PAUSE
# frames, deepest queue, completion time). Usage: scenarios/buffer-sweep.sh
# [SIZES...]   (default 256KiB 1MiB 4MiB 16MiB). `fabsim sweep` runs such grids
# in parallel with CSV/HDF5 output; this loop shows the same by hand.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FABSIM=${FABSIM:-$ROOT/build/fabsim}
[[ -x $FABSIM ]] || "$ROOT/tools/run" --help >/dev/null
SIZES=("$@")
((${#SIZES[@]})) || SIZES=(256KiB 1MiB 4MiB 16MiB)
printf '%-8s %-4s %8s %10s %8s %12s %10s\n' buffer pfc drops retransm pauses max_queue_B fct_max_us
for pfc in false true; do
  for b in "${SIZES[@]}"; do
    out=$("$FABSIM" run "$ROOT/scenarios/incast.yaml" --json --set output.hdf5=~ \
      --set fabric.switch.buffer="$b" --set fabric.switch.priorities=1 \
      --set "fabric.switch.pfc=$([[ $pfc == true ]] && echo "{enabled: true, xoff: 32KiB, xon: 16KiB}" || echo "{enabled: false}")") || {
      echo "$b pfc=$pfc: fabsim failed" >&2; continue; }
    python3 -c '
import json, sys
d = json.loads(sys.argv[1])
print("%-8s %-4s %8d %10d %8d %12d %10.1f" % (sys.argv[2], sys.argv[3], d["drops"], d["retransmits"],
      d["pfc_pause_frames"], d["max_queue_bytes"], d["flows"]["fct_max_s"] * 1e6))' "$out" "$b" "$pfc"
  done
done
