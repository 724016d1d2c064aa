# flamed - one entry point: build, run, test, install.
# make            build build/flamed and build/flamectl (installs missing Debian packages)
# make run        build, then run the daemon in the foreground on ./flamed.db (root); FLAMED_ARGS="--off-cpu" adds options
# make test       unit, integration (root, real BPF) tests; ends with "N passed, N failed"
# make test SANITIZE=1   the same, built with AddressSanitizer and UBSan in build-san/
# make soak       the long resilience tests (tests/soak/: wrk on the API, churn memory, kill -9 rounds; root)
# make fuzz       libFuzzer targets (tests/fuzz/) for FUZZ_SECONDS (60) each; make fuzz-build only builds them
# make bench      measure overhead, ingest, off-CPU, queries, storage, memory (root); writes docs/BENCHMARKS.md
# make bench QUICK=1   the same in a few minutes (5 s runs, a 1-hour history): to check the harness
# make bench BENCH_PARTS="query storage memory"   only those parts (of overhead python ingest offcpu query storage memory)
# make bench BENCH_PARTS=python PYTHON=/usr/bin/python3.14 PYROOT=/var/tmp/flamed-pyroot   the Python part on a Python of that root
# make bench BENCH_REPEAT=7   7 rounds instead of 3 in the parts whose rows compare medians
# make install    install into $(DESTDIR)$(PREFIX), the unit into $(DESTDIR)$(UNITDIR)

PREFIX   ?= /usr/local
UNITDIR  ?= $(PREFIX)/lib/systemd/system
BUILD    ?= build
VERSION  := 0.1.0

CC       ?= cc
CLANG    ?= clang
LLVM_STRIP ?= llvm-strip
BPFTOOL  ?= $(shell command -v bpftool 2>/dev/null || echo /usr/sbin/bpftool)
VMLINUX_H ?=
ARCH     := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/' -e 's/ppc64le/powerpc/' -e 's/s390x/s390/')

# CFLAGS and LDFLAGS are the user's (optimisation, extra flags); the project's own come on top.
CFLAGS   ?= -O2 -g
ifeq ($(SANITIZE),1)
BUILD    := build-san
CFLAGS   += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS  += -fsanitize=address,undefined
endif
# One spelling per target: a BUILD inside this directory given as an absolute path (the tests pass
# $BUILD so) is made relative, or the dependency files -MMD writes would name targets this Makefile
# never asks for, and a changed header would not rebuild the objects that include it.
override BUILD := $(patsubst $(CURDIR)/%,%,$(abspath $(BUILD)))
FLAMED_CFLAGS := -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -DFLAMED_VERSION='"$(VERSION)"' \
            -Iinclude -Ilib -Idaemon -I$(BUILD)
LDLIBS   += -lbpf -ldw -lelf -lz -lsqlite3 -lmicrohttpd -lgnutls -lprotobuf-c -liberty -lpthread -lm

# lib/ is the library (libflamed.a: flamed, flamectl, the tests and the bench link it); daemon/ is
# flamed: DAEMON_SRCS are linked into it alone, the rest of daemon/ (the HTTP API, the dashboard, the
# fold cache, systemd notification) goes into libflamed-daemon.a for the unit tests too.
DAEMON_SRCS := daemon/main.c daemon/options.c daemon/sampler.c daemon/bpfload.c daemon/ingest.c
DAEMON_LIB_SRCS := $(filter-out $(DAEMON_SRCS),$(wildcard daemon/*.c daemon/*/*.c))
DAEMON_LIB_OBJS := $(DAEMON_LIB_SRCS:%.c=$(BUILD)/%.o) $(BUILD)/daemon/dashboard.o
LIB_SRCS := $(wildcard lib/*/*.c)
PROTO_SRCS := $(wildcard lib/*/*.proto)
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o) $(PROTO_SRCS:%.proto=$(BUILD)/%.pb-c.o)
WEB_SRCS := $(wildcard web/src/*) web/build.mjs web/package.json web/package-lock.json
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
INTEGRATION := $(sort $(wildcard tests/integration/test_*.sh))
SOAK := $(sort $(wildcard tests/soak/*.sh))

.PHONY: all run test soak bench install uninstall clean fuzz fuzz-build
.SECONDARY:
all: $(BUILD)/flamed $(BUILD)/flamectl

$(BUILD)/.deps: scripts/deps.sh
	@mkdir -p $(@D)
	@CLANG=$(CLANG) scripts/deps.sh build
	@touch $@
$(BUILD)/.deps-test: scripts/deps.sh
	@mkdir -p $(@D)
	@CLANG=$(CLANG) scripts/deps.sh test
	@touch $@

# BPF: vmlinux.h from this kernel's BTF (or VMLINUX_H=), CO-RE object, skeleton.
$(BUILD)/vmlinux.h: | $(BUILD)/.deps
ifneq ($(VMLINUX_H),)
	cp $(VMLINUX_H) $@
else
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@
endif

$(BUILD)/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) $(wildcard lib/*/*.bpf.h) include/profile.h include/python.h include/unwind.h $(BUILD)/vmlinux.h
	$(CLANG) -g -O2 -Wall -Werror -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -Iinclude -Ilib -I$(BUILD) -c $< -o $@.tmp
	$(LLVM_STRIP) -g $@.tmp -o $@ && rm -f $@.tmp   # keep BTF, drop DWARF

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $* > $@.tmp && mv $@.tmp $@

