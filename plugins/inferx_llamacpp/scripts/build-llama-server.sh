#!/usr/bin/env bash
# Build llama.cpp's llama-server once per version into InferX's engine cache.
#
# Usage: build-llama-server.sh VERSION CACHE_DIR [PYTHON]
#   VERSION    llama-cpp-python sdist version whose vendored llama.cpp is built
#   CACHE_DIR  InferX's cache (~/.cache/inferx); the binary lands in
#              CACHE_DIR/engines/llama.cpp-VERSION/bin/llama-server
#   PYTHON     the python whose pip downloads the sdist (default python3)
#
# The sources come from PyPI only (the llama-cpp-python sdist vendors
# llama.cpp): no git, no other network. GGML_NATIVE=OFF because the binary is
# cached where another CPU may find it; the UI is neither built nor fetched.
set -euo pipefail

version="${1:?llama-cpp-python version}"
cache="${2:?cache dir}"
python="${3:-python3}"
prefix="$cache/engines/llama.cpp-$version"
binary="$prefix/bin/llama-server"
stamp="$prefix/.inferx-engine-installed"

if [ -x "$binary" ] && [ -f "$stamp" ]; then
    echo "llama-server $version: $binary (cached)"
    exit 0
fi

work="$prefix/build"
rm -rf "$work"
mkdir -p "$work" "$prefix/bin"
trap 'rm -rf "$work"' EXIT

started=$(date +%s)
"$python" -m pip download --quiet --no-binary :all: --no-deps \
    "llama-cpp-python==$version" -d "$work"
tar -xzf "$work"/llama_cpp_python-"$version".tar.gz -C "$work"
src="$work/llama_cpp_python-$version/vendor/llama.cpp"

generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
cmake -S "$src" -B "$work/out" "${generator[@]}" \
    -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    >"$work/configure.log"
cmake --build "$work/out" --target llama-server --config Release -j "$(nproc)"

install -m 0755 "$work/out/bin/llama-server" "$binary"
strip "$binary" 2>/dev/null || true
"$binary" --version >"$prefix/version.txt" 2>&1
finished=$(date +%s)
echo "llama-cpp-python $version, built in $((finished - started)) s" >"$stamp"
echo "llama-server $version: $binary ($(du -h "$binary" | cut -f1), $((finished - started)) s)"
