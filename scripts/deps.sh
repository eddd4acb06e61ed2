#!/usr/bin/env bash
# System packages the build and the tests load, each checked for exactly what is used, and the
# missing ones installed from Debian (apt-get; as root, or through sudo). Prints one line per
# package installed, nothing else when all is present. Called by `make deps`.
#
#   C and C++ compilers    cc (secp256k1, blst, c-kzg), c++ (RocksDB)           -> build-essential
#   clang++                RocksDB's C++ through scripts/cxx (.cargo/config.toml's CXX): a third
#                          less compile time than g++; without it the build uses c++ -> clang
#   libclang               RocksDB's bindings: bindgen loads libclang at run time through
#                          clang-sys, which looks for libclang.so, libclang-<N>.so, libclang.so.<N>
#                          or libclang-<N>.so.<N> (never libclang-cpp*) in llvm-config's prefix,
#                          $LD_LIBRARY_PATH, $LIBRARY_PATH and /usr/lib*, /usr/local/lib*; bindgen
#                          then needs clang's own headers (stddef.h)           -> libclang-dev
#   liburing, pkg-config   RocksDB's batched reads through io_uring (gigagas-storage's default
#                          `io-uring` feature): librocksdb-sys finds liburing with pkg-config
#                                                                               -> liburing-dev, pkgconf
#   DejaVu Sans            the PNG charts (plotters)                            -> fonts-dejavu-core
#   prometheus             the metrics test scrapes the node with a real server -> prometheus
#
# Usage: scripts/deps.sh [--check]   (--check: list what is missing, install nothing, exit 1 if any)
set -euo pipefail

check_only=0
[ "${1:-}" = "--check" ] && check_only=1

# The directories clang-sys searches (clang-sys 1.9 build/common.rs, DIRECTORIES_LINUX), plus
# llvm-config's prefix and the two library path variables.
libclang_dirs() {
  if command -v llvm-config >/dev/null 2>&1; then
    local prefix
    prefix=$(llvm-config --prefix 2>/dev/null || true)
    [ -n "$prefix" ] && echo "$prefix/bin" "$prefix/lib" "$prefix/lib64"
  fi
  local var
  for var in "${LD_LIBRARY_PATH:-}" "${LIBRARY_PATH:-}"; do
    [ -n "$var" ] && echo "${var//:/ }"
  done
  local dir
  for dir in /usr/local/llvm*/lib* /usr/local/lib*/*/* /usr/local/lib*/* /usr/local/lib* \
    /usr/lib*/*/* /usr/lib*/* /usr/lib*; do
    [ -d "$dir" ] && echo "$dir"
  done
  return 0
}

# A file clang-sys would load: the names above, not libclang-cpp, a 64-bit ELF object.
has_libclang() {
  local dir file
  for dir in $(libclang_dirs); do
    [ -d "$dir" ] || continue
    for file in "$dir"/libclang.so "$dir"/libclang-*.so "$dir"/libclang.so.* "$dir"/libclang-*.so.*; do
      [ -e "$file" ] || continue
      case "$(basename "$file")" in *-cpp.*) continue ;; esac
      # ELF magic + class 2 (64-bit), as clang-sys validates it
      [ "$(head -c 5 "$file" | od -An -tx1 | tr -d ' \n')" = "7f454c4602" ] && return 0
    done
  done
  return 1
}

# clang's resource headers, which bindgen's parse of RocksDB's c.h includes (stddef.h, stdbool.h).
has_clang_headers() {
  local file
  for file in /usr/lib/llvm-*/lib/clang/*/include/stddef.h /usr/lib/clang/*/include/stddef.h \
    /usr/local/lib/clang/*/include/stddef.h; do
    [ -f "$file" ] && return 0
  done
  return 1
}

# A clang++ scripts/cxx would run.
has_clangxx() {
  local cxx
  for cxx in clang++ clang++-20 clang++-19 clang++-18 clang++-17 clang++-16 clang++-15 clang++-14; do
    command -v "$cxx" >/dev/null 2>&1 && return 0
  done
  return 1
}

missing=()
reasons=()
need() { missing+=("$1"); reasons+=("$2"); }

if ! command -v cc >/dev/null 2>&1 || ! command -v c++ >/dev/null 2>&1; then
  need build-essential "no C/C++ compiler (cc, c++): secp256k1, blst, c-kzg and RocksDB are built from C/C++"
fi
if ! has_clangxx; then
  need clang "no clang++ (clang++ or clang++-<N> on PATH): RocksDB's C++ compiles a third faster with it than with g++ (scripts/cxx falls back to c++)"
fi
if ! has_libclang; then
  need libclang-dev "no libclang.so / libclang-<N>.so (libclang-cpp does not count): RocksDB's bindgen loads it"
elif ! has_clang_headers; then
  need libclang-dev "libclang found but not clang's headers (stddef.h): RocksDB's bindgen needs them"
fi
if ! command -v pkg-config >/dev/null 2>&1; then
  need pkgconf "no pkg-config on PATH: librocksdb-sys finds liburing with it"
fi
if [ ! -f /usr/include/liburing.h ] || ! compgen -G "/usr/lib/*/pkgconfig/liburing.pc" >/dev/null; then
  need liburing-dev "no liburing.h / liburing.pc: RocksDB's batched reads go through io_uring (gigagas-storage's io-uring feature)"
fi
if [ ! -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ]; then
  need fonts-dejavu-core "no /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf: the PNG charts draw their text with it"
fi
if ! command -v prometheus >/dev/null 2>&1; then
  need prometheus "no prometheus on PATH: the metrics test scrapes the node with it"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "deps: cargo not found: install Rust from https://rustup.rs" >&2
  exit 1
fi

[ ${#missing[@]} -eq 0 ] && exit 0

for i in "${!missing[@]}"; do
  echo "deps: missing ${missing[$i]}: ${reasons[$i]}"
done
if [ $check_only -eq 1 ]; then
  exit 1
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
  else
    echo "deps: not root and no sudo: run as root: apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
fi
echo "deps: installing ${missing[*]} (apt-get)"
log=$(mktemp)
if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
  --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "deps: apt-get could not install ${missing[*]} (its output above)" >&2
  exit 1
fi
rm -f "$log"
for pkg in "${missing[@]}"; do
  echo "deps: installed $pkg $(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null)"
done

# Check again: an install that did not bring what the build loads is an error here, not a
# bindgen panic twenty minutes into the build.
if ! has_libclang || ! has_clang_headers; then
  echo "deps: libclang-dev is installed but no libclang.so with clang's headers was found" >&2
  exit 1
fi
