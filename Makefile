# gigagas — self-documenting Makefile: `make help` lists the targets.
.DEFAULT_GOAL := help
CARGO ?= cargo
SHARED ?= ../shared
DATA ?= $(SHARED)/data/mainnet
GIGAGAS := target/release/gigagas
GIGAGAS_BENCH := target/release/gigagas-bench
BENCH_ARGS ?= --threads 1,2 --scheduler all --batch 1,all --repeat 11 --project

.PHONY: state-scale rpc-clients rpc-vs-geth-premerge test-faults interop-snap devp2p-suite interop-geth devnet-mixed interop-amsterdam rpc-vs-geth build-faults help check-data deps devnet-deps build build-quic maxperf test-quic run test test-fixtures import proofs-check bench-io worst-io net-sim bench bench-rlnc node devnet devnet-net devnet-net-replay devnet-prysm engine-schemas fuzz-net fuzz-rpc rpc-load hw engine-replay lint fmt
VENV := testing/.venv

help: ## List the targets
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  make %-16s %s\n", $$1, $$2}'

deps: ## Check for exactly what the build and tests load (cc/c++; clang++ for RocksDB's C++ (scripts/cxx); libclang.so or libclang-<N>.so for RocksDB's bindgen, not libclang-cpp; DejaVu Sans; prometheus) and install what is missing (scripts/deps.sh)
	@scripts/deps.sh

check-data: ## Check that the shared data is where the targets expect it (../shared/data beside the project)
	@test -d $(DATA)/blocks || { echo "error: no mainnet blocks at $(abspath $(DATA))/blocks: ../shared/data must sit beside the project (see ../shared/data/README.md), or pass DATA=DIR" >&2; exit 1; }
	@test -d $(SHARED)/data || { echo "error: no shared data at $(abspath $(SHARED))/data: it must sit beside the project (see ../shared/data/README.md), or pass SHARED=DIR" >&2; exit 1; }

# `--workspace --bins --examples` resolves features exactly as `cargo test --workspace` does (the
# examples bring in the dev-dependencies' features), so `make test` after `make run` reuses every
# compiled dependency and tests the very binary `make run` ran; `-p gigagas` alone would compile
# ~100 crates a second time with other features.
build: deps ## Build the binaries, gigagas (the node) and gigagas-bench (the lab) (release; the workspace's features as the tests build them)
	$(CARGO) build --release --workspace --bins --examples

test-quic: deps ## The network crate's tests with QUIC on (libp2p-quic's C build takes several minutes the first time)
	$(CARGO) test --release -p gigagas-net --features quic

test-faults: deps ## The network's fault-injection tests: propagation under 5 % frame loss (rlnc, rs) and a relay forging chunks caught and banned, with the `fault-injection` feature the production binary lacks (a second build of gigagas-net, about 2.5 min on 2 cores: kept out of `make test` for CI's budget)
	$(CARGO) test --release -p gigagas-net --features fault-injection --test it -- loss forging

build-faults: deps ## The node with fault injection (`--net.loss`, `--net.forge-chunks`: devnets that test block propagation under loss and forged chunks; never in the production binary), in target/faults: `make devnet-net GIGAGAS=target/faults/release/gigagas NET_ARGS="--loss 0.05"`
	CARGO_TARGET_DIR=target/faults $(CARGO) build --release -p gigagas --features fault-injection

build-quic: deps ## The node with QUIC next to TCP (libp2p-quic: quinn, rustls and aws-lc, a C build of several minutes; off by default to keep CI cold under its budget), in target/quic
	CARGO_TARGET_DIR=target/quic $(CARGO) build --release -p gigagas --features quic

maxperf: deps ## reth's maxperf build of gigagas and gigagas-bench into target/maxperf/: fat LTO, one codegen unit, -C target-cpu=native (this machine's CPU: run it where it is built), jemalloc; about an hour on 2 cores (what it buys: docs/benchmarks.md)
	RUSTFLAGS="-C target-cpu=native" $(CARGO) build --profile maxperf -p gigagas -p gigagas-bench --bins --features gigagas/jemalloc,gigagas-bench/jemalloc

