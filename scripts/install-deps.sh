#!/usr/bin/env bash
# Installs every Debian bookworm package rackwise needs to build, test and run. Safe to run again.
set -euo pipefail
packages=(
  cmake ninja-build g++ pkg-config git ca-certificates
  libyaml-cpp-dev libabsl-dev libprotobuf-dev protobuf-compiler libgrpc++-dev protobuf-compiler-grpc
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev libcpp-httplib-dev
  libssl-dev libcurl4-openssl-dev clang libclang-rt-14-dev
  slurmctld slurmd slurm-client libslurm-dev dpkg-dev
  curl procps iproute2 openssl
  libboost-dev prometheus
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo_cmd=""
  [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  echo "install-deps: installing ${missing[*]}"
  $sudo_cmd apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
