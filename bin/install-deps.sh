#!/bin/sh
# Makes sure what troupe runs on is on this machine: nats-server (required), bubblewrap (`bwrap`, for the isolated
# sandbox backend) and socat (the forwarder inside each sandbox to its egress proxy). Installs Debian's packages where apt-get exists; otherwise prints the exact command for this system,
# failing for a missing nats-server only (without bwrap, troupe runs tools on the local backend and says so at
# start-up). Used by the README's set-up commands and by .ci/run.
set -e
has() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/usr/bin/$1" ]; }
missing=""
has nats-server || missing="nats-server"
has bwrap || missing="$missing bubblewrap"
has socat || missing="$missing socat"
[ -z "$missing" ] && exit 0
if command -v apt-get >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "installing$missing from Debian's packages"
  $SUDO apt-get update -qq
  # shellcheck disable=SC2086 # one word per package
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
  exit 0
fi
for pkg in $missing; do
  case "$(uname -s)/$pkg" in
    Darwin/nats-server) echo "nats-server is missing; install it with: brew install nats-server" ;;
    */nats-server) echo "nats-server is missing; install nats-server 2.9 or newer with your package manager (on Debian or Ubuntu: sudo apt-get install -y nats-server)" ;;
    Linux/bubblewrap) echo "bubblewrap is missing: sessions' tools will run unisolated (TROUPE_SANDBOX=local); install it with your package manager (package bubblewrap)" ;;
    */bubblewrap) echo "bubblewrap is Linux-only: sessions' tools run unisolated here (TROUPE_SANDBOX=local)" ;;
    Linux/socat) echo "socat is missing: isolated sandboxes get no network and limited environments are refused; install it with your package manager (package socat)" ;;
  esac
done
case "$missing" in *nats-server*) exit 1 ;; esac
exit 0
