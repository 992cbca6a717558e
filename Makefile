# The engine's C tests under AddressSanitizer + UndefinedBehaviorSanitizer
# (LeakSanitizer runs at exit), built with clang outside SwiftPM.
#
#   make check     build ctests/c/test_*.c with Sources/CHTTPEngine and run them
#   make clean
#
# CLANG defaults to the Swift toolchain's clang. Binaries go to .build-c/.

CLANG ?= /opt/swift/usr/bin/clang
ENGINE := Sources/CHTTPEngine
OUT := .build-c
ENGINE_SRC := $(wildcard $(ENGINE)/*.c)
TESTS := $(patsubst ctests/c/%.c,$(OUT)/%,$(wildcard ctests/c/test_*.c))
CFLAGS := -g -O1 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror \
  -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
  -I $(ENGINE)/include -I $(ENGINE)
LDFLAGS := -fuse-ld=lld
LDLIBS := -lpthread -lz -ldeflate -ldl

.PHONY: check clean

check: $(TESTS)
	@set -e; for t in $(TESTS); do \
	  echo "== $$t"; \
	  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 $$t; \
	done

$(OUT)/%: ctests/c/%.c ctests/c/server.c ctests/c/check.h $(ENGINE_SRC) $(wildcard $(ENGINE)/*.h $(ENGINE)/include/*.h)
	@mkdir -p $(OUT)
	$(CLANG) $(CFLAGS) $< ctests/c/server.c $(ENGINE_SRC) -o $@ $(LDFLAGS) $(LDLIBS)

clean:
	rm -rf $(OUT)
