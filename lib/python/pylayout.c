/* pylayout.c - CPython's structure offsets: compiled in by minor version for 3.8 to 3.12 (read from each
 * version's debug info), read from the interpreter's own _Py_DebugOffsets from 3.13 on. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "python/pylayout.h"

#define NO PY_NO_OFFSET

/* 3.8 to 3.10: one PyFrameObject per eval-loop call; the thread state points at the innermost. */
#define OBJECTS_310(lasti, lasti_in_bytes)                                                          \
	{ .runtime_interp_head = 32, .interp_tstate_head = 8, .tstate_next = 8, .tstate_thread_id = 176, \
	  .tstate_frame = 24, .cframe_frame = NO, .tstate_base_frame = NO, .frame_code = 32, .frame_back = 24, .frame_instr = (lasti), \
	  .frame_entry = NO, .frame_owner = NO, .code_first_instr = NO, .walk = PY_WALK_OBJECTS,           \
	  .lasti_bytes = (lasti_in_bytes) }

#define CODE_310                                                                                     \
	.code_filename = 104, .code_name = 112, .code_qualname = NO, .code_firstlineno = 40,           \
	.code_linetable = 120, .code_size = 128
#define CODE_311(firstlineno)                                                                         \
	.code_filename = 112, .code_name = 120, .code_qualname = 128, .code_firstlineno = (firstlineno), \
	.code_linetable = 136, .code_size = 144, .lines = PY_LINES_LOCATIONS
#define STR_311 .str_length = 16, .str_state = 32, .str_ascii_size = 48, .str_compact_size = 72
#define STR_312 .str_length = 16, .str_state = 32, .str_ascii_size = 40, .str_compact_size = 56
#define COMMON .tstate_interp = 16, .object_type = 8, .bytes_size = 16, .bytes_data = 32

static const struct py_layout layouts[] = {
	{ 3, 8, OBJECTS_310(104, 1), COMMON, CODE_310, .lines = PY_LINES_LNOTAB, STR_311 },
	{ 3, 9, OBJECTS_310(104, 1), COMMON, CODE_310, .lines = PY_LINES_LNOTAB, STR_311 },
	{ 3, 10, OBJECTS_310(96, 0), COMMON, CODE_310, .lines = PY_LINES_LINETABLE, STR_311 },
	/* 3.11: _PyInterpreterFrame through tstate->cframe; an eval-loop call's first frame is_entry. */
	{ 3, 11,
	  { .runtime_interp_head = 40, .interp_tstate_head = 16, .tstate_next = 8, .tstate_thread_id = 152,
	    .tstate_frame = 56, .cframe_frame = 8, .tstate_base_frame = NO, .frame_code = 32, .frame_back = 48, .frame_instr = 56,
	    .frame_entry = 68, .frame_owner = NO, .code_first_instr = 184, .walk = PY_WALK_ENTRY },
	  COMMON, CODE_311(72), STR_311 },
	/* 3.12: an eval-loop call pushes a shim frame owned by the C stack under its first frame. */
	{ 3, 12,
	  { .runtime_interp_head = 40, .interp_tstate_head = 72, .tstate_next = 8, .tstate_thread_id = 136,
	    .tstate_frame = 56, .cframe_frame = 0, .tstate_base_frame = NO, .frame_code = 0, .frame_back = 8, .frame_instr = 56,
	    .frame_entry = NO, .frame_owner = 70, .code_first_instr = 192, .walk = PY_WALK_SHIM,
	    .owner_cstack = 3 },
	  COMMON, CODE_311(68), STR_312 },
};

const struct py_layout *py_layout_find(unsigned major, unsigned minor)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].major == major && layouts[i].minor == minor)
			return &layouts[i];
	return NULL;
}

/* Where one minor version's _Py_DebugOffsets keeps the offsets read here: byte positions in the table,
 * counted from CPython's pycore_debug_offsets.h of that version and checked against Debian's builds. */
struct debug_map {
	unsigned minor;
	uint64_t prerelease; /* 0: the releases (final, patch releases) of minor; else one pre-release's hex */
	uint16_t len;        /* bytes of the table */
	uint16_t interp_head;                                          /* runtime_state.interpreters_head */
	uint16_t threads_head;                                         /* interpreter_state.threads_head */
	uint16_t ts_size, ts_next, ts_interp, ts_frame, ts_thread_id;  /* thread_state */
	uint16_t ts_base_frame;                                        /* 3.15+; 0: none */
	uint16_t fr_size, fr_previous, fr_executable, fr_instr, fr_owner; /* interpreter_frame */
	uint16_t co_size, co_filename, co_name, co_qualname, co_linetable, co_firstlineno, co_adaptive;
	uint16_t ob_size, ob_type;                                     /* pyobject */
	uint16_t by_size, by_ob_size, by_sval;                         /* bytes_object */
	uint16_t st_size, st_state, st_length, st_ascii_size;          /* unicode_object */
};

