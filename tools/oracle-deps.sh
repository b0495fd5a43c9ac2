#!/bin/sh
# Install the host tools of `schedlab oracle` (the QEMU real-kernel oracle, issue 14)
# on Debian or Ubuntu: QEMU, a static busybox for the guest, the initramfs and archive
# tools, apt/dpkg to fetch the guest kernels, and the workloads run in the guest
# (rt-app; hackbench from rt-tests). Idempotent: installs only what is missing.
set -eu

PKGS="qemu-system-x86 busybox-static cpio gzip tar apt dpkg libc-bin rt-app rt-tests debian-archive-keyring"

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done

if [ -z "$missing" ]; then
    echo "oracle-deps: all installed ($PKGS)"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
echo "oracle-deps: installing$missing"
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q
# shellcheck disable=SC2086
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
