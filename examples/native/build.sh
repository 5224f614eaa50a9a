#!/usr/bin/env bash
# Build adprof's native probe offline against the vendored computegraph crate.
#
# The manifest says `computegraph = "0.1.0"` (usable anywhere); here cargo is pointed at the copy in
# ../shared/vendor beside the repository (override with ADPROF_COMPUTEGRAPH=/path/to/computegraph-0.1.0).
# The target dir is examples/native/target (ignored by git). A read-only or missing CARGO_HOME is
# replaced by a temporary one: an offline build with no registry dependencies needs nothing from it.
# Prints the binary's path on success.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

if ! command -v cargo >/dev/null 2>&1; then
  echo "build.sh: cargo not found; the native probe is not built (its tests will skip)" >&2
  exit 3
fi

crate="${ADPROF_COMPUTEGRAPH:-$repo/../shared/vendor/computegraph-0.1.0}"
if [ ! -f "$crate/Cargo.toml" ]; then
  echo "build.sh: vendored computegraph not found at $crate (set ADPROF_COMPUTEGRAPH)" >&2
  exit 3
fi
crate="$(cd "$crate" && pwd)"

cargo_home="${CARGO_HOME:-$HOME/.cargo}"
if ! { mkdir -p "$cargo_home" 2>/dev/null && [ -w "$cargo_home" ]; }; then
  tmp_home="$(mktemp -d)"
  trap 'rm -rf "$tmp_home"' EXIT
  cargo_home="$tmp_home"
fi

# A read-only source (the vendored crate) is fine: cargo writes only to the target dir, and the lock
# file is written next to this manifest.
CARGO_HOME="$cargo_home" cargo build --release --offline --quiet \
  --manifest-path "$here/Cargo.toml" \
  --target-dir "$here/target" \
  --config "patch.crates-io.computegraph.path=\"$crate\""
echo "$here/target/release/adprof-native-probe"
