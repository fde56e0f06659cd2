#!/usr/bin/env bash
# The skillrack-linux lab: three routers r1 - r2 - r3, each a network namespace with FRR
# (zebra, staticd, bgpd in pathspace <namespace>), joined by veth pairs, eBGP on each link.
#
#   sudo examples/linux-lab/lab.sh up      # build it and wait for both BGP sessions
#   sudo examples/linux-lab/lab.sh down    # stop FRR and delete the namespaces
#
# LAB_PREFIX (default empty) is put before each namespace's name, so that tests can build a
# lab of their own beside an operator's (LAB_PREFIX=t42- gives t42-r1, t42-r2, t42-r3).
#
#   r1 (AS 65001)  r1-r2 10.0.12.1/30 --- 10.0.12.2/30 r2-r1  r2 (AS 65002)
#   r2             r2-r3 10.0.23.1/30 --- 10.0.23.2/30 r3-r2  r3 (AS 65003)
#   loopbacks      r1 192.0.2.1/32, r2 192.0.2.2/32, r3 192.0.2.3/32 (redistributed into BGP)
set -euo pipefail

PREFIX="${LAB_PREFIX:-}"
FRR_BIN="${FRR_BIN:-/usr/lib/frr}"
RUN_DIR="${FRR_RUN_DIR:-/var/run/frr}"
ROUTERS=(r1 r2 r3)

die() { echo "lab.sh: $*" >&2; exit 1; }

ns() { echo "${PREFIX}$1"; }

need() {
  [ "$(id -u)" = 0 ] || die "run as root (network namespaces and FRR need it)"
  command -v ip >/dev/null || die "ip is missing: apt-get install iproute2"
  command -v vtysh >/dev/null && [ -x "$FRR_BIN/bgpd" ] || die "FRR is missing: apt-get install frr"
}

link() {  # link A B ADDR_A ADDR_B: a veth pair A-B in A's namespace, B-A in B's
  local a=$1 b=$2
  ip link add "$a-$b" netns "$(ns "$a")" type veth peer name "$b-$a" netns "$(ns "$b")"
  ip -n "$(ns "$a")" addr add "$3" dev "$a-$b"
  ip -n "$(ns "$b")" addr add "$4" dev "$b-$a"
  ip -n "$(ns "$a")" link set "$a-$b" up
  ip -n "$(ns "$b")" link set "$b-$a" up
}

start_frr() {  # start_frr ROUTER: zebra, staticd and bgpd in pathspace <namespace>
  local name dir daemon
  name=$(ns "$1")
  dir="$RUN_DIR/$name"
  mkdir -p "$dir" "/etc/frr/$name"
  chown frr:frr "$dir" "/etc/frr/$name"
  : > "/etc/frr/$name/vtysh.conf"
  for daemon in zebra staticd bgpd; do
    ip netns exec "$name" "$FRR_BIN/$daemon" -N "$name" -d -u frr -g frr \
      -i "$dir/$daemon.pid" >/dev/null 2>&1
  done
  for _ in $(seq 50); do
    [ -S "$dir/bgpd.vty" ] && [ -S "$dir/zebra.vty" ] && return 0
    sleep 0.1
  done
  die "FRR did not start in $name"
}

configure_bgp() {  # configure_bgp ROUTER AS ROUTER_ID NEIGHBOR:AS...
  local name=$(ns "$1") as=$2 id=$3 conf
  shift 3
  conf=$(mktemp)
  {
    echo "router bgp $as"
    echo " bgp router-id $id"
    echo " no bgp ebgp-requires-policy"
    echo " no bgp network import-check"
    echo " timers bgp 1 3"
    for peer in "$@"; do
      echo " neighbor ${peer%%:*} remote-as ${peer##*:}"
      echo " neighbor ${peer%%:*} timers connect 1"
    done
    echo " address-family ipv4 unicast"
    echo "  redistribute connected"
    echo " exit-address-family"
  } > "$conf"
  vtysh -N "$name" -f "$conf" >/dev/null 2>&1 || { rm -f "$conf"; die "vtysh refused the BGP configuration of $name"; }
  rm -f "$conf"
}

established() {  # established ROUTER: how many of its BGP sessions are Established
  vtysh -N "$(ns "$1")" -c "show bgp summary json" 2>/dev/null |
    python3 -c 'import json, sys
peers = json.load(sys.stdin).get("ipv4Unicast", {}).get("peers", {})
print(sum(p.get("state") == "Established" for p in peers.values()))' 2>/dev/null || echo 0
}

up() {
  need
  for r in "${ROUTERS[@]}"; do
    [ -e "/run/netns/$(ns "$r")" ] && die "namespace $(ns "$r") exists: run lab.sh down first"
  done
  for r in "${ROUTERS[@]}"; do
    ip netns add "$(ns "$r")"
    ip -n "$(ns "$r")" link set lo up
    ip netns exec "$(ns "$r")" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
  done
  ip -n "$(ns r1)" addr add 192.0.2.1/32 dev lo
  ip -n "$(ns r2)" addr add 192.0.2.2/32 dev lo
  ip -n "$(ns r3)" addr add 192.0.2.3/32 dev lo
  link r1 r2 10.0.12.1/30 10.0.12.2/30
  link r2 r3 10.0.23.1/30 10.0.23.2/30
  for r in "${ROUTERS[@]}"; do start_frr "$r"; done
  configure_bgp r1 65001 192.0.2.1 10.0.12.2:65002
  configure_bgp r2 65002 192.0.2.2 10.0.12.1:65001 10.0.23.2:65003
  configure_bgp r3 65003 192.0.2.3 10.0.23.1:65002
  for _ in $(seq 150); do
    if [ "$(established r2)" = 2 ]; then
      echo "lab is up: $(ns r1), $(ns r2), $(ns r3); BGP r1-r2 and r2-r3 Established"
      return 0
    fi
    sleep 0.2
  done
  die "the BGP sessions did not come up within 30 s (lab.sh down to clean up)"
}

down() {
  local name dir pid
  for r in "${ROUTERS[@]}"; do
    name=$(ns "$r")
    dir="$RUN_DIR/$name"
    for pidfile in "$dir"/*.pid; do
      [ -e "$pidfile" ] || continue
      pid=$(cat "$pidfile" 2>/dev/null || true)
      [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
    done
    if [ -e "/run/netns/$name" ]; then
      for pid in $(ip netns pids "$name" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
      sleep 0.2
      for pid in $(ip netns pids "$name" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
      ip netns del "$name" 2>/dev/null || true
    fi
    rm -rf "$dir" "/etc/frr/$name"
  done
  echo "lab is down"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
