#!/usr/bin/env bash
# Installs every Debian bookworm package rackwise needs to build, test and run. Safe to run again.
set -euo pipefail
packages=(
  cmake ninja-build g++ pkg-config git ca-certificates
  libyaml-cpp-dev libyaml-dev libabsl-dev libprotobuf-dev protobuf-compiler libgrpc++-dev protobuf-compiler-grpc
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev libcpp-httplib-dev
  libssl-dev libcurl4-openssl-dev clang libclang-rt-14-dev clang-format clang-tidy
  slurmctld slurmd slurm-client libslurm-dev dpkg-dev
  libmunge-dev munge
  curl jq procps iproute2 openssl ccache
  python3 python3-yaml
  man-db binutils file shellcheck
  libboost-dev prometheus
  etcd-server
)
# kubectl (for `kubectl kustomize`) and npm (kubernetes-models, to validate the rendered manifests): Debian's
# kubernetes-client and npm, unless the machine already has a kubectl or an npm (their packages would clash).
command -v kubectl >/dev/null 2>&1 || packages+=(kubernetes-client)
command -v npm >/dev/null 2>&1 || packages+=(npm)
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
