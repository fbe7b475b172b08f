#!/usr/bin/env bash
# Installs the Debian packages the test suite drives for real, only when they are missing:
#   zookeeper (cluster tests), kcat (librdkafka 2.0.2 client tests), a JRE (ZooKeeper and Spark),
#   openssl (the security tests make their certificates with it), iproute2 (the network-partition
#   tests build their hosts with ip netns), libssl-dev (fastkafka/_core/tls_read.pyx builds against
#   the OpenSSL that CPython's ssl module runs on).
set -euo pipefail

need=()
[ -f /usr/share/java/zookeeper.jar ] || need+=(zookeeper)
command -v kcat >/dev/null 2>&1 || need+=(kcat)
command -v java >/dev/null 2>&1 || need+=(default-jre-headless)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
[ -f /usr/include/openssl/ssl.h ] || need+=(libssl-dev)
[ ${#need[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "installing Debian packages: ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
