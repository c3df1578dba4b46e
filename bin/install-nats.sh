#!/bin/sh
# Makes sure a nats-server is on this machine: installs Debian's package where apt-get exists, otherwise
# prints the exact command for this system and fails. Used by the README's set-up command and by .ci/run.
set -e
if command -v nats-server >/dev/null 2>&1 || [ -x /usr/sbin/nats-server ]; then exit 0; fi
if command -v apt-get >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "installing nats-server from Debian's packages"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nats-server >/dev/null
  exit 0
fi
case "$(uname -s)" in
  Darwin) echo "nats-server is missing; install it with: brew install nats-server" ;;
  *) echo "nats-server is missing; install nats-server 2.9 or newer with your package manager (on Debian or Ubuntu: sudo apt-get install -y nats-server)" ;;
esac
exit 1