run: check-data build ## Execute the 52 mainnet blocks sequentially and in parallel (1 and all cores, three schedulers, per block and as one megablock), validate every block, print one screen of Mgas/s and ratios with the 1-32 thread projection, write target/bench/speedup.png (more: RUN_ARGS=--verbose)
	$(GIGAGAS_BENCH) bench --data $(DATA) --project $(RUN_ARGS)

devnet-deps: ## Python virtualenv with eth-account, jsonschema and matplotlib (PyPI) for the devnet, Engine API schema and load-benchmark scripts, in testing/.venv
	@test -x $(VENV)/bin/python || python3 -m venv $(VENV)
	@$(VENV)/bin/python -c "import eth_account" 2>/dev/null || $(VENV)/bin/pip install -q eth-account
	@$(VENV)/bin/python -c "import jsonschema" 2>/dev/null || $(VENV)/bin/pip install -q jsonschema
	@$(VENV)/bin/python -c "import matplotlib" 2>/dev/null || $(VENV)/bin/pip install -q matplotlib

test: check-data deps devnet-deps ## Run all tests (release profile: the blocks execute in seconds), then a short devnet and web3.py's dapp flow against a dev node
	$(CARGO) test --release --workspace
	@# `cargo test` has built both binaries (their integration tests run them) and the examples.
	@# Not `cargo build` again: without the dev-dependencies' features (criterion turns on
	@# zerocopy's `derive`, under revm) it would rebuild most of the tree.
	@test -x $(GIGAGAS) && test -x $(GIGAGAS_BENCH)
	$(VENV)/bin/python testing/devnet.py --gigagas $(GIGAGAS) --blocks 5 --block-time 0.3
	$(VENV)/bin/python testing/devnet_net.py --gigagas $(GIGAGAS) --nodes 4 --blocks 4 --block-time 0.5
	$(VENV)/bin/python testing/engine_schemas.py --gigagas $(GIGAGAS)
	@# The web3.py flow of `make rpc-clients` against gigagas alone (the comparison with geth
	@# and the node.js libraries stay in `make rpc-clients`).
	testing/rpc_clients/install.sh --web3py-only >/dev/null
	python3 testing/rpc_clients/compare.py --solo --flows web3py --gigagas $(GIGAGAS)

node: build ## Run a dev node (a consensus driver over the Engine API, JSON-RPC on 8545, metrics on 9001)
	$(GIGAGAS) node --dev --datadir target/dev-datadir --metrics

devnet: build devnet-deps ## Dev chain end to end: transactions over JSON-RPC, >= 20 blocks built, executed in parallel with their BAL and finalized (docs/node.md)
	$(VENV)/bin/python testing/devnet.py --gigagas $(GIGAGAS) --blocks 20

devnet-net: build devnet-deps ## Multi-process devnet on loopback: a proposer and NODES-1 followers (default 16), blocks propagated by rlnc, rs and gossipsub in turn, 25 Mbit/s upload caps and 50 ± 20 ms latency; checks every node reaches the same head and state root (docs/network.md)
	$(VENV)/bin/python testing/devnet_net.py --gigagas $(GIGAGAS) --nodes $(or $(NODES),16) --blocks 10 --upload-mbit 25 --latency-ms 50 --jitter-ms 20 $(NET_ARGS)

devnet-net-replay: build devnet-deps ## The same blocks for every protocol: a chain of 100 KB to 2 MB blocks built once (target/net/chain.rlp), replayed by the proposer to NODES-1 followers (default 16), rlnc, rs and gossipsub in turn, 25 Mbit/s, 50 ± 20 ms, 6 s slots; JSON in target/net/devnet-replay.json, chart target/net/devnet_net.png
	mkdir -p target/net
	test -f target/net/chain.rlp || $(VENV)/bin/python testing/devnet_net.py --gigagas $(GIGAGAS) --gen-chain target/net/chain.rlp
	$(VENV)/bin/python testing/devnet_net.py --gigagas $(GIGAGAS) --replay target/net/chain.rlp --nodes $(or $(NODES),16) --block-time 6 --upload-mbit 25 --latency-ms 50 --jitter-ms 20 --json-out target/net/devnet-replay.json $(NET_ARGS)
	$(GIGAGAS_BENCH) net-plot target/net/devnet-replay.json --out target/net/devnet_net.png

