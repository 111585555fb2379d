# Sourced by the benchmark scripts: `root` is the repository, `bin` the mosaic binary to
# measure ($MOSAIC_BIN, else target/release/mosaic, built if missing).
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="${MOSAIC_BIN:-$root/target/release/mosaic}"
if [[ ! -x "$bin" ]]; then
    (cd "$root" && cargo build --release --bin mosaic)
fi
