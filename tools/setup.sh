#!/usr/bin/env bash
# Installs, from Debian's packages, whatever roundtable needs to build and test
# that is not already on the machine. Safe to run again: it installs nothing
# when everything is present. Extra package names given as arguments are
# installed too (the bench scripts use this for gnuplot); --peers adds the
# stores kvbench compares roundtable with (bench/kvbench: each is compiled in
# only where its -dev package is installed).
set -euo pipefail

packages=(cmake g++ make pkg-config python3 liburing-dev libxxhash-dev libabsl-dev
          libgtest-dev libbenchmark-dev pybind11-dev python3-dev
          redis-tools python3-redis nutcracker)
for arg in "$@"; do
  if [ "$arg" = "--peers" ]; then
    packages+=(librocksdb-dev libleveldb-dev liblmdb-dev libtkrzw-dev
               libkyotocabinet-dev libdb-dev libgdbm-dev binutils
               python3-gdbm python3-lmdb python3-plyvel python3-tkrzw)
  else
    packages+=("$arg")
  fi
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
