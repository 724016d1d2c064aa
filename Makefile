# flamed - one entry point: build, run, test, install.
# make            build build/flamed and build/flamectl (installs missing Debian packages)
# make run        build, then run the daemon in the foreground on ./flamed.db (root)
# make test       unit, integration (root, real BPF) tests; ends with "N passed, N failed"
# make test SANITIZE=1   the same, built with AddressSanitizer and UBSan in build-san/
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
FLAMED_CFLAGS := -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -DFLAMED_VERSION='"$(VERSION)"' \
            -Iinclude -Idaemon -I$(BUILD)
LDLIBS   += -lbpf -ldw -lelf -lz -lsqlite3 -lmicrohttpd -lprotobuf-c -lpthread -lm

LIB_SRCS := $(filter-out daemon/main.c daemon/sampler.c,$(wildcard daemon/*.c daemon/*/*.c))
PROTO_SRCS := $(wildcard daemon/*/*.proto)
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o) $(PROTO_SRCS:%.proto=$(BUILD)/%.pb-c.o) $(BUILD)/daemon/dashboard.o
WEB_SRCS := $(wildcard web/src/*) web/build.mjs web/package.json web/package-lock.json
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
INTEGRATION := $(sort $(wildcard tests/integration/test_*.sh))

.PHONY: all run test install uninstall clean
.SECONDARY:
all: $(BUILD)/flamed $(BUILD)/flamectl

$(BUILD)/.deps: scripts/deps.sh
	@mkdir -p $(@D)
	@scripts/deps.sh build
	@touch $@
$(BUILD)/.deps-test: scripts/deps.sh
	@mkdir -p $(@D)
	@scripts/deps.sh test
	@touch $@

# BPF: vmlinux.h from this kernel's BTF (or VMLINUX_H=), CO-RE object, skeleton.
$(BUILD)/vmlinux.h: | $(BUILD)/.deps
ifneq ($(VMLINUX_H),)
	cp $(VMLINUX_H) $@
else
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@
endif

$(BUILD)/%.bpf.o: bpf/%.bpf.c include/profile.h $(BUILD)/vmlinux.h
	$(CLANG) -g -O2 -Wall -Werror -target bpf -D__TARGET_ARCH_$(ARCH) -Iinclude -I$(BUILD) -c $< -o $@.tmp
	$(LLVM_STRIP) -g $@.tmp -o $@ && rm -f $@.tmp   # keep BTF, drop DWARF

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $* > $@.tmp && mv $@.tmp $@

# User space.
$(BUILD)/%.o: %.c | $(BUILD)/.deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(FLAMED_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/daemon/sampler.o: $(BUILD)/profile.skel.h

# protobuf-c: daemon/render/x.proto -> $(BUILD)/daemon/render/x.pb-c.{c,h} (#include "daemon/render/x.pb-c.h").
$(BUILD)/%.pb-c.c $(BUILD)/%.pb-c.h: %.proto | $(BUILD)/.deps
	@mkdir -p $(@D)
	protoc-c --c_out=$(BUILD) $<
$(BUILD)/%.pb-c.o: $(BUILD)/%.pb-c.c
	$(CC) $(CFLAGS) -std=gnu11 -I$(BUILD) -c $< -o $@
$(foreach p,$(PROTO_SRCS),$(eval $(BUILD)/$(p:.proto=.o): $(BUILD)/$(p:.proto=.pb-c.h)))

# The dashboard: npm packages pinned by web/package-lock.json, bundled by esbuild into one HTML file,
# embedded in the binary.
web/node_modules/.package-lock.json: web/package.json web/package-lock.json | $(BUILD)/.deps
	cd web && npm ci --no-audit --no-fund --loglevel=error
$(BUILD)/web/index.html: $(WEB_SRCS) web/node_modules/.package-lock.json
	cd web && node build.mjs $(abspath $@)
$(BUILD)/daemon/dashboard.o: daemon/dashboard.S $(BUILD)/web/index.html
	@mkdir -p $(@D)
	$(CC) -c -DDASHBOARD_HTML='"$(abspath $(BUILD)/web/index.html)"' $< -o $@

$(BUILD)/libflamed.a: $(LIB_OBJS)
	$(AR) rcs $@ $^

$(BUILD)/flamed: $(BUILD)/daemon/main.o $(BUILD)/daemon/sampler.o $(BUILD)/libflamed.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/flamectl: $(patsubst %.c,$(BUILD)/%.o,$(wildcard cli/*.c)) $(BUILD)/libflamed.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(BUILD)/libflamed.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

run: all
	@if [ "$$(id -u)" -ne 0 ]; then echo "make run: the daemon loads BPF programs; run as root: sudo make run" >&2; exit 1; fi
	$(BUILD)/flamed --db $(CURDIR)/flamed.db

test: all $(UNIT_BINS) | $(BUILD)/.deps-test
	BUILD=$(abspath $(BUILD)) tests/run.sh $(UNIT_BINS) $(INTEGRATION)

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(UNITDIR)
	install -m 0755 $(BUILD)/flamed $(BUILD)/flamectl $(DESTDIR)$(PREFIX)/bin/
	sed 's|/usr/local|$(PREFIX)|g' systemd/flamed.service > $(DESTDIR)$(UNITDIR)/flamed.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/flamed.service

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/flamed $(DESTDIR)$(PREFIX)/bin/flamectl $(DESTDIR)$(UNITDIR)/flamed.service

clean:
	rm -rf $(BUILD) web/node_modules

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
