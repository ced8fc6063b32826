# Headroom: `make run` shows live memory status, `make test` runs what CI runs.
# Both install what they need first (scripts/setup, idempotent).

.PHONY: setup run test bench check-macos

setup:
	scripts/setup

run: setup
	cargo run --release --locked -- status

test: setup
	scripts/test

bench: setup
	scripts/bench-ratios

check-macos: setup
	scripts/check-macos