static const struct debug_map debug_maps[] = {
	{ .minor = 13, .len = 584, .interp_head = 40, .threads_head = 72,
	  .ts_size = 152, .ts_next = 168, .ts_interp = 176, .ts_frame = 184, .ts_thread_id = 192,
	  .fr_size = 224, .fr_previous = 232, .fr_executable = 240, .fr_instr = 248, .fr_owner = 264,
	  .co_size = 272, .co_filename = 280, .co_name = 288, .co_qualname = 296, .co_linetable = 304,
	  .co_firstlineno = 312, .co_adaptive = 344, .ob_size = 352, .ob_type = 360,
	  .by_size = 512, .by_ob_size = 520, .by_sval = 528,
	  .st_size = 536, .st_state = 544, .st_length = 552, .st_ascii_size = 560 },
	/* 3.14: interpreter_state gains threads_main and two generations, thread_state and the frame their
	 * free-threaded fields, and set_object comes before dict_object. */
	{ .minor = 14, .len = 760, .interp_head = 40, .threads_head = 72,
	  .ts_size = 176, .ts_next = 192, .ts_interp = 200, .ts_frame = 208, .ts_thread_id = 216,
	  .fr_size = 248, .fr_previous = 256, .fr_executable = 264, .fr_instr = 272, .fr_owner = 288,
	  .co_size = 312, .co_filename = 320, .co_name = 328, .co_qualname = 336, .co_linetable = 344,
	  .co_firstlineno = 352, .co_adaptive = 384, .ob_size = 400, .ob_type = 408,
	  .by_size = 592, .by_ob_size = 600, .by_sval = 608,
	  .st_size = 616, .st_state = 624, .st_length = 632, .st_ascii_size = 640 },
	/* 3.15: thread_state gains base_frame and the last profiled frame before thread_id, and more after
	 * its status; type_object grows. */
	{ .minor = 15, .len = 888, .interp_head = 40, .threads_head = 72,
	  .ts_size = 176, .ts_next = 192, .ts_interp = 200, .ts_frame = 208, .ts_thread_id = 240,
	  .ts_base_frame = 216,
	  .fr_size = 312, .fr_previous = 320, .fr_executable = 328, .fr_instr = 336, .fr_owner = 352,
	  .co_size = 376, .co_filename = 384, .co_name = 392, .co_qualname = 400, .co_linetable = 408,
	  .co_firstlineno = 416, .co_adaptive = 448, .ob_size = 464, .ob_type = 472,
	  .by_size = 688, .by_ob_size = 696, .by_sval = 704,
	  .st_size = 712, .st_state = 720, .st_length = 728, .st_ascii_size = 736 },
};

#define PY_STRUCT_MAX (1u << 20) /* bytes of any structure the table sizes, at most */

