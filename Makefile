# The engine's C tests under AddressSanitizer + UndefinedBehaviorSanitizer
# (LeakSanitizer runs at exit), built with clang outside SwiftPM.
#
#   make check     check the tree's wording (scripts/check-wording.sh: no
#                  narration of how it was made), the engine's layering
#                  (scripts/engine-dag.sh), then
#                  build ctests/c/test_*.c and run them (test_engine on both
#                  I/O backends: io_uring where the kernel allows it, and epoll)
#   make wording   only the wording check
#   make dag       only the layering check
#   make bench-tools  Benchmarks/engine-bench/ (engine-bench, kernel_floor),
#                  built with the checks' flags so they cannot rot (part of
#                  check; measure with -O2 builds, docs/BENCHMARKS.md)
#   make clean
#
# CLANG defaults to the Swift toolchain's clang. Binaries go to .build-c/.
# PK_STATE_CHECKS makes every request state change check the table of legal
# ones (pk_request.c); release builds do not pay for it.

CLANG ?= /opt/swift/usr/bin/clang
ENGINE := Sources/CHTTPEngine
OUT := .build-c
ENGINE_SRC := $(wildcard $(ENGINE)/*.c)
ENGINE_HDR := $(wildcard $(ENGINE)/*.h $(ENGINE)/include/*.h)
# DNS (both files) and TLS are leaves: their test links them with nothing of the
# connection, the pool, the request or the loop. A call into those would
# fail this link.
LEAF_SRC := $(ENGINE)/pk_dns.c $(ENGINE)/pk_dns_records.c $(ENGINE)/pk_tls.c $(ENGINE)/pk_error.c
# The pool decides without touching a connection: its test links it with
# the allocation wrapper alone.
POOL_SRC := $(ENGINE)/pk_pool.c $(ENGINE)/pk_error.c
TESTS := $(patsubst ctests/c/%.c,$(OUT)/%,$(wildcard ctests/c/test_*.c))
CFLAGS := -g -O1 -std=c11 -D_GNU_SOURCE -DPK_STATE_CHECKS -Wall -Wextra -Werror \
  -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
  -I $(ENGINE)/include -I $(ENGINE)
LDFLAGS := -fuse-ld=lld
LDLIBS := -lpthread -lresolv -lz -ldeflate -lssl -lcrypto -luring

BENCH_TOOLS := $(OUT)/engine-bench $(OUT)/kernel_floor

.PHONY: check clean dag wording bench-tools

bench-tools: $(BENCH_TOOLS)

check: wording dag $(TESTS) $(BENCH_TOOLS)
	@set -e; for t in $(TESTS); do \
	  echo "== $$t"; \
	  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 $$t; \
	done; \
	echo "== $(OUT)/test_engine on epoll (POCKET_IO_BACKEND=epoll)"; \
	POCKET_IO_BACKEND=epoll ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 $(OUT)/test_engine

wording:
	@scripts/check-wording.sh
	@scripts/check-doc-symbols.sh

dag:
	@CLANG=$(CLANG) scripts/engine-dag.sh

$(OUT)/test_leaves: ctests/c/test_leaves.c ctests/c/check.h $(LEAF_SRC) $(ENGINE_HDR)
	@mkdir -p $(OUT)
	$(CLANG) $(CFLAGS) $< $(LEAF_SRC) -o $@ $(LDFLAGS) $(LDLIBS)

$(OUT)/test_pool: ctests/c/test_pool.c ctests/c/check.h $(POOL_SRC) $(ENGINE_HDR)
	@mkdir -p $(OUT)
	$(CLANG) $(CFLAGS) $< $(POOL_SRC) -o $@ $(LDFLAGS)

$(OUT)/%: ctests/c/%.c ctests/c/server.c ctests/c/check.h ctests/c/calls.h $(ENGINE_SRC) $(ENGINE_HDR)
	@mkdir -p $(OUT)
	$(CLANG) $(CFLAGS) $< ctests/c/server.c $(ENGINE_SRC) -o $@ $(LDFLAGS) $(LDLIBS)

$(OUT)/engine-bench: Benchmarks/engine-bench/engine_bench.c Benchmarks/engine-bench/bench_clock.h $(ENGINE_SRC) $(ENGINE_HDR)
	@mkdir -p $(OUT)
	$(CLANG) $(CFLAGS) $< $(ENGINE_SRC) -o $@ $(LDFLAGS) $(LDLIBS)

$(OUT)/kernel_floor: Benchmarks/engine-bench/kernel_floor.c Benchmarks/engine-bench/bench_clock.h
	@mkdir -p $(OUT)
	$(CLANG) $(CFLAGS) $< -o $@ $(LDFLAGS) -luring

clean:
	rm -rf $(OUT)
