# SPDX-License-Identifier: GPL-2.0-or-later
# Debian helpers sourced by scripts/build-qemu.sh, build-provider.sh, build-kmod.sh and
# guest-image.sh: the host's mirror, installed-package checks and private apt lists (own
# source list and package lists under a cache directory, so the host's apt configuration
# stays as it is).

# The Debian mirror the host already uses (default deb.debian.org).
debian_mirror() {
    local m
    m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
          | awk '$1=="deb" {for (i=2;i<=NF;i++) if ($i !~ /^\[/ && $i ~ /^https?:\/\//) {print $i; break}}' \
          | sed 's:/*$::' | grep -E '/debian$' | head -n1 || true)
    if [ -z "$m" ]; then
        m=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null \
              | awk 'tolower($1)=="uris:" {for (i=2;i<=NF;i++) print $i}' \
              | sed 's:/*$::' | grep -E '^https?://.*/debian$' | head -n1 || true)
    fi
    echo "${m:-http://deb.debian.org/debian}"
}

# pkg_installed PKG...: 0 if every package is installed
pkg_installed() {
    local p st
    for p in "$@"; do
        st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null) || return 1
        [ "$st" = installed ] || return 1
    done
}

# priv_apt DIR LINE...: write the private source list DIR/sources.list (one LINE each,
# e.g. "deb http://deb.debian.org/debian bookworm-backports main") and set the array
# PRIV_APT to the apt-get options that use it and DIR/lists instead of the host's.
priv_apt() {
    local dir=$1
    shift
    mkdir -p "$dir/lists/partial"
    printf '%s\n' "$@" >"$dir/sources.list"
    PRIV_APT=(-o "Dir::Etc::SourceList=$dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
              -o "Dir::State::Lists=$dir/lists" -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=)
}
