# Sourced by the oracle kit builders (oracle-scx/build-kit.sh,
# oracle-seeds/build-kit.sh): a private apt configuration for one Debian suite,
# so that a kit fetches a package by name without touching the system's sources.
#
#   oracle_apt KIT_DIR SUITE   sets $O, the apt options of that configuration
#
# The mirror is the one this machine already uses (its deb822 sources, then its
# one-line lists; $SCHEDLAB_ORACLE_MIRROR overrides). There is no default mirror.
oracle_apt() {
    local kit=$1 suite=$2 mirror=${SCHEDLAB_ORACLE_MIRROR:-}
    if [ -z "$mirror" ]; then
        mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | tr ' ' '\n' | grep '/debian/*$' | head -1)
    fi
    if [ -z "$mirror" ]; then
        mirror=$(cat /etc/apt/sources.list.d/*.list /etc/apt/sources.list 2>/dev/null \
            | sed -n 's/^deb \(\[[^]]*\] \)*\([^ ]*\).*/\2/p' | grep '/debian/*$' | head -1)
    fi
    if [ -z "$mirror" ]; then
        echo "$0: no Debian mirror in this host's apt sources (read /etc/apt/sources.list.d/*.sources, *.list and /etc/apt/sources.list): add one, or set SCHEDLAB_ORACLE_MIRROR" >&2
        exit 2
    fi
    mkdir -p "$kit/lists"
    printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$mirror" "$suite" > "$kit/$suite.sources"
    O="-o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists=$kit/lists -o Dir::Etc::sourcelist=$kit/$suite.sources -o APT::Sandbox::User=root"
}

# oracle_build_deps: the packages a kernel build needs, installed when missing.
oracle_build_deps() {
    local need="flex bison libelf-dev libssl-dev dwarves bc zlib1g-dev make gcc $*" missing="" p
    for p in $need; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"; done
    if [ -n "$missing" ]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
    fi
}
