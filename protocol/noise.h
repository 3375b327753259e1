/* SPDX-License-Identifier: MIT */
/*
 * vnoise noise records: the fixed-size structs that the eBPF kernel helper, the sampler threads, the merge
 * engine and the record files exchange. This header is an ABI (DESIGN.md, protocol/README.md): fixed-width
 * types, explicit padding, units in names, sizes asserted. It is included by BPF code (after vmlinux.h) and
 * by user space.
 *
 * Time base: CLOCK_MONOTONIC nanoseconds of the machine that produced the record (bpf_ktime_get_ns()).
 */
#ifndef VNOISE_NOISE_H
#define VNOISE_NOISE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Noise classes. VN_CLASS_NONE as a parent means "the sampler itself" (nothing to subtract from). */
enum vn_class {
	VN_CLASS_NONE = 0,
	VN_CLASS_NMI = 1,
	VN_CLASS_IRQ = 2,
	VN_CLASS_SOFTIRQ = 3,
	VN_CLASS_THREAD = 4,
	VN_CLASS_HCALL = 5,
	VN_CLASS_STEAL = 6,
	VN_CLASS_UNEXPLAINED = 7,
	VN_CLASS_MAX = 8,
};

/*
 * Hypervisor classes: what the host says a vCPU was doing when it was not running guest code. The split
 * of a gap takes them out of the time the guest cannot explain (STEAL, UNEXPLAINED); what no host cause
 * explains either is the residual hw. Every wire and file that carries them keeps these values: the
 * host's HOST_MATCH/MSRC records (protocol/host.h), the MPI journal's hyp_ns[] (protocol/app.h), the
 * record file's DTL spans (protocol/record.h) and the report datagram's cls, offset by
 * VN_REPORT_CLS_HYP_BASE (protocol/cluster.h). Names: shared/attrib/classes.
 */
enum vn_hclass {
	VN_HCLASS_HOST_PREEMPT = 0, /* "host_preempt": another host task ran in the vCPU's place */
	VN_HCLASS_HOST_WAIT = 1, /* "host_wait": the vCPU thread was out and nothing ran for it */
	VN_HCLASS_VMEXIT = 2, /* "vmexit": VM exits (per-period aggregates, apportioned) */
	VN_HCLASS_HOST_IRQ = 3, /* "host_irq": host IRQs while the vCPU ran (idem) */
	VN_HCLASS_MAX = 4, /* the classes; arrays by class on a wire have this many entries */
};
/* The residual of a split ("hw"): the index after the classes in arrays that also carry it. */
#define VN_HCLASS_HW VN_HCLASS_MAX
#define VN_HCLASS_PARTS (VN_HCLASS_MAX + 1) /* the classes and hw */
_Static_assert(VN_HCLASS_HOST_PREEMPT == 0 && VN_HCLASS_HOST_WAIT == 1 && VN_HCLASS_VMEXIT == 2 &&
		   VN_HCLASS_HOST_IRQ == 3 && VN_HCLASS_MAX == 4,
	       "enum vn_hclass is ABI");

/*
 * Event ids by class:
 *  IRQ:     device interrupt number (irq_handler_entry), or VN_VEC_BASE + enum vn_vec for x86 vector
 *           handlers (irq_vectors tracepoints), which irq_handler_entry does not show.
 *  SOFTIRQ: softirq vector number (HI=0 .. RCU=9).
 *  THREAD:  pid (kernel tid) of the task; comm holds its name.
 *  HCALL:   enum vn_hcall (the guest kernel's KVM hypercall wrapper).
 *  NMI:     0.
 *  STEAL:   0. A steal event is an observation: net_ns of hypervisor steal happened on the CPU while the
 *           sampler (no guest event) ran, somewhere in [start_ns, end_ns).
 */
#define VN_VEC_BASE 0x10000u
enum vn_vec {
	VN_VEC_LOCAL_TIMER = 0,
	VN_VEC_RESCHEDULE = 1,
	VN_VEC_CALL_FUNCTION = 2,
	VN_VEC_CALL_FUNCTION_SINGLE = 3,
	VN_VEC_IRQ_WORK = 4,
	VN_VEC_X86_PLATFORM_IPI = 5,
	VN_VEC_SPURIOUS_APIC = 6,
	VN_VEC_ERROR_APIC = 7,
	VN_VEC_THERMAL_APIC = 8,
	VN_VEC_MAX = 9,
};

enum vn_hcall {
	VN_HCALL_SEND_IPI_MASK = 0,
	VN_HCALL_SEND_IPI_MASK_ALLBUTSELF = 1,
	VN_HCALL_SEND_IPI_MASK_RAW = 2, /* __send_ipi_mask */
	VN_HCALL_KICK_CPU = 3,
	VN_HCALL_FLUSH_TLB_MULTI = 4,
	VN_HCALL_SCHED_YIELD = 5,
	VN_HCALL_SMP_SEND_CALL_FUNC_IPI = 6,
	VN_HCALL_WAIT = 7,
	VN_HCALL_MAX = 8,
};

/* vn_event.flags */
#define VN_EVF_TRUNCATED 0x01 /* net_ns or steal_ns saturated at UINT32_MAX */
#define VN_EVF_DESYNC 0x02 /* nesting stack was out of step; event closed by a later switch */

#define VN_COMM_LEN 16

/*
 * One interference event with its net duration (osnoise semantics): net_ns = (end_ns - start_ns) minus the
 * wall time of the events nested in it minus the hypervisor steal that happened inside it (steal_ns, own part
 * only). parent_cls/parent_id name the event it was nested in (VN_CLASS_NONE: it interrupted the sampler or
 * ran at top level), so a consumer can compute exact net time over any window by adding each event's overlap
 * and subtracting it from its parent.
 */
struct vn_event {
	__u64 start_ns;
	__u64 end_ns;
	__u32 net_ns;
	__u32 steal_ns;
	__u32 id;
	__u32 parent_id;
	__u16 cpu;
	__u8 cls; /* enum vn_class */
	__u8 parent_cls; /* enum vn_class */
	__u8 depth; /* 0 = top level */
	__u8 flags; /* VN_EVF_* */
	__u8 pad[2];
	char comm[VN_COMM_LEN]; /* THREAD only, NUL-padded */
};
_Static_assert(sizeof(struct vn_event) == 56, "vn_event is ABI");

/* vn_sample.kind */
enum vn_sample_kind {
	VN_SAMPLE_GAP = 0, /* a gap above threshold seen by the sampler: noise */
	VN_SAMPLE_WINDOW = 1, /* the sampler ran (measured) during [start_ns, end_ns): runtime */
};

/* One sampler record. GAPs of a CPU are in time order and never overlap. */
struct vn_sample {
	__u64 start_ns;
	__u64 end_ns;
	__u16 cpu;
	__u8 kind; /* enum vn_sample_kind */
	__u8 pad[5];
};
_Static_assert(sizeof(struct vn_sample) == 24, "vn_sample is ABI");

#endif
