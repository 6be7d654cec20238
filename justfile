# toolhost recipes. `just` is optional: each recipe is one plain command.

# Install the wasm target and run the builtin tools on this directory.
setup:
    rustup target add wasm32-wasip2
    cargo run --release -- list

# Every test (what CI runs).
test:
    ./scripts/test

# Release build: target/release/toolhost with the builtins inside.
build:
    cargo build --release

# The example tools in Python and JavaScript: installs their pinned
# toolchains in target/toolchains/, builds target/examples/*.wasm.
examples:
    ./scripts/examples

# Benchmarks (figures go in BENCHMARKS.md).
bench:
    cargo bench -p toolhost-tests

lint:
    cargo fmt --all -- --check
    cargo clippy --release --all-targets -- -D warnings

fmt:
    cargo fmt --all