devnet-prysm: build devnet-deps ## gigagas driven by a real consensus client: Prysm v7.0.0 (built from the Go module proxy into ~/.cache/gigagas on first use), 64 interop validators, Fulu/Osaka at genesis, 3 s slots, transactions of every type (blobs with cell proofs included); runs until the beacon chain has finalized two epochs past genesis and checks head, finality, blobs, that gigagas built every block, and Prysm's view of the Engine API; PRYSM_ARGS=--restarts adds gigagas and beacon-node restarts, PRYSM_ARGS=--late-joiner a late joiner (a fresh gigagas and beacon node that sync from the first; the joiner's beacon node is restarted with a new peer id if Prysm's gossip scoring cuts it off: docs/node.md), PRYSM_ARGS=--verbose debug logs; logs in target/devnet-prysm/ (docs/node.md)
	$(VENV)/bin/python testing/devnet_prysm.py --gigagas $(GIGAGAS) $(PRYSM_ARGS)

interop-snap: build devnet-deps ## Snap sync with geth 1.17.10 on loopback: a fresh gigagas snap-syncs from geth (--syncmode snap to the head as --debug.tip), a fresh geth snap-syncs from gigagas (snap/2: state at the pivot, then the blocks' BALs) and, for reference, from geth, driven by the head's newPayload and forkchoice; state root and eth_getProof samples checked, time, state downloaded and peak RSS reported (INTEROP_ARGS="--chain-dir DIR --json"; a chain of millions of accounts and slots from `gigagas-bench gen-chain --state-by-chain`, imported once by "--prepare"; "--only gigagas-from-gigagas" for a genesis geth cannot initialise; "--gigagas-flag '--snap.catch-up execute'"); logs in target/interop-snap/
	$(VENV)/bin/python testing/interop_snap.py --gigagas $(GIGAGAS) $(INTEROP_ARGS)

devp2p-suite: build devnet-deps ## geth 1.17.10's devp2p conformance suites (`devp2p rlpx eth-test`, `snap-test`, `snap2-test`, as hive runs them; devp2p built by testing/geth_install.sh into ~/.cache/gigagas) against gigagas, a fresh node on the suite's chain for each test; SUITE_ARGS="--suites eth --run Receipts", "--geth-reference" (geth in gigagas's place), "--json"; logs in target/devp2p-suite/ (docs/conformance.md)
	$(VENV)/bin/python testing/devp2p_suite.py --gigagas $(GIGAGAS) $(SUITE_ARGS)

engine-schemas: build devnet-deps ## The Engine API's answers (V1-V6, bodies, blobs) from nodes on Paris to Amsterdam chains validated against the execution-apis OpenRPC schemas (testing/execution-apis/engine-openrpc.json); also in make test
	$(VENV)/bin/python testing/engine_schemas.py --gigagas $(GIGAGAS)

hw: check-data build ## Size hardware: measure this machine (mainnet blocks, the engine on a 300M-gas generated chain at 1..cores threads, disk and RocksDB reads at queue depth 1..64, memory) and print the largest gas per block per budget (3/6/12 s), EIP-7870's machines and what 300M gas in 3 s needs; target/hw/hw.json and hw.png (docs/hardware.md; the chain is generated when missing; more: HW_ARGS)
	$(GIGAGAS_BENCH) hw --mainnet $(DATA) --chain target/chains/amsterdam-mainnet-300m --target-gas 300M $(HW_ARGS)