static uint64_t u64_at(const uint8_t *p, size_t off)
{
	uint64_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

/* The map for version hex (3.x only): a pre-release's own, else its minor's releases'. NULL with *why when
 * none. */
static const struct debug_map *find_map(uint64_t hex, enum py_unsupported *why)
{
	unsigned minor = (unsigned)((hex >> 16) & 0xff);
	bool final = ((hex >> 4) & 0xf) == 0xf;

	for (size_t i = 0; i < sizeof(debug_maps) / sizeof(debug_maps[0]) && (hex >> 24) == 3; i++) {
		const struct debug_map *m = &debug_maps[i];

		if (m->minor == minor && (m->prerelease ? m->prerelease == hex : final))
			return m;
	}
	*why = final ? PY_UNSUPPORTED_VERSION : PY_UNSUPPORTED_PRERELEASE;
	return NULL;
}

/* Reads the table's offset at position at into *out: it must leave width bytes inside its structure,
 * whose size is the table's at size_at, and, when limit > 0, inside the first limit bytes (what is read
 * of it at once). Returns 0 or -EINVAL. */
static int field(const uint8_t *debug, uint16_t at, uint16_t size_at, unsigned width, unsigned limit,
		 uint16_t *out)
{
	uint64_t v = u64_at(debug, at), size = u64_at(debug, size_at);

	if (size > PY_STRUCT_MAX || v > size || size - v < width || v > UINT16_MAX - width ||
	    (limit && (v > limit || limit - v < width)))
		return -EINVAL;
	*out = (uint16_t)v;
	return 0;
}

/* The offsets a walk and a frame's naming read, from the table d through map m. Returns 0 or -EINVAL. */
static int read_fields(const uint8_t *d, const struct debug_map *m, struct py_layout *l)
{
	struct py_offsets *b = &l->bpf;
	uint16_t ascii;
	int err = 0;

	/* interpreters.head is in _PyRuntime, threads.head in PyInterpreterState: their sizes bound them. */
	err |= field(d, m->interp_head, 24, 8, 0, &b->runtime_interp_head);
	err |= field(d, m->threads_head, 48, 8, 0, &b->interp_tstate_head);
	err |= field(d, m->ts_next, m->ts_size, 8, PY_TSTATE_READ, &b->tstate_next);
	err |= field(d, m->ts_interp, m->ts_size, 8, 0, &l->tstate_interp);
	err |= field(d, m->ts_frame, m->ts_size, 8, PY_TSTATE_READ, &b->tstate_frame);
	err |= field(d, m->ts_thread_id, m->ts_size, 8, PY_TSTATE_READ, &b->tstate_thread_id);
	b->tstate_base_frame = NO;
	if (m->ts_base_frame)
		err |= field(d, m->ts_base_frame, m->ts_size, 8, PY_TSTATE_READ, &b->tstate_base_frame);
	err |= field(d, m->fr_previous, m->fr_size, 8, PY_FRAME_READ, &b->frame_back);
	err |= field(d, m->fr_executable, m->fr_size, 8, PY_FRAME_READ, &b->frame_code);
	err |= field(d, m->fr_instr, m->fr_size, 8, PY_FRAME_READ, &b->frame_instr);
	err |= field(d, m->fr_owner, m->fr_size, 1, PY_FRAME_READ, &b->frame_owner);
	err |= field(d, m->co_filename, m->co_size, 8, PY_HEADER_MAX, &l->code_filename);
	err |= field(d, m->co_name, m->co_size, 8, PY_HEADER_MAX, &l->code_name);
	err |= field(d, m->co_qualname, m->co_size, 8, PY_HEADER_MAX, &l->code_qualname);
	err |= field(d, m->co_linetable, m->co_size, 8, PY_HEADER_MAX, &l->code_linetable);
	err |= field(d, m->co_firstlineno, m->co_size, 4, PY_HEADER_MAX, &l->code_firstlineno);
	err |= field(d, m->co_adaptive, m->co_size, 2, 0, &b->code_first_instr);
	err |= field(d, m->ob_type, m->ob_size, 8, PY_HEADER_MAX, &l->object_type);
	err |= field(d, m->by_ob_size, m->by_size, 8, PY_HEADER_MAX, &l->bytes_size);
	err |= field(d, m->by_sval, m->by_size, 1, PY_HEADER_MAX, &l->bytes_data);
	err |= field(d, m->st_state, m->st_size, 1, PY_HEADER_MAX, &l->str_state);
	err |= field(d, m->st_length, m->st_size, 8, PY_HEADER_MAX, &l->str_length);
	err |= field(d, m->st_ascii_size, m->st_size, 0, PY_HEADER_MAX, &ascii);
	if (err)
		return -EINVAL;
	l->str_ascii_size = ascii;
	/* A compact non-ASCII str keeps utf8_length and utf8 after the PyASCIIObject. */
	l->str_compact_size = (uint16_t)(ascii + 16);
	if (l->str_state >= ascii || l->str_length + 8u > ascii || l->bytes_size + 8u > l->bytes_data)
		return -EINVAL;
	return 0;
}

int py_layout_from_debug_offsets(const uint8_t *debug, size_t len, uint64_t hex, struct py_layout *out,
				 enum py_unsupported *why)
{
	const struct debug_map *m;
	struct py_layout l = { 0 };
	uint64_t flag;

	*why = PY_UNSUPPORTED_NONE;
	if (!debug || len < 24 || memcmp(debug, "xdebugpy", 8))
		return -ENOENT;
	if (u64_at(debug, 8) != hex)
		return -EINVAL; /* not the version the binary says it is */
	flag = u64_at(debug, 16);
	if (flag > 1)
		return -EINVAL;
	m = find_map(hex, why);
	if (!m)
		return -ENOTSUP;
	if (len < m->len)
		return -EINVAL;
	if (flag) {
		*why = PY_UNSUPPORTED_FREE_THREADED;
		return -ENOTSUP;
	}
	l.major = (unsigned)(hex >> 24);
	l.minor = m->minor;
	if (read_fields(debug, m, &l))
		return -EINVAL;
	l.bpf.cframe_frame = NO;
	l.bpf.frame_entry = NO;
	l.bpf.walk = PY_WALK_SHIM;
	/* 3.12 and 3.13 mark an eval-loop call's shim frame 3 (FRAME_OWNED_BY_CSTACK), 3.14 its entry frame
	 * 3 (FRAME_OWNED_BY_INTERPRETER, CSTACK then 4), 3.15 both its entry frames and the thread's base
	 * frame 3: every owner from 3 up ends a call's frames. */
	l.bpf.owner_cstack = 3;
	l.lines = PY_LINES_LOCATIONS;
	/* The code object's header read to name it: up to the end of its last field read. */
	const struct {
		uint16_t at, width;
	} code_fields[] = { { l.object_type, 8 }, { l.code_filename, 8 }, { l.code_name, 8 },
			    { l.code_qualname, 8 }, { l.code_linetable, 8 }, { l.code_firstlineno, 4 } };
	for (size_t i = 0; i < sizeof(code_fields) / sizeof(code_fields[0]); i++)
		if (l.code_size < code_fields[i].at + code_fields[i].width)
			l.code_size = (uint16_t)(code_fields[i].at + code_fields[i].width);
	*out = l;
	return 0;
}
