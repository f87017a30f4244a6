#!/usr/bin/env bash
# Packs carried builds (tools/build_carry.sh, or a hand-made build-main) into build-pack/<dir>.tgz, so a device
# call can carry several full builds at once: `run` carries at most 64 MiB with the tree, a full build is ~28 MiB
# and ~9 MiB gzipped. Carry [build-pack]; on the device, gpu_unpack (tools/gpu_common.sh) restores each DIR.
#   tools/pack_carry.sh DIR...
set -euo pipefail
mkdir -p build-pack
rm -f build-pack/*.tgz
for d in "$@"; do
  [[ -d $d ]] || { echo "$0: no $d"; exit 1; }
  tar -czf "build-pack/$(basename "$d").tgz" "$d"
done
du -sh build-pack