engine-replay: check-data build devnet-deps ## The Engine API replay benchmark on the 300M-gas Amsterdam chain: a fresh node per configuration (sequential, parallel 1 and 2 threads), newPayload + forkchoiceUpdated per block, warm, 2 runs each; then the `gigagas-bench hw` model of target/hw/hw.json checked against it (docs/hardware.md)
	test -f target/chains/amsterdam-mainnet-300m/chain.rlp || $(GIGAGAS_BENCH) gen-chain --data $(DATA) --fork amsterdam --mix mainnet --gas 300M --blocks 20 --out target/chains/amsterdam-mainnet-300m
	$(VENV)/bin/python testing/engine_replay.py --chain target/chains/amsterdam-mainnet-300m --configs sequential,parallel-1,parallel-2 --caches warm --runs 2 --out target/replay/hw-check
	test ! -f target/hw/hw.json || $(GIGAGAS_BENCH) hw --model target/hw/hw.json --check-replay target/replay/hw-check

rpc-load: check-data build devnet-deps ## A node validating while serving JSON-RPC: gigagas and geth 1.17.10 each fed a 50M-gas Osaka chain over the Engine API while a loopback client offers full-block reads (40/s) and a mix of calls, state, blocks, receipts, logs, estimates and raw transactions at 40-3,000 req/s; replay Mgas/s, newPayload p50/p99, answers and errors per method, CPU and memory; the issue's targets; target/rpc-load/ (testing/rpc_load.py; the chain is generated on first use; more: RPC_LOAD_ARGS)
	@test -f target/chains/osaka-rpcload-50m/info.json || target/release/gigagas-bench gen-chain --out target/chains/osaka-rpcload-50m --gas 50M --blocks 200 --fork osaka --spare-senders 512
	$(VENV)/bin/python testing/rpc_load.py --chain target/chains/osaka-rpcload-50m --blocks 100 $(RPC_LOAD_ARGS)

fuzz-rpc: deps ## The JSON-RPC request decoders: every public method and the Engine API fed 1,000,000 random, mutated and hostile requests (out-of-range numbers, bad hex, huge strings and arrays, deep nesting): no panic, every JSON-RPC request answered with a result or a typed error
	FUZZ_ITERATIONS=1000000 $(CARGO) test --release -p gigagas-rpc --test it -- fuzz --nocapture

fuzz-net: deps ## The decoders of everything a peer sends: libp2p (frames, RLNC and RS chunks, gossipsub messages, sync messages) and devp2p (RLPx frames, Hello, Disconnect, every eth/69-72 and snap/1-2 message; ECIES auth/ack packets at a tenth, ECDH being slow) and snap sync's answer checks (slim accounts, slots, range proofs against a real root), 1,000,000 random and mutated inputs each: no panic, no changed frame past its MAC
	FUZZ_ITERATIONS=1000000 $(CARGO) test --release --workspace --test it -- fuzz --nocapture

test-fixtures: build ## Conformance suites through the pipeline (ethereum/tests, execution-apis chain, EEST's EIP-7928 draft fixtures, geth 1.17.10's Amsterdam chain as a fixture); tables in docs/conformance.md
	$(GIGAGAS_BENCH) test-fixtures $(SHARED)/data/ethereum-tests/BlockchainTests
	$(GIGAGAS_BENCH) test-fixtures $(SHARED)/data/execution-apis/tests
	$(GIGAGAS_BENCH) test-fixtures $(SHARED)/data/eest-amsterdam
	$(GIGAGAS_BENCH) test-fixtures testing/geth/amsterdam-coverage/fixture.json

interop-geth: build devnet-deps ## gigagas and geth 1.17.10 over devp2p, both ways, on an Osaka and an Amsterdam chain of >= 400 blocks built by geth --dev (target/chains/interop-*, about 10 minutes each on first use): gigagas syncs from geth with --trusted-peers and --debug.tip (Amsterdam blocks in parallel on eth/71 BALs), a fresh geth full-syncs from gigagas alone, and geth from geth for reference (roots checked, blocks/s and Mgas/s of each), then the mixed Prysm devnet of devnet-mixed (testing/interop_geth.py; INTEROP_ARGS="--runs 3 --json", --no-devnet skips the devnet)
	$(VENV)/bin/python testing/interop_geth.py --gigagas $(GIGAGAS) $(INTEROP_ARGS)