# User space. Objects depend on this Makefile, which holds their flags and include paths: a header
# that moved is named in the old .d files, and .SECONDARY keeps make from rebuilding on its absence.
$(BUILD)/%.o: %.c Makefile | $(BUILD)/.deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(FLAMED_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/daemon/sampler.o $(BUILD)/daemon/bpfload.o: $(BUILD)/profile.skel.h

# protobuf-c: lib/render/x.proto -> $(BUILD)/lib/render/x.pb-c.{c,h} (#include "lib/render/x.pb-c.h").
$(BUILD)/%.pb-c.c $(BUILD)/%.pb-c.h: %.proto | $(BUILD)/.deps
	@mkdir -p $(@D)
	protoc-c --c_out=$(BUILD) $<
$(BUILD)/%.pb-c.o: $(BUILD)/%.pb-c.c
	$(CC) $(CFLAGS) -std=gnu11 -I$(BUILD) -c $< -o $@
$(foreach p,$(PROTO_SRCS),$(eval $(BUILD)/$(p:.proto=.o): $(BUILD)/$(p:.proto=.pb-c.h)))

# The dashboard: npm packages pinned by web/package-lock.json, bundled by esbuild into one HTML file,
# embedded in the binary.
web/node_modules/.package-lock.json: web/package.json web/package-lock.json | $(BUILD)/.deps
	cd web && npm ci --no-audit --no-fund --engine-strict --loglevel=error
$(BUILD)/web/index.html: $(WEB_SRCS) web/node_modules/.package-lock.json
	cd web && node build.mjs $(abspath $@)
$(BUILD)/daemon/dashboard.o: daemon/dashboard.S $(BUILD)/web/index.html
	@mkdir -p $(@D)
	$(CC) -c -DDASHBOARD_HTML='"$(abspath $(BUILD)/web/index.html)"' $< -o $@

$(BUILD)/libflamed.a: $(LIB_OBJS)
	rm -f $@ && $(AR) rcs $@ $^
$(BUILD)/libflamed-daemon.a: $(DAEMON_LIB_OBJS)
	rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/flamed: $(DAEMON_SRCS:%.c=$(BUILD)/%.o) $(BUILD)/libflamed-daemon.a $(BUILD)/libflamed.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/flamectl: $(patsubst %.c,$(BUILD)/%.o,$(wildcard cli/*.c)) $(BUILD)/libflamed.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) -lcurl -ljson-c

$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(BUILD)/libflamed-daemon.a $(BUILD)/libflamed.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

run: all
	@if [ "$$(id -u)" -ne 0 ]; then echo "make run: the daemon loads BPF programs; run as root: sudo make run" >&2; exit 1; fi
	$(BUILD)/flamed --db $(CURDIR)/flamed.db $(FLAMED_ARGS)

test: all $(UNIT_BINS) | $(BUILD)/.deps-test
	BUILD=$(abspath $(BUILD)) SANITIZE=$(SANITIZE) tests/run.sh $(UNIT_BINS) $(INTEGRATION)

# Minutes, not seconds: kept out of make test.
soak: all | $(BUILD)/.deps-test
	BUILD=$(abspath $(BUILD)) tests/run.sh $(SOAK)

# Fuzzing: each tests/fuzz/fuzz_NAME.c is a libFuzzer target, linked against the daemon's sources built
# again with ASan, UBSan and coverage in $(BUILD)/fuzz/; its seeds are tests/fuzz/corpus/NAME/.
FUZZ_SECONDS ?= 60
FUZZ_CFLAGS := -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_OBJS := $(LIB_SRCS:%.c=$(BUILD)/fuzz/%.o) $(DAEMON_LIB_SRCS:%.c=$(BUILD)/fuzz/%.o) \
	     $(PROTO_SRCS:%.proto=$(BUILD)/fuzz/%.pb-c.o) $(BUILD)/daemon/dashboard.o

$(BUILD)/fuzz/%.o: %.c Makefile | $(BUILD)/.deps-test
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(FLAMED_CFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/fuzz/%.pb-c.o: $(BUILD)/%.pb-c.c | $(BUILD)/.deps-test
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -std=gnu11 -I$(BUILD) -c $< -o $@
$(foreach p,$(PROTO_SRCS),$(eval $(BUILD)/fuzz/$(p:.proto=.o): $(BUILD)/$(p:.proto=.pb-c.h)))
$(BUILD)/fuzz/libflamed.a: $(FUZZ_OBJS)
	rm -f $@ && $(AR) rcs $@ $^
$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(BUILD)/fuzz/libflamed.a
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer $(FLAMED_CFLAGS) -Itests/fuzz -MMD -MP -MF $@.d -MT $@ \
		-o $@ $< $(BUILD)/fuzz/libflamed.a $(LDLIBS)

fuzz-build: $(FUZZ_BINS)

# Runs each target on a copy of its seeds in $(BUILD)/fuzz/corpus/NAME/ (new inputs stay there), its
# output in $(BUILD)/fuzz/NAME.log; a crash's input goes to $(BUILD)/fuzz/crashes/ and fails make.
fuzz: fuzz-build
	@failed=0; mkdir -p $(BUILD)/fuzz/crashes; \
	for t in $(FUZZ_BINS:$(BUILD)/fuzz/fuzz_%=%); do \
		c=$(BUILD)/fuzz/corpus/$$t; log=$(BUILD)/fuzz/$$t.log; \
		mkdir -p $$c && cp -r tests/fuzz/corpus/$$t/. $$c/; \
		echo "fuzz $$t: $(FUZZ_SECONDS) s; new inputs go to $$c, output to $$log"; \
		if ! $(BUILD)/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=30 -print_final_stats=1 \
			-artifact_prefix=$(BUILD)/fuzz/crashes/$$t- $$c > $$log 2>&1; then \
			failed=1; tail -30 $$log; echo "fuzz $$t: FAILED: $$(grep -o 'written to .*' $$log)"; fi; \
		grep -E '^(Done|stat::average_exec_per_sec)' $$log | sed 's/^/    /'; \
	done; exit $$failed

# Benchmarks: the harness bench/run.sh and its programs in $(BUILD)/bench/. gen_history applies
# retention only when the store has store_prune.
BENCH_LINKED := $(BUILD)/bench/gen_history $(BUILD)/bench/query_bench
BENCH_BINS := $(BENCH_LINKED) $(BUILD)/bench/burn $(BUILD)/bench/storm
$(BUILD)/bench/gen_history.o: FLAMED_CFLAGS += $(if $(shell grep -s store_prune lib/store/store.h),-DHAVE_STORE_PRUNE)

bench: all $(BENCH_BINS)
	BUILD=$(abspath $(BUILD)) QUICK=$(QUICK) bench/run.sh

$(BUILD)/bench/storm: bench/storm.c | $(BUILD)/.deps
	@mkdir -p $(@D)
	$(CC) -O2 -g -Wall -Wextra -Werror -fno-omit-frame-pointer $< -o $@

$(BUILD)/bench/burn: bench/burn.c | $(BUILD)/.deps
	@mkdir -p $(@D)
	$(CLANG) -O2 -g -Wall -Wextra -Werror -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
		-fno-optimize-sibling-calls $< -o $@

$(BENCH_LINKED): $(BUILD)/bench/%: $(BUILD)/bench/%.o $(BUILD)/libflamed.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(UNITDIR)
	install -m 0755 $(BUILD)/flamed $(BUILD)/flamectl $(DESTDIR)$(PREFIX)/bin/
	sed 's|/usr/local|$(PREFIX)|g' systemd/flamed.service > $(DESTDIR)$(UNITDIR)/flamed.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/flamed.service
	install -d $(DESTDIR)$(PREFIX)/share/flamed
	sed 's|/usr/local|$(PREFIX)|g' systemd/flamed-https.conf > $(DESTDIR)$(PREFIX)/share/flamed/flamed-https.conf
	chmod 0644 $(DESTDIR)$(PREFIX)/share/flamed/flamed-https.conf

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/flamed $(DESTDIR)$(PREFIX)/bin/flamectl $(DESTDIR)$(UNITDIR)/flamed.service \
		$(DESTDIR)$(PREFIX)/share/flamed/flamed-https.conf

clean:
	rm -rf $(BUILD) web/node_modules

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
