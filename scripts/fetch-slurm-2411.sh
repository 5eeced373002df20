#!/usr/bin/env bash
# Slurm 24.11 from Debian trixie's source: fetch-slurm-debian.sh with 24.11's suite and version (kept so that
# recorded commands keep working). Prints the cache entry as the last line of stdout.
exec "$(dirname "$0")/fetch-slurm-debian.sh" trixie "${RACKWISE_SLURM_2411_VERSION:-24.11.5-4+deb13u1}"
