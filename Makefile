# vnoise — one top-level Makefile (DESIGN.md layout). Outputs go under build/ (or build-<sanitizer>/).
#   make                  build build/vnoise-guest (static) and the benchmarks
#   make check            unit suites (Check) + integration tests (root: real eBPF, real injector)
#   make deps             install every build and test dependency with apt (idempotent)
#   make measure          measure this machine's noise for 10 s on every CPU
#   build/vnoise-host     the host daemon (dynamic: libvirt, libbpf); build/tests/vm/* the VM harness tools
#   make SANITIZE=address,undefined check    the same in build-san/ with sanitizers
#   make deb              Debian packages in build-deb/ (debian/)
#   make deadcode         exported symbols no binary uses, against tests/deadcode.allow (scripts/deadcode.sh)
#   make format / format-check,  V=1 shows commands
V ?= 0
ifeq ($(V),0)
Q := @
msg = @printf '  %-8s %s\n' '$(1)' '$(2)';
else
Q :=
msg =
endif

CC ?= gcc
CLANG ?= clang
BPFTOOL ?= bpftool
SANITIZE ?=
ifeq ($(SANITIZE),)
BUILD ?= build
else
BUILD ?= build-san
endif

CFLAGS ?= -O2 -g
# Include paths per binary: everything sees protocol/ and shared/; guest code adds -Iguest, host code -Ihost,
# benchmarks -Ibench, tests -Itests (pattern-specific below). Includes name the folder: "util/log.h".
CFLAGS += -std=gnu11 -Wall -Wextra -Wshadow -Wno-unused-parameter -D_GNU_SOURCE -pthread \
	  -Iprotocol -Ishared -I$(BUILD) -MMD -MP
LDLIBS_GUEST := -lbpf -lelf -lz -lm -lpthread
ifneq ($(SANITIZE),)
CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=$(SANITIZE)
GUEST_STATIC :=
else
GUEST_STATIC := -static
endif
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lrt -lm)
srcs = $(shell find $(1) -name '*.c' ! -name '*.bpf.c' 2>/dev/null | sort)

