/* python.h - CPython frames in user stacks, shared by bpf/profile.bpf.c and the daemon (fixed-size
 * types only).
 *
 * Where a user stack walk meets a native frame in the interpreter's eval loop
 * (_PyEval_EvalFrameDefault, or its .cold part), the BPF program writes the Python frames that call of
 * the eval loop runs in its place, read from the sampled thread's own thread state. The daemon finds
 * each process's interpreter, fills a struct py_proc for it, and names the frames afterwards. */
#ifndef FLAMED_PYTHON_H
#define FLAMED_PYTHON_H

/* A Python frame in a stack, in place of an address: bits 63-60 are PY_FRAME_TAG (no user address,
 * below 2^47, nor kernel one, 0xffff..., has them), bits 59-16 the code object's address / 8 (code
 * objects are 8-byte aligned user addresses), bits 15-0 the instruction being run: its index in code
 * units (2 bytes) from the code's first instruction, PY_INSTR_UNKNOWN when not known. */
#define PY_FRAME_TAG 0x5ULL
#define PY_CODE_BITS 44
#define PY_CODE_MASK ((1ULL << PY_CODE_BITS) - 1)
#define PY_INSTR_UNKNOWN 0xffffu
#define PY_FRAME(code, instr) \
	((PY_FRAME_TAG << 60) | ((((__u64)(code)) >> 3) & PY_CODE_MASK) << 16 | ((__u64)(instr) & 0xffff))
#define PY_IS_FRAME(ip) (((__u64)(ip) >> 60) == PY_FRAME_TAG)
#define PY_FRAME_CODE(ip) ((((__u64)(ip) >> 16) & PY_CODE_MASK) << 3)
#define PY_FRAME_INSTR(ip) ((unsigned)((__u64)(ip) & 0xffff))

/* How far above an eval-loop call's frame (its CFA) the entry frame of a caller's may lie: the C
 * stack's usual limit (see shim_check in bpf/profile.bpf.c). */
#define PY_SHIM_REACH (8ULL << 20)

/* How an eval-loop call maps to Python frames, by interpreter version. */
enum py_walk_kind {
	PY_WALK_NONE = 0,
	PY_WALK_OBJECTS = 1, /* 3.8-3.10: each call runs one PyFrameObject (f_back links them) */
	PY_WALK_ENTRY = 2,   /* 3.11: a call runs frames up to the one marked is_entry */
	PY_WALK_SHIM = 3,    /* 3.12+: a call runs frames up to a shim frame owned by the C stack */
};

#define PY_NO_OFFSET 0xffffu

/* Byte offsets into the interpreter's structures (x86-64), from its version. */
struct py_offsets {
	__u16 runtime_interp_head; /* _PyRuntime.interpreters.head */
	__u16 interp_tstate_head;  /* PyInterpreterState's first thread state (tstate_head, threads.head) */
	__u16 tstate_next;         /* PyThreadState.next */
	__u16 tstate_thread_id;    /* PyThreadState.thread_id: pthread_self(), the thread pointer (fsbase) */
	__u16 tstate_frame;        /* PyThreadState.frame (3.8-3.10), .cframe (3.11, 3.12), .current_frame */
	__u16 cframe_frame;        /* _PyCFrame.current_frame (3.11, 3.12); PY_NO_OFFSET: no cframe */
	__u16 tstate_base_frame;   /* PyThreadState.base_frame (3.15+), the sentinel the chain ends in;
				    * PY_NO_OFFSET: none */
	__u16 frame_code;          /* the frame's code object: f_code, f_executable (3.13+; tagged in its low
				    * two bits from 3.14) */
	__u16 frame_back;          /* the caller's frame: f_back, previous (3.11+) */
	__u16 frame_instr;         /* f_lasti (int, 3.8-3.10), prev_instr or instr_ptr (pointer, 3.11+) */
	__u16 frame_entry;         /* 3.11: is_entry (byte); else PY_NO_OFFSET */
	__u16 frame_owner;         /* 3.12+: owner (byte); else PY_NO_OFFSET */
	__u16 code_first_instr;    /* 3.11+: co_code_adaptive, the code's first instruction */
	__u8 walk;                 /* enum py_walk_kind */
	__u8 owner_cstack;         /* PY_WALK_SHIM: owners from this value up (3) mark a shim, entry or
				    * base frame, which ends an eval-loop call's frames */
	__u8 lasti_bytes;          /* f_lasti counts bytes (3.8, 3.9), not code units (3.10) */
	__u8 pad[3];
};

/* Bytes of a frame read at once: every field above lies in them (f_lasti of 3.8/3.9 ends at 108). */
#define PY_FRAME_READ 112
/* Bytes of process memory read at once around a frame (3.11+): the page it lies in, where the frames of
 * its callers, pushed before it on the thread's data stack, mostly lie too; they are taken from it
 * without a read of their own. */
#define PY_WIN 4096
/* Bytes of a thread state read at once: next, thread_id and the frame field lie in them. */
#define PY_TSTATE_READ 192

/* A process's interpreter, in the py_procs map under its pid; written by the daemon. */
struct py_proc {
	__u64 token;            /* the process_event.token of the image this was read for */
	__u64 runtime;          /* address of _PyRuntime in the process */
	__u64 eval_start[2];    /* _PyEval_EvalFrameDefault and its .cold part: [start, end) in the */
	__u64 eval_end[2];      /* process (an empty range when there is no cold part) */
	__u32 version;          /* major << 16 | minor << 8 | micro (micro 0 when not known) */
	__u8 tramp_cfa;         /* -X perf trampolines: CFA = rsp + tramp_cfa at their call's return
				 * address; 0: none known */
	__u8 tramp_rbp_saved;   /* the trampoline saved rbp at CFA - 16 */
	__u16 max_frames;       /* Python frames written per stack at most */
	struct py_offsets off;
};

/* A thread's thread state, in the py_threads map under its tid; found by the BPF program. */
struct py_thread {
	__u64 tstate;     /* 0: none found at checked_ns */
	__u64 checked_ns; /* when the thread list was last walked for it (negative answers expire) */
	__u64 token;      /* py_proc.token it was found for */
};

#endif
