#!/usr/bin/env bash
# Packs the Debian libraries the build needs besides libtorch (yaml-cpp, spdlog, fmt,
# CLI11, nlohmann-json, GoogleTest, PCRE2, SentencePiece, libpng, pkgconf to find the last
# three, and Gloo's headers, which PyTorch's wheel leaves out) into .gpu-deps/ (git-ignored),
# for a GPU machine that has CMake, ninja, CUDA
# and PyTorch but no Debian -dev packages and no network:
# `apt-get download` + `dpkg -x`, links replaced by the files they name (a copied tree
# keeps no links), and .gpu-deps/env.sh to source there. Run it here, on Debian 12;
# scripts/gpu-check.sh uses the result.
set -euo pipefail
cd "$(dirname "$0")/.."

readonly PACKAGES=(
  libyaml-cpp-dev libyaml-cpp0.7 libspdlog-dev libspdlog1.10 libfmt-dev libfmt9
  libcli11-dev nlohmann-json3-dev libgtest-dev libgmock-dev
  libpcre2-dev libpcre2-8-0 libsentencepiece-dev libsentencepiece0 libprotobuf-lite32
  libpng-dev libpng16-16 zlib1g-dev pkgconf pkgconf-bin libpkgconf3 libgloo-dev
)
# What the carried tree may weigh (the device tool carries 64 MiB in all).
readonly MAX_MIB=48

rm -rf .gpu-deps
mkdir -p .gpu-deps/debs .gpu-deps/root
(cd .gpu-deps/debs && apt-get download "${PACKAGES[@]}" > /dev/null)
for deb in .gpu-deps/debs/*.deb; do dpkg -x "$deb" .gpu-deps/root; done
rm -rf .gpu-deps/debs .gpu-deps/root/usr/share/doc .gpu-deps/root/usr/share/lintian
# Links become copies of what they point to (dangling ones, to files not packed, go).
while IFS= read -r link; do
  target=$(readlink -f "$link" || true)
  rm "$link"
  if [[ -n "$target" && -f "$target" ]]; then cp "$target" "$link"; fi
done < <(find .gpu-deps/root -type l)

cat > .gpu-deps/env.sh <<'ENV'
# Sourced by scripts/gpu-check.sh: the packed libraries before the system's.
HYPERPIPE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/root"
HYPERPIPE_DEPS="$HYPERPIPE_ROOT/usr"
export CMAKE_PREFIX_PATH="$HYPERPIPE_DEPS${CMAKE_PREFIX_PATH:+;$CMAKE_PREFIX_PATH}"
export LD_LIBRARY_PATH="$HYPERPIPE_DEPS/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The packed pkgconf reads only the packed .pc files, their /usr prefixed with the root.
export PATH="$HYPERPIPE_DEPS/bin:$PATH"
export PKG_CONFIG_LIBDIR="$HYPERPIPE_DEPS/lib/x86_64-linux-gnu/pkgconfig:$HYPERPIPE_DEPS/share/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$HYPERPIPE_ROOT"
ENV

mib=$(du -sm .gpu-deps | cut -f1)
if (( mib > MAX_MIB )); then
  echo "pack-gpu-deps: .gpu-deps is $mib MiB, more than $MAX_MIB" >&2
  exit 1
fi
echo "pack-gpu-deps: ${#PACKAGES[@]} packages in .gpu-deps ($mib MiB)"