devnet-mixed: build devnet-deps ## geth 1.17.10 and gigagas on one Osaka devnet: two Prysm v7.0.0 beacon nodes (one drives geth, one gigagas, half the 64 validators each), the execution clients peered over devp2p, transactions of every type sent to both; checks finality, equal heads and blocks, blocks built by each accepted by the other, transactions sent to each included in blocks the other built (testing/devnet_mixed.py, about 8 minutes; logs in target/devnet-mixed/)
	$(VENV)/bin/python testing/devnet_mixed.py --gigagas $(GIGAGAS) $(MIXED_ARGS)

interop-amsterdam: build devnet-deps ## geth 1.17.10 as the oracle of Amsterdam, both ways: geth --dev builds a chain under a load that exercises every Glamsterdam rule, gigagas imports it with geth's BALs (parallel) and without (sequential), its fixture passes geth's evm blocktest and test-fixtures; geth imports a gen-chain Amsterdam chain and a gigagas dev node's blocks (testing/interop_amsterdam.py; geth installed into ~/.cache/gigagas)
	$(VENV)/bin/python testing/interop_amsterdam.py --gigagas $(GIGAGAS) --bench $(GIGAGAS_BENCH) --data $(DATA)

rpc-vs-geth: build devnet-deps ## gigagas's JSON-RPC answers against geth 1.17.10's on geth's Amsterdam chain (testing/geth/amsterdam-coverage): blocks, receipts, eth_call, eth_estimateGas, eth_simulateV1, debug_trace* with the struct logger, callTracer and prestateTracer, debug_traceCall, debug_executionWitness, the gas price oracle (testing/rpc_vs_geth.py; CHAIN=folder for another chain)
	$(VENV)/bin/python testing/rpc_vs_geth.py --gigagas $(GIGAGAS) $(if $(CHAIN),--chain $(CHAIN))

rpc-vs-geth-premerge: build devnet-deps ## rpc-vs-geth on a proof-of-work chain with ommers (testing/premerge_chain, written with geth 1.17.10's chain maker into target/premerge-chain; Go from the module proxy): blocks, receipts, traces, the uncle methods, debug_executionWitness, and gigagas's parity reward traces against the balances geth's state shows
	cd testing/premerge_chain && go run . $(abspath target/premerge-chain)
	$(VENV)/bin/python testing/rpc_vs_geth.py --gigagas $(GIGAGAS) --chain target/premerge-chain --out target/rpc-vs-geth-premerge

rpc-clients: build ## Real client libraries as tests: a dapp's everyday flow written in web3.py 7.14, ethers 6 and viem 2 (testing/rpc_clients/install.sh puts them in ~/.cache/gigagas/rpc-clients: a venv and an npm folder, node.js from Debian when missing) run against geth 1.17.10 --dev and gigagas node --dev on testing/dev-genesis.json, over HTTP and WebSocket, then a subscription across a reorg on both nodes without --dev, the harness their consensus client over the Engine API; answers normalized (hashes, times, fees shaped) and compared field by field, a table step x library; fails when a step geth passes fails or differs on gigagas (testing/rpc_clients/compare.py; RPC_CLIENTS_ARGS="--only geth" checks the harness on two geths, "--flows viem", "--json"; each flow's JSON and the logs in target/rpc-clients/)
	testing/rpc_clients/install.sh >/dev/null
	python3 testing/rpc_clients/compare.py --gigagas $(GIGAGAS) $(RPC_CLIENTS_ARGS)

