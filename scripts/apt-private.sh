#!/usr/bin/env bash
# Sourced by the fetch-slurm-*.sh scripts: their logging (to stderr, prefixed with the script's name), the cache
# root and package name, and apt options that keep sources, lists and downloads in a private directory, so that
# the system's apt configuration and state are never touched.

log() { echo "$(basename "$0" .sh): $*" >&2; }
die() { log "error: $*"; exit 1; }

cache_root=${RACKWISE_CACHE:-$HOME/.cache/rackwise}
pkg=slurm-wlm

# rw_apt_private_opts DIR: sets the array apt_opts for DIR (with DIR/sources.list and DIR/sources.list.d/).
rw_apt_private_opts() {
  local dir=$1
  apt_opts=(
    -o "Dir::Etc::SourceList=$dir/sources.list"
    -o "Dir::Etc::SourceParts=$dir/sources.list.d"
    -o "Dir::State::Lists=$dir/lists"
    -o "Dir::Cache::Archives=$dir/archives"
    -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
    -o "APT::Sandbox::User=root"
    -o "Debug::NoLocking=1"
  )
}
