# vnoise — one top-level Makefile (DESIGN.md layout). Outputs go under build/ (or build-<sanitizer>/).
#   make                  build build/vnoise-guest (static) and the benchmarks
#   make check            unit suites (Check) + integration tests (root: real eBPF, real injector)
#   make deps             install every build and test dependency with apt (idempotent)
#   make measure          measure this machine's noise for 10 s on every CPU
#   build/vnoise-host     the host daemon (dynamic: libvirt, libbpf); build/tests/vm/* the VM harness tools
#   make SANITIZE=address,undefined check    the same in build-san/ with sanitizers
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
CFLAGS += -std=gnu11 -Wall -Wextra -Wshadow -Wno-unused-parameter -D_GNU_SOURCE -pthread \
	  -Iprotocol -Ishared -Iguest -I$(BUILD) -MMD -MP
LDLIBS_GUEST := -lbpf -lelf -lz -lm -lpthread
ifneq ($(SANITIZE),)
CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=$(SANITIZE)
GUEST_STATIC :=
else
GUEST_STATIC := -static
endif
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lrt -lm)

LIB_SRCS := $(wildcard shared/*.c)
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o)
LIB := $(BUILD)/libvnoise.a
BPF_SRCS := $(wildcard guest/*.bpf.c)
BPF_SKELS := $(BPF_SRCS:guest/%.bpf.c=$(BUILD)/%.skel.h)
GUEST_SRCS := $(filter-out %.bpf.c,$(wildcard guest/*.c))
GUEST_OBJS := $(GUEST_SRCS:%.c=$(BUILD)/%.o)
HOST_BPF_SRCS := $(wildcard host/*.bpf.c)
HOST_SKELS := $(HOST_BPF_SRCS:host/%.bpf.c=$(BUILD)/%.skel.h)
HOST_SRCS := $(filter-out %.bpf.c,$(wildcard host/*.c))
HOST_OBJS := $(HOST_SRCS:%.c=$(BUILD)/%.o)
LDLIBS_HOST := -lvirt -lvirt-qemu -lbpf -lelf -lz -lm -lpthread -lpcap -lmicrohttpd
VM_TOOLS := $(BUILD)/tests/vm/vmshd $(BUILD)/tests/vm/vmexec $(BUILD)/tests/vm/shmscribble
PRELOAD := $(BUILD)/libvnoise-preload.so
TEST_TOOLS := $(BUILD)/tests/tools/ptload $(BUILD)/tests/tools/mpiloop $(BUILD)/tests/tools/udpcat \
	      $(BUILD)/tests/tools/udpsend \
	      $(BUILD)/tests/tools/nodesim
UNIT_SRCS := $(wildcard tests/unit/check_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
BENCH_SRCS := $(wildcard bench/*.c)
BENCH_BINS := $(BENCH_SRCS:bench/%.c=$(BUILD)/bench/%)

.SECONDARY:
.PHONY: all check unit fuzz deps measure bench format format-check clean FORCE
all: $(BUILD)/vnoise-guest $(BUILD)/vnoise-host $(VM_TOOLS) $(BENCH_BINS) $(PRELOAD) $(TEST_TOOLS) \
     $(BUILD)/vnoise-bench

$(BUILD)/%.o: %.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

# eBPF kernel helper: vmlinux.h from this machine's BTF, CO-RE object, skeleton (all into $(BUILD)).
$(BUILD)/vmlinux.h:
	$(call msg,BTF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(BUILD)/%.bpf.o: guest/%.bpf.c $(BUILD)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_x86 -Wall -Iprotocol -Iguest -I$(BUILD) \
		-MMD -MP -c $< -o $@

$(BUILD)/host/%.bpf.o: host/%.bpf.c $(BUILD)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_x86 -Wall -Iprotocol -Ihost -I$(BUILD) \
		-MMD -MP -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/host/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

$(GUEST_OBJS): | $(BPF_SKELS)

$(BUILD)/vnoise-guest: $(GUEST_OBJS) $(LIB)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $(GUEST_STATIC) -o $@ $(GUEST_OBJS) $(LIB) $(LDLIBS_GUEST)

$(HOST_OBJS): CFLAGS += -Ihost
$(HOST_OBJS): | $(HOST_SKELS)

$(BUILD)/vnoise-host: $(HOST_OBJS) $(LIB)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(HOST_OBJS) $(LIB) $(LDLIBS_HOST)

# The LD_PRELOAD library (guest/preload/): position independent, with the shared sources it needs; only
# the wrappers are exported. mpi.h for the PMPI prototypes, but no libmpi: non-MPI programs load it too.
$(PRELOAD): CFLAGS += $(shell pkg-config --cflags ompi-c)
$(PRELOAD): guest/preload/preload.c shared/appstat.c shared/ivpipe.c shared/merge.c shared/bufout.c \
	    shared/ivsend.c shared/vnnode.c shared/vnreport.c shared/sha256.c shared/sha256_shani.c \
	    shared/appstat.h shared/bufout.h shared/ivsend.h shared/vnnode.h shared/vnreport.h \
	    shared/ivpipe.h shared/merge.h shared/tgtdiff.h protocol/app.h
	$(call msg,SO,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -fPIC -shared -fvisibility=hidden $(LDFLAGS) -o $@ $(filter %.c,$^) -ldl
# The MPI test kernel: mpicc adds MPI's include and library flags.
MPICC ?= mpicc
$(BUILD)/tests/tools/mpiloop: tests/tools/mpiloop.c
	$(call msg,MPICC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(MPICC) $(CFLAGS) $(LDFLAGS) -o $@ $<
# vnoise-bench (issue 6): the collective noise detector and its sweep, an MPI program in its own directory
# (not caught by the bench/*.c rule).
VNB_SRCS := $(wildcard bench/vnoise-bench/*.c)
$(BUILD)/vnoise-bench: $(VNB_SRCS) bench/vnoise-bench/vnbench.h $(LIB)
	$(call msg,MPICC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(MPICC) $(CFLAGS) $(LDFLAGS) -o $@ $(VNB_SRCS) $(LIB) -lm
# The simulated cluster node uses the real node module (shared/vnnode).
$(BUILD)/tests/tools/nodesim: tests/tools/nodesim.c $(LIB)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) -lm
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
$(BUILD)/tests/vm/shmscribble: tests/vm/shmscribble.c tests/shm_hostile.h $(LIB)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB)

# Unit suites of host modules: the module's object and its libraries on top of the generic rule.
$(BUILD)/tests/check_pcapio: tests/unit/check_pcapio.c $(BUILD)/host/pcapio.o $(LIB)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Ihost $(LDFLAGS) -o $@ $< $(BUILD)/host/pcapio.o $(LIB) $(CHECK_LIBS) -lpcap -lm

$(BUILD)/tests/check_tapflow: tests/unit/check_tapflow.c $(BUILD)/host/tapflow.o $(LIB)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Ihost $(LDFLAGS) -o $@ $< $(BUILD)/host/tapflow.o $(LIB) $(CHECK_LIBS) -lpcap -lm

$(BUILD)/tests/check_httpd: tests/unit/check_httpd.c $(BUILD)/host/httpd.o $(LIB)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Ihost $(LDFLAGS) -o $@ $< $(BUILD)/host/httpd.o $(LIB) $(CHECK_LIBS) -lmicrohttpd -lm

$(BUILD)/tests/check_cstore: tests/unit/check_cstore.c $(BUILD)/host/cstore.o $(LIB)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Ihost $(LDFLAGS) -o $@ $< $(BUILD)/host/cstore.o $(LIB) $(CHECK_LIBS) -lm

COLLECT_OBJS := $(addprefix $(BUILD)/host/,collect.o cstore.o httpd.o pcapio.o)
$(BUILD)/tests/check_collect: tests/unit/check_collect.c $(COLLECT_OBJS) $(LIB)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Ihost $(LDFLAGS) -o $@ $< $(COLLECT_OBJS) $(LIB) $(CHECK_LIBS) -lpcap \
		-lmicrohttpd -lm

$(BUILD)/tests/%: tests/unit/%.c $(LIB)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(CHECK_LIBS) -lm

# The collector's engine benchmark links the host module it measures (host/cstore).
$(BUILD)/bench/collect_bench: bench/collect_bench.c $(BUILD)/host/cstore.o $(LIB)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Ihost $(LDFLAGS) -o $@ $< $(BUILD)/host/cstore.o $(LIB) -lm

$(BUILD)/bench/%: bench/%.c $(LIB)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) -lm

unit: $(UNIT_BINS)
	$(Q)VNOISE_UNIT_ONLY=1 tests/run-all.sh $(UNIT_BINS)

# Unit suites and integration tests, one summary line at the end. The hostile-guest test runs an
# ASan+UBSan vnoise-host (build-san/), built here by a nested make.
ifeq ($(SANITIZE),)
SAN_HOST := build-san/vnoise-host
$(SAN_HOST): FORCE
	$(Q)$(MAKE) --no-print-directory SANITIZE=address,undefined build-san/vnoise-host
FORCE:
endif
check: all $(UNIT_BINS) $(SAN_HOST)
	$(Q)VNOISE_BUILD=$(BUILD) tests/run-all.sh $(UNIT_BINS)

# libFuzzer targets (clang): built against the shared sources with ASan+UBSan, outside $(BUILD).
FUZZ_DIR := build-fuzz
FUZZ_CFLAGS := -g -O1 -std=gnu11 -D_GNU_SOURCE -Iprotocol -Ishared -fsanitize=fuzzer,address,undefined
$(FUZZ_DIR)/fuzz_collect: tests/fuzz/fuzz_collect.c host/cstore.c $(LIB_SRCS)
	$(call msg,FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -Ihost -o $@ $< host/cstore.c $(LIB_SRCS) -lm
$(FUZZ_DIR)/%: tests/fuzz/%.c $(LIB_SRCS)
	$(call msg,FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -o $@ $< $(LIB_SRCS) -lm
fuzz: $(FUZZ_DIR)/fuzz_report $(FUZZ_DIR)/fuzz_qga $(FUZZ_DIR)/fuzz_shm $(FUZZ_DIR)/fuzz_vnreport \
      $(FUZZ_DIR)/fuzz_collect \
      $(BUILD)/vnoise-guest
	$(Q)tests/fuzz/make_corpus.sh $(FUZZ_DIR)/corpus $(BUILD)/vnoise-guest
	$(Q)$(FUZZ_DIR)/fuzz_report -max_total_time=$${FUZZ_SECONDS:-60} -max_len=65536 $(FUZZ_DIR)/corpus
	$(Q)mkdir -p $(FUZZ_DIR)/corpus_qga
	$(Q)$(FUZZ_DIR)/fuzz_qga -max_total_time=$${FUZZ_SECONDS:-60} -max_len=70000 \
		-dict=tests/fuzz/qga.dict $(FUZZ_DIR)/corpus_qga
	$(Q)mkdir -p $(FUZZ_DIR)/corpus_shm
	$(Q)$(FUZZ_DIR)/fuzz_shm -max_total_time=$${FUZZ_SECONDS:-60} -max_len=20000 $(FUZZ_DIR)/corpus_shm
	$(Q)mkdir -p $(FUZZ_DIR)/corpus_vnreport
	$(Q)$(FUZZ_DIR)/fuzz_vnreport -max_total_time=$${FUZZ_SECONDS:-60} -max_len=40000 $(FUZZ_DIR)/corpus_vnreport
	$(Q)mkdir -p $(FUZZ_DIR)/corpus_collect
	$(Q)$(FUZZ_DIR)/fuzz_collect -max_total_time=$${FUZZ_SECONDS:-60} -max_len=20000 $(FUZZ_DIR)/corpus_collect

deps:
	$(Q)scripts/deps.sh

measure: $(BUILD)/vnoise-guest
	$(Q)$(BUILD)/vnoise-guest measure --cpus all --duration 10

bench: all
	$(Q)VNOISE_BUILD=$(BUILD) bench/run.sh

FORMAT_SRCS = $(shell git ls-files '*.c' '*.h' 2>/dev/null)
format:
	$(Q)clang-format -i $(FORMAT_SRCS)
format-check:
	$(Q)clang-format --dry-run --Werror $(FORMAT_SRCS) && echo "format-check: clean"

clean:
	rm -rf build build-san build-fuzz

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