import: build ## init + import the execution-apis chain into target/datadir (header checks, execution, every state root verified)
	rm -rf target/datadir
	$(GIGAGAS) init --genesis $(SHARED)/data/execution-apis/tests/genesis.json --datadir target/datadir
	$(GIGAGAS) import $(SHARED)/data/execution-apis/tests/chain.rlp --datadir target/datadir

proofs-check: build ## State roots of the mainnet-proofs blocks from their eth_getProof data
	$(GIGAGAS_BENCH) proofs-check $(SHARED)/data/mainnet-proofs

bench-io: build ## BAL-hinted I/O on RocksDB (full, batch, parallel, prewarm; warm and cold) and BAL sizes
	$(GIGAGAS_BENCH) bench --data $(DATA) --state rocksdb --threads 1,2 --batch 1,all --repeat 5 --cold

worst-io: build ## Worst-case I/O: random SLOADs over a 10M-slot RocksDB, 64M and 640M gas blocks, batch vs parallel, warm and cold
	$(GIGAGAS_BENCH) worst-io --slots 10000000 --gas 64000000,640000000 --threads 1,2 --repeat 3 --cold

state-scale: build devnet-deps ## State at scale (as root: it drops the page cache): the same 300M-gas Amsterdam blocks of the spread mix (a hot set, a cold tail) against states of 1M and 10M entries made by a chain gigagas imports, geth snap-syncing each from gigagas (--geth-state import: geth imports the chain instead); both states compacted first; gigagas sequential, parallel on demand and parallel with BAL-hinted reads before execution (on the executor's threads, as the node does by default, or on 8 or 16 threads of their own, each thread's batches through io_uring) or beside it, and geth 1.17.10, each cold and warm, medians of 3 runs; Mgas/s, stage times, IOPS, peak RSS, bytes on disk; then the sizing model's cold term against each cold run, its disk reads traced in one more run of each design with strace when installed (gigagas-bench hw --check-state-scale); target/state-scale/state-scale.json and state_scale.png (testing/state_scale.py, about an hour on 2 cores; the 50M state takes 1 h 40 min more to generate on 2 cores (12 GB): STATE_SCALE_ARGS="--sizes 1m,10m,50m")
	python3 testing/state_scale.py --sizes 1m,10m --blocks 6 --depths 0,8,16 --runs 3 $(STATE_SCALE_ARGS)
	$(VENV)/bin/python testing/state_scale_plot.py --json target/state-scale/state-scale.json --png target/state-scale/state_scale.png

net-sim: build ## Block propagation, gossipsub vs RLNC: N x D x chunks-per-peer sweep at 1,000 and 10,000 nodes, and the charts (docs/rlnc.md, docs/img)
	$(GIGAGAS_BENCH) net-sim --sweep --per-peer 1,2,4
	$(GIGAGAS_BENCH) net-sim --sweep --per-peer 1,2,4 --upload-mbit 25 --verify-ms 2.2 --decode-ms 1.0
	$(GIGAGAS_BENCH) net-sim --plots docs/img

bench: build ## Benchmarks recorded in docs/benchmarks.md: the bench command (JSON) and criterion
	$(GIGAGAS_BENCH) bench --data $(DATA) $(BENCH_ARGS) --json > target/bench.json
	$(GIGAGAS_BENCH) bench --data $(DATA) $(BENCH_ARGS)
	$(CARGO) bench -p gigagas-bench --bench executor

bench-rlnc: deps ## RLNC criterion benchmarks (docs/rlnc.md): stable Rust (AVX2), then nightly (curve25519-dalek's AVX-512 IFMA backend, installed with rustup if missing)
	$(CARGO) bench -p gigagas-rlnc --bench rlnc
	rustup run nightly rustc --version >/dev/null 2>&1 || rustup toolchain install nightly --profile minimal
	CARGO_TARGET_DIR=target/nightly rustup run nightly cargo bench -p gigagas-rlnc --bench rlnc -- rlnc_ristretto

lint: ## cargo fmt --check and clippy -D warnings, as CI runs them
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --release --workspace --all-targets -- -D warnings

fmt: ## Format the code
	$(CARGO) fmt --all
