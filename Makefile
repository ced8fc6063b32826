# Headroom: `make run` starts the menu-bar app, `make test` runs what CI runs.
# Both install what they need first (scripts/setup, idempotent).

.PHONY: setup run test bench check-macos package test-deb lint-release

setup:
	scripts/setup

run: setup
	cargo run --release --locked -p headroom-app -- --show

test: setup
	scripts/test

bench: setup
	scripts/bench-ratios

check-macos: setup
	scripts/check-macos

package: setup
	scripts/package-deb

test-deb: setup
	scripts/test-deb

lint-release: setup
	scripts/lint-release