# shared/: libvnoise.a, only what both binaries link (docs/ARCHITECTURE.md).
LIB_SRCS := $(call srcs,shared)
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o)
LIB := $(BUILD)/libvnoise.a
# guest/: vnoise-guest (static) = guest/main.c + libvnoise-guest.a; the preload library is built apart.
PRELOAD_SRC := guest/mpi/preload.c
GUEST_SRCS := $(filter-out $(PRELOAD_SRC),$(call srcs,guest))
GUEST_OBJS := $(GUEST_SRCS:%.c=$(BUILD)/%.o)
GUEST_LIB := $(BUILD)/libvnoise-guest.a
BPF_SRCS := $(wildcard guest/bpf/*.bpf.c)
BPF_SKELS := $(BPF_SRCS:guest/bpf/%.bpf.c=$(BUILD)/%.skel.h)
# host/: vnoise-host = host/main.c + libvnoise-host.a.
HOST_SRCS := $(call srcs,host)
HOST_OBJS := $(HOST_SRCS:%.c=$(BUILD)/%.o)
HOST_LIB := $(BUILD)/libvnoise-host.a
HOST_BPF_SRCS := $(wildcard host/schedlog/*.bpf.c)
HOST_SKELS := $(HOST_BPF_SRCS:host/schedlog/%.bpf.c=$(BUILD)/%.skel.h)
# libxml2 (libvirt's own XML library) reads domain XML: host/libvirt/xmldoc.
XML_CFLAGS := $(shell pkg-config --cflags libxml-2.0)
XML_LIBS := $(shell pkg-config --libs libxml-2.0)
LDLIBS_HOST := -lvirt -lvirt-qemu -lbpf -lelf -lz -lm -lpthread -lpcap -lmicrohttpd -lncursesw -ltinfo -lsqlite3 -lsnappy -lcurl \
	       $(XML_LIBS)
# bench/lib/: what only the benchmarks and vnoise-bench use.
BENCH_LIB_SRCS := $(wildcard bench/lib/*.c)
BENCH_LIB := $(BUILD)/libvnoise-bench.a
VM_TOOLS := $(BUILD)/tests/vm/vmshd $(BUILD)/tests/vm/vmexec $(BUILD)/tests/vm/shmscribble \
	$(BUILD)/tests/vm/tcgwatch
PRELOAD := $(BUILD)/libvnoise-preload.so
TEST_TOOLS := $(BUILD)/tests/tools/ptload $(BUILD)/tests/tools/mpiloop $(BUILD)/tests/tools/udpcat \
	      $(BUILD)/tests/tools/udpsend \
	      $(BUILD)/tests/tools/nodesim $(BUILD)/tests/tools/dtlhostile \
	      $(BUILD)/tests/tools/streamhostile
# Unit suites mirror the tree: tests/unit/<folder>/check_<module>.c tests <folder>/<module>.c.
UNIT_SRCS := $(shell find tests/unit -name 'check_*.c' | sort)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/unit/%)
BENCH_SRCS := $(wildcard bench/*.c)
BENCH_BINS := $(BENCH_SRCS:bench/%.c=$(BUILD)/bench/%)

.DEFAULT_GOAL := all
# The version, from one place: VERSION, plus the git revision when built from git (README, docs/CLI.md).
VERSION := $(shell cat VERSION)
GITREV := $(shell git describe --always --dirty --exclude '*' 2>/dev/null)
$(BUILD)/vnoise_version.h: FORCE
	$(Q)mkdir -p $(@D)
	$(Q)printf '#define VNOISE_VERSION "%s"\n#define VNOISE_GITREV "%s"\n' '$(VERSION)' '$(GITREV)' >$@.tmp
	$(Q)cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@
$(BUILD)/shared/util/version.o: $(BUILD)/vnoise_version.h

.SECONDARY:
.PHONY: all check unit fuzz deps measure bench format format-check clean FORCE
all: $(BUILD)/vnoise-guest $(BUILD)/vnoise-host $(VM_TOOLS) $(BENCH_BINS) $(PRELOAD) $(TEST_TOOLS) \
     $(BUILD)/vnoise-bench

$(BUILD)/guest/%.o: CFLAGS += -Iguest
$(BUILD)/host/%.o: CFLAGS += -Ihost $(XML_CFLAGS)
$(BUILD)/bench/%.o: CFLAGS += -Ibench

$(BUILD)/%.o: %.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^
$(GUEST_LIB): $(filter-out $(BUILD)/guest/main.o,$(GUEST_OBJS))
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^
$(HOST_LIB): $(filter-out $(BUILD)/host/main.o,$(HOST_OBJS))
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^
$(BENCH_LIB): $(BENCH_LIB_SRCS:%.c=$(BUILD)/%.o)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

# eBPF programs: vmlinux.h from this machine's BTF, CO-RE object, skeleton (all into $(BUILD)).
$(BUILD)/vmlinux.h:
	$(call msg,BTF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

BPF_CFLAGS = -g -O2 -target bpf -D__TARGET_ARCH_x86 -Wall -Iprotocol -Ishared -I$(BUILD) -MMD -MP
$(BUILD)/guest/bpf/%.bpf.o: guest/bpf/%.bpf.c $(BUILD)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -Iguest -c $< -o $@

$(BUILD)/host/schedlog/%.bpf.o: host/schedlog/%.bpf.c $(BUILD)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -Ihost -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/host/schedlog/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

$(BUILD)/%.skel.h: $(BUILD)/guest/bpf/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

$(GUEST_OBJS): | $(BPF_SKELS)
$(HOST_OBJS): | $(HOST_SKELS)

$(BUILD)/vnoise-guest: $(BUILD)/guest/main.o $(GUEST_LIB) $(LIB)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $(GUEST_STATIC) -o $@ $^ $(LDLIBS_GUEST)

$(BUILD)/vnoise-host: $(BUILD)/host/main.o $(HOST_LIB) $(LIB)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS_HOST)

# The LD_PRELOAD library (guest/mpi/preload.c): position independent, with the sources it needs; only
# the wrappers are exported. mpi.h for the PMPI prototypes, but no libmpi: non-MPI programs load it too.
PRELOAD_DEPS := guest/mpi/appstat.c guest/mpi/pipeline.c guest/cluster/node_send.c guest/cluster/node.c \
		shared/attrib/classes.c shared/attrib/merge.c shared/attrib/gapsplit.c shared/util/bufout.c shared/util/outfile.c shared/util/secmem.c shared/format/datagram.c shared/util/sha256.c \
		shared/util/sha256_shani.c
$(PRELOAD): CFLAGS += -Iguest $(shell pkg-config --cflags ompi-c)
$(PRELOAD): $(PRELOAD_SRC) $(PRELOAD_DEPS)
	$(call msg,SO,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -fPIC -shared -fvisibility=hidden $(LDFLAGS) -o $@ $^ -ldl
# The MPI test kernel: mpicc adds MPI's include and library flags.
MPICC ?= mpicc
$(BUILD)/tests/tools/mpiloop: tests/tools/mpiloop.c
	$(call msg,MPICC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(MPICC) $(CFLAGS) $(LDFLAGS) -o $@ $<
# vnoise-bench: the collective noise detector and its sweep, an MPI program in its own directory.
VNB_SRCS := $(wildcard bench/vnoise-bench/*.c)
$(BUILD)/vnoise-bench: $(VNB_SRCS) $(BENCH_LIB) $(GUEST_LIB) $(LIB)
	$(call msg,MPICC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(MPICC) $(CFLAGS) -Ibench -Iguest $(LDFLAGS) -o $@ $^ -lm
# The simulated cluster node uses the real node module (guest/cluster/node).
$(BUILD)/tests/tools/nodesim: tests/tools/nodesim.c $(GUEST_LIB) $(LIB)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Iguest $(LDFLAGS) -o $@ $^ -lm
# The hostile DTL host and guest reader (tests/integration/dtl_hostile.sh builds it with sanitizers too).
$(BUILD)/tests/tools/dtlhostile: tests/tools/dtlhostile.c $(LIB)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB)
# A guest stream of valid records in a hostile shape, written into a domain's region from the host.
$(BUILD)/tests/tools/streamhostile: tests/tools/streamhostile.c $(LIB)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) -lpthread
$(BUILD)/tests/tools/%: tests/tools/%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $<

# VM harness tools: the guest's exec daemon is static (it runs in the busybox initramfs).
$(BUILD)/tests/vm/vmshd: tests/vm/vmshd.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $(GUEST_STATIC) -o $@ $<
$(BUILD)/tests/vm/vmexec: tests/vm/vmexec.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $<
$(BUILD)/tests/vm/tcgwatch: tests/vm/tcgwatch.c tests/vm/vmutil.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $<
$(BUILD)/tests/vm/shmscribble: tests/vm/shmscribble.c tests/shm_hostile.h $(LIB)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Itests $(LDFLAGS) -o $@ $< $(LIB)

# Unit suites: a suite links the library of its side of the tree and that side's system libraries.
UNIT_CFLAGS = $(CFLAGS) -Itests -Itests/unit
$(BUILD)/tests/unit/shared/%: tests/unit/shared/%.c $(LIB)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(UNIT_CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(CHECK_LIBS) -lm
# shared/bpf/ needs libbpf; its suite opens (never loads) a real BPF object, the guest kernel helper.
$(BUILD)/tests/unit/shared/bpf/%: tests/unit/shared/bpf/%.c $(LIB) $(BUILD)/guest/bpf/ktrace.bpf.o
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(UNIT_CFLAGS) -DBPFUTIL_TEST_OBJ='"$(abspath $(BUILD)/guest/bpf/ktrace.bpf.o)"' $(LDFLAGS) \
		-o $@ $< $(LIB) $(CHECK_LIBS) -lbpf -lelf -lz
$(BUILD)/tests/unit/guest/%: tests/unit/guest/%.c $(GUEST_LIB) $(LIB)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(UNIT_CFLAGS) -Iguest $(LDFLAGS) -o $@ $< $(GUEST_LIB) $(LIB) $(CHECK_LIBS) $(LDLIBS_GUEST)
$(BUILD)/tests/unit/host/%: tests/unit/host/%.c $(HOST_LIB) $(LIB)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(UNIT_CFLAGS) -Ihost $(XML_CFLAGS) $(LDFLAGS) -o $@ $< $(HOST_LIB) $(LIB) $(CHECK_LIBS) \
		$(LDLIBS_HOST)
# The collector's engine (clusteragg, clusterrot, clusterout) is tested with datagrams from the real node end
# (guest/cluster).
$(BUILD)/tests/unit/host/collect/check_cluster%: tests/unit/host/collect/check_cluster%.c $(HOST_LIB) \
						 $(GUEST_LIB) $(LIB)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(UNIT_CFLAGS) -Ihost -Iguest $(LDFLAGS) -o $@ $< $(HOST_LIB) $(GUEST_LIB) $(LIB) $(CHECK_LIBS) \
		$(LDLIBS_HOST)
$(BUILD)/tests/unit/bench/%: tests/unit/bench/%.c $(BENCH_LIB) $(LIB)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(UNIT_CFLAGS) -Ibench $(LDFLAGS) -o $@ $< $(BENCH_LIB) $(LIB) $(CHECK_LIBS) -lm

# Benchmarks: those of host or guest modules link that side's library.
HOST_BENCHES := $(addprefix $(BUILD)/bench/,clocksync_bench match_bench hostmetrics_bench remotewrite_bench store_bench \
					    regionguard_bench)
$(HOST_BENCHES): $(BUILD)/bench/%: bench/%.c $(HOST_LIB) $(LIB)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Ibench -Ihost $(LDFLAGS) -o $@ $< $(HOST_LIB) $(LIB) $(LDLIBS_HOST)
$(BUILD)/bench/dtl_responder_bench: bench/dtl_responder_bench.c $(GUEST_LIB) $(LIB)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Ibench -Iguest $(LDFLAGS) -o $@ $< $(GUEST_LIB) $(LIB) $(LDLIBS_GUEST)
$(BUILD)/bench/node_send_bench: bench/node_send_bench.c $(GUEST_LIB) $(LIB)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Ibench -Iguest $(LDFLAGS) -o $@ $< $(GUEST_LIB) $(LIB) $(LDLIBS_GUEST)
# The collector's engine fed by real node ends: both sides' modules.
$(BUILD)/bench/collect_bench: bench/collect_bench.c $(HOST_LIB) $(GUEST_LIB) $(LIB)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Ibench -Ihost -Iguest $(LDFLAGS) -o $@ $< $(HOST_LIB) $(GUEST_LIB) $(LIB) \
		$(LDLIBS_HOST)
$(BUILD)/bench/%: bench/%.c $(LIB)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Ibench $(LDFLAGS) -o $@ $< $(LIB) -lm

unit: $(UNIT_BINS)
	$(Q)VNOISE_UNIT_ONLY=1 tests/run-all.sh $(UNIT_BINS)

# Unit suites and integration tests, one summary line at the end. The hostile-guest test runs an
# ASan+UBSan vnoise-host (build-san/), built here by a nested make.
ifeq ($(SANITIZE),)
SAN_HOST := build-san/vnoise-host
$(SAN_HOST): FORCE
	$(Q)$(MAKE) --no-print-directory SANITIZE=address,undefined build-san/vnoise-host
endif
FORCE:
# The builds it needs run on every CPU (as `make -jN`), whatever make was started with.
CHECK_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
check:
	$(Q)$(MAKE) --no-print-directory -j$(CHECK_JOBS) all $(UNIT_BINS) $(SAN_HOST)
	$(Q)VNOISE_BUILD=$(BUILD) tests/run-all.sh $(UNIT_BINS)

# libFuzzer targets (clang): built with ASan+UBSan, outside $(BUILD); each names what it needs beyond the shared
# library, whose objects are compiled once for all of them (build-fuzz/libfuzz.a).
FUZZ_DIR := build-fuzz
FUZZ_COMMON := -g -O1 -std=gnu11 -D_GNU_SOURCE -Iprotocol -Ishared
FUZZ_CFLAGS := $(FUZZ_COMMON) -fsanitize=fuzzer,address,undefined
FUZZ_TARGETS := fuzz_recfile fuzz_qga fuzz_shm fuzz_dtl fuzz_datagram fuzz_collect fuzz_match fuzz_hostrec
$(FUZZ_DIR)/fuzz_qga: FUZZ_EXTRA :=
$(FUZZ_DIR)/fuzz_datagram: FUZZ_EXTRA := -Iguest guest/mpi/pipeline.c guest/mpi/appstat.c
$(FUZZ_DIR)/fuzz_collect: FUZZ_EXTRA := -Ihost host/collect/clusteragg.c host/collect/clusterrot.c \
				   host/collect/clusterout.c host/export/promfmt.c
$(FUZZ_DIR)/fuzz_match: FUZZ_EXTRA := -Ihost host/match/match.c
$(FUZZ_DIR)/fuzz_hostrec: FUZZ_EXTRA := -Ihost $(XML_CFLAGS) host/views/hostrec.c host/views/hostgaps.c \
				   host/views/hosthtml.c host/views/hostview.c host/engine/hostagg.c \
				   host/engine/hostbind.c host/match/matchview.c host/net/tapflow.c -lpcap
FUZZ_LIB_SRCS := $(filter-out shared/bpf/%,$(LIB_SRCS)) # the targets load no eBPF: no libbpf
FUZZ_LIB_OBJS := $(FUZZ_LIB_SRCS:%.c=$(FUZZ_DIR)/obj/%.o)
$(FUZZ_DIR)/obj/%.o: %.c
	$(call msg,FUZZCC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_COMMON) -fsanitize=fuzzer-no-link,address,undefined -MMD -MP -c -o $@ $<
-include $(FUZZ_LIB_OBJS:.o=.d)
$(FUZZ_DIR)/libfuzz.a: $(FUZZ_LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^
$(FUZZ_DIR)/%: tests/fuzz/%.c $(FUZZ_DIR)/libfuzz.a $(GUEST_SRCS) $(HOST_SRCS)
	$(call msg,FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_EXTRA) $(FUZZ_DIR)/libfuzz.a -lm
fuzz: $(addprefix $(FUZZ_DIR)/,$(FUZZ_TARGETS)) $(BUILD)/vnoise-guest
	$(Q)tests/fuzz/make_corpus.sh $(FUZZ_DIR)/corpus $(BUILD)/vnoise-guest
	$(Q)$(FUZZ_DIR)/fuzz_recfile -max_total_time=$${FUZZ_SECONDS:-60} -max_len=65536 $(FUZZ_DIR)/corpus
	$(Q)mkdir -p $(FUZZ_DIR)/corpus_qga
	$(Q)$(FUZZ_DIR)/fuzz_qga -max_total_time=$${FUZZ_SECONDS:-60} -max_len=70000 \
		-dict=tests/fuzz/qga.dict $(FUZZ_DIR)/corpus_qga
	$(Q)mkdir -p $(FUZZ_DIR)/corpus_shm
	$(Q)$(FUZZ_DIR)/fuzz_shm -max_total_time=$${FUZZ_SECONDS:-60} -max_len=20000 $(FUZZ_DIR)/corpus_shm
	$(Q)mkdir -p $(FUZZ_DIR)/corpus_dtl
	$(Q)$(FUZZ_DIR)/fuzz_dtl -max_total_time=$${FUZZ_SECONDS:-60} -max_len=20000 $(FUZZ_DIR)/corpus_dtl
	$(Q)mkdir -p $(FUZZ_DIR)/corpus_datagram
	$(Q)$(FUZZ_DIR)/fuzz_datagram -max_total_time=$${FUZZ_SECONDS:-60} -max_len=40000 $(FUZZ_DIR)/corpus_datagram
	$(Q)mkdir -p $(FUZZ_DIR)/corpus_collect
	$(Q)$(FUZZ_DIR)/fuzz_collect -max_total_time=$${FUZZ_SECONDS:-60} -max_len=20000 $(FUZZ_DIR)/corpus_collect
	$(Q)mkdir -p $(FUZZ_DIR)/corpus_match
	$(Q)$(FUZZ_DIR)/fuzz_match -max_total_time=$${FUZZ_SECONDS:-60} -max_len=20000 $(FUZZ_DIR)/corpus_match
	$(Q)tests/fuzz/make_corpus.sh --host $(FUZZ_DIR)/corpus_hostrec $(FUZZ_DIR)/fuzz_hostrec
	$(Q)$(FUZZ_DIR)/fuzz_hostrec -max_total_time=$${FUZZ_SECONDS:-60} -max_len=65536 $(FUZZ_DIR)/corpus_hostrec

# make deadcode: the symbols the libraries export that no product binary (make all: not the unit suites) links,
# checked against tests/deadcode.allow by scripts/deadcode.sh. The products are built again in $(DEADCODE_DIR)
# with one section per function and object, -O0 (no inlining hides a call) and the linker's garbage
# collection, so a binary holds exactly the functions and data reachable from its entry points (never with
# sanitizers, whatever SANITIZE says: its objects are built one way only).
DEADCODE_DIR ?= build-deadcode
.PHONY: deadcode
deadcode:
	$(Q)CFLAGS='-O0 -w -ffunction-sections -fdata-sections' LDFLAGS='-Wl,--gc-sections' \
		$(MAKE) --no-print-directory BUILD=$(DEADCODE_DIR) SANITIZE= all
	$(Q)scripts/deadcode.sh $(DEADCODE_DIR) tests/deadcode.allow

deps:
	$(Q)scripts/deps.sh

measure: $(BUILD)/vnoise-guest
	$(Q)$(BUILD)/vnoise-guest measure --cpus all --duration 10s

bench: all
	$(Q)VNOISE_BUILD=$(BUILD) bench/run.sh

FORMAT_SRCS = $(shell git ls-files '*.c' '*.h' 2>/dev/null)
format:
	$(Q)clang-format -i $(FORMAT_SRCS)
format-check:
	$(Q)clang-format --dry-run --Werror $(FORMAT_SRCS) && echo "format-check: clean"

clean:
	rm -rf build build-san build-fuzz build-deadcode


# make install / uninstall (PREFIX, DESTDIR; README "Install"). The units and the udev rule go where systemd
# and udev read them whatever PREFIX is; the units' /usr/sbin is rewritten to $(SBINDIR). install writes a
# manifest of the files and directories it created; uninstall removes those (directories only when empty).
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
LIBDIR ?= $(PREFIX)/lib
PKGLIBDIR ?= $(LIBDIR)/vnoise
MANDIR ?= $(PREFIX)/share/man
SYSCONFDIR ?= /etc
SYSTEMDUNITDIR ?= /lib/systemd/system
UDEVRULESDIR ?= /lib/udev/rules.d
INSTALL_MANIFEST = $(DESTDIR)$(PKGLIBDIR)/install-manifest
# SOURCE DIRECTORY MODE, one triple per file
INSTALL_FILES = $(BUILD)/vnoise-guest $(SBINDIR) 755 $(BUILD)/vnoise-host $(SBINDIR) 755 \
	$(BUILD)/vnoise-bench $(BINDIR) 755 $(PRELOAD) $(PKGLIBDIR) 644 \
	man/vnoise-guest.8 $(MANDIR)/man8 644 man/vnoise-host.8 $(MANDIR)/man8 644 \
	man/vnoise-bench.1 $(MANDIR)/man1 644 \
	contrib/systemd/vnoise-host.service $(SYSTEMDUNITDIR) 644 \
	contrib/systemd/vnoise-guest-agent.service $(SYSTEMDUNITDIR) 644 \
	contrib/udev/60-vnoise-guest-agent.rules $(UDEVRULESDIR) 644
# kept when they exist (the admin's options), removed by uninstall only when unchanged
INSTALL_CONFIG = contrib/default/vnoise-host contrib/default/vnoise-guest-agent
.PHONY: install uninstall
install: $(BUILD)/vnoise-guest $(BUILD)/vnoise-host $(BUILD)/vnoise-bench $(PRELOAD)
	$(Q)set -e; m=$$(mktemp); \
	mkdir -p "$(DESTDIR)/"; \
	mkd() { p=$$1; n=""; while [ "$$p" != / ] && [ ! -d "$(DESTDIR)$$p" ]; do n="$$p $$n"; p=$$(dirname "$$p"); done; \
		for d in $$n; do mkdir -m 755 "$(DESTDIR)$$d"; echo "d $$d" >>"$$m"; done; }; \
	set -- $(INSTALL_FILES); while [ $$# -gt 0 ]; do \
		mkd "$$2"; t="$$2/$$(basename "$$1")"; \
		case "$$1" in *.service) sed 's|/usr/sbin/|$(SBINDIR)/|g' "$$1" >"$(DESTDIR)$$t"; \
			chmod "$$3" "$(DESTDIR)$$t";; \
			*) install -m "$$3" "$$1" "$(DESTDIR)$$t";; esac; \
		echo "f $$t" >>"$$m"; printf '  %-8s %s\n' INSTALL "$(DESTDIR)$$t"; shift 3; done; \
	mkd "$(SYSCONFDIR)/default"; for c in $(INSTALL_CONFIG); do t="$(SYSCONFDIR)/default/$$(basename $$c)"; \
		if [ -e "$(DESTDIR)$$t" ]; then echo "  KEEP     $(DESTDIR)$$t (exists)"; continue; fi; \
		install -m 644 "$$c" "$(DESTDIR)$$t"; echo "c $$t $$c" >>"$$m"; \
		printf '  %-8s %s\n' INSTALL "$(DESTDIR)$$t"; done; \
	if [ -f "$(INSTALL_MANIFEST)" ]; then grep '^d ' "$(INSTALL_MANIFEST)" >>"$$m" || true; fi; \
	echo "f $(PKGLIBDIR)/install-manifest" >>"$$m"; sort -u "$$m" >"$(INSTALL_MANIFEST)"; rm -f "$$m"
uninstall:
	$(Q)set -e; m="$(INSTALL_MANIFEST)"; \
	if [ ! -f "$$m" ]; then echo "uninstall: no $$m: nothing installed with this DESTDIR and PREFIX"; \
		exit 0; fi; \
	list=$$(cat "$$m"); \
	while read -r k p src; do case "$$k" in \
		f) rm -f "$(DESTDIR)$$p";; \
		c) if cmp -s "$(DESTDIR)$$p" "$$src"; then rm -f "$(DESTDIR)$$p"; \
			elif [ -e "$(DESTDIR)$$p" ]; then echo "  KEEP     $(DESTDIR)$$p (changed)"; fi;; \
		esac; done <"$$m"; \
	printf '%s\n' "$$list" | grep '^d ' | cut -c3- | sort -r | while read -r d; do \
		rmdir "$(DESTDIR)$$d" 2>/dev/null || true; done; \
	rmdir "$(DESTDIR)$(PKGLIBDIR)" 2>/dev/null || true; echo "uninstall: done"

# make deb: the Debian packages (debian/: vnoise-host, vnoise-guest, vnoise-mpi) built by dpkg-buildpackage -b
# in a copy of the tree, $(DEB_DIR)/src (a package build cleans and writes its tree; the working tree is left
# alone). Output: $(DEB_DIR)/*.deb, .changes, .buildinfo; the log in $(DEB_DIR)/build.log, its tail on failure.
# No tests (nocheck), no -dbgsym packages, $(DEB_JOBS) jobs. The copy holds git's tracked and untracked
# (not ignored) files, or outside git every file but the build directories; $(DEB_DIR)/source.sha256, written
# when the build succeeded, is the hash of those files and the git revision (make -s deb-hash prints the
# working tree's: tests/integration/deb.sh reuses a build whose hash matches).
DEB_DIR ?= build-deb
DEB_JOBS ?= 2
DEB_FILES = { git ls-files -co --exclude-standard -z 2>/dev/null || find . \( -path './build*' -o -path ./.git \) \
	-prune -o -type f -print0; } | xargs -0 sh -c 'for f; do [ -f "$$f" ] && printf "%s\0" "$$f"; done' sh
DEB_HASH = { echo '$(GITREV)'; $(DEB_FILES) | sort -z | xargs -0 sha256sum; } | sha256sum | cut -c1-64
.PHONY: deb deb-hash
deb-hash:
	$(Q)$(DEB_HASH)
deb:
	$(Q)v=$$(dpkg-parsechangelog -S Version) || exit 1; [ "$$v" = "$(VERSION)" ] || \
		{ echo "deb: debian/changelog is at $$v but VERSION at $(VERSION): add an entry (dch -v $(VERSION))"; \
		exit 1; }
	$(Q)rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/src
	$(Q)$(DEB_FILES) | tar --null -T - -cf - | tar -xf - -C $(DEB_DIR)/src
	$(Q)$(DEB_HASH) >$(DEB_DIR)/source.sha256.new
	$(call msg,DPKG,$(DEB_DIR) (log: $(DEB_DIR)/build.log))
	$(Q)cd $(DEB_DIR)/src && VNOISE_GITREV='$(GITREV)' \
		DEB_BUILD_OPTIONS="nocheck noautodbgsym parallel=$(DEB_JOBS) $${DEB_BUILD_OPTIONS:-}" \
		dpkg-buildpackage -us -uc -b >../build.log 2>&1 || \
		{ echo "deb: dpkg-buildpackage failed; the end of $(DEB_DIR)/build.log:"; tail -30 ../build.log; exit 1; }
	$(Q)rm -rf $(DEB_DIR)/src && mv $(DEB_DIR)/source.sha256.new $(DEB_DIR)/source.sha256
	$(Q)for f in $(DEB_DIR)/*.deb; do printf '  %-8s %s\n' DEB "$$f"; done

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
