#!/usr/bin/env bash
# Installs Debian's PostgreSQL server binaries (initdb, pg_ctl, postgres, psql) for the PostgreSQL tests,
# unless they are already there. The tests never use a system service: each starts its own throwaway
# cluster (scripts/lib/postgres-cluster.ts) in a temp dir on a free loopback port. So this script
# installs the package only; it keeps the package from creating and starting the default cluster on 5432
# and stops one if it is running anyway. Nothing is downloaded from anywhere but the distribution's archive.
set -euo pipefail

found=
if [ -n "${PG_BIN:-}" ] && [ -x "$PG_BIN/initdb" ]; then found="$PG_BIN"; fi
if [ -z "$found" ]; then
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5 -n -r); do
    if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then found="$dir"; break; fi
  done
fi
if [ -n "$found" ]; then
  echo "postgresql: using $found ($("$found/postgres" --version 2>/dev/null || echo unknown version))"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
export DEBIAN_FRONTEND=noninteractive

# No default cluster: postgresql-common reads createcluster.d/*.conf, and its postinst skips
# `pg_createcluster <version> main` when create_main_cluster is off.
$SUDO mkdir -p /etc/postgresql-common/createcluster.d
echo "create_main_cluster = false" | $SUDO tee /etc/postgresql-common/createcluster.d/50-no-main-cluster.conf >/dev/null

# And no service start during the install (invoke-rc.d asks policy-rc.d; 101 = action forbidden).
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
  $SUDO chmod 755 "$policy"
  trap '$SUDO rm -f "$policy"' EXIT
fi

$SUDO apt-get update -qq
$SUDO apt-get install -y -qq postgresql >/dev/null

# Belt and braces: if a cluster exists and runs anyway (an older postgresql-common, a systemd host), stop it
# and keep it from starting at boot; nothing here depends on it.
if command -v pg_lsclusters >/dev/null; then
  pg_lsclusters --no-header 2>/dev/null | while read -r version cluster _port status _rest; do
    case "$status" in
      online*)
        echo "postgresql: stopping the system cluster $version/$cluster (the tests start their own)"
        $SUDO pg_ctlcluster "$version" "$cluster" stop || true
        ;;
    esac
  done
fi
if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
  $SUDO systemctl disable --now postgresql >/dev/null 2>&1 || true
fi

for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5 -n -r); do
  if [ -x "$dir/initdb" ]; then
    echo "postgresql: installed $("$dir/postgres" --version)"
    exit 0
  fi
done
echo "postgresql: the postgresql package installed no /usr/lib/postgresql/<version>/bin/initdb" >&2
exit 1
