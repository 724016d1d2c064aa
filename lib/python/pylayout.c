/* pylayout.c - CPython's structure offsets by minor version (read from each version's debug info). */
#include <errno.h>
#include <string.h>

#include "python/pylayout.h"

#define NO PY_NO_OFFSET

/* 3.8 to 3.10: one PyFrameObject per eval-loop call; the thread state points at the innermost. */
#define OBJECTS_310(lasti, lasti_in_bytes)                                                          \
	{ .runtime_interp_head = 32, .interp_tstate_head = 8, .tstate_next = 8, .tstate_thread_id = 176, \
	  .tstate_frame = 24, .cframe_frame = NO, .frame_code = 32, .frame_back = 24, .frame_instr = (lasti), \
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
	    .tstate_frame = 56, .cframe_frame = 8, .frame_code = 32, .frame_back = 48, .frame_instr = 56,
	    .frame_entry = 68, .frame_owner = NO, .code_first_instr = 184, .walk = PY_WALK_ENTRY },
	  COMMON, CODE_311(72), STR_311 },
	/* 3.12: an eval-loop call pushes a shim frame owned by the C stack under its first frame. */
	{ 3, 12,
	  { .runtime_interp_head = 40, .interp_tstate_head = 72, .tstate_next = 8, .tstate_thread_id = 136,
	    .tstate_frame = 56, .cframe_frame = 0, .frame_code = 0, .frame_back = 8, .frame_instr = 56,
	    .frame_entry = NO, .frame_owner = 70, .code_first_instr = 192, .walk = PY_WALK_SHIM,
	    .owner_cstack = 3 },
	  COMMON, CODE_311(68), STR_312 },
	/* 3.13: no cframe; the shim's f_executable is None. */
	{ 3, 13,
	  { .runtime_interp_head = 632, .interp_tstate_head = 7344, .tstate_next = 8, .tstate_thread_id = 152,
	    .tstate_frame = 72, .cframe_frame = NO, .frame_code = 0, .frame_back = 8, .frame_instr = 56,
	    .frame_entry = NO, .frame_owner = 70, .code_first_instr = 200, .walk = PY_WALK_SHIM,
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

static uint64_t u64_at(const uint8_t *p, size_t off)
{
	uint64_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

int py_layout_check_debug_offsets(const struct py_layout *l, const uint8_t *debug, size_t len)
{
	/* Where _Py_DebugOffsets (3.13) keeps each offset, and what the table says it is. */
	const struct {
		uint16_t at, want;
	} fields[] = {
		{ 40, l->bpf.runtime_interp_head },                          /* runtime_state.interpreters_head */
		{ 72, l->bpf.interp_tstate_head },                           /* interpreter_state.threads_head */
		{ 168, l->bpf.tstate_next }, { 176, l->tstate_interp },      /* thread_state.next, .interp */
		{ 184, l->bpf.tstate_frame }, { 192, l->bpf.tstate_thread_id }, /* .current_frame, .thread_id */
		{ 232, l->bpf.frame_back }, { 240, l->bpf.frame_code },      /* interpreter_frame.previous, .executable */
		{ 248, l->bpf.frame_instr }, { 264, l->bpf.frame_owner },    /* .instr_ptr, .owner */
		{ 280, l->code_filename }, { 288, l->code_name },            /* code_object.filename, .name */
		{ 296, l->code_qualname }, { 304, l->code_linetable },       /* .qualname, .linetable */
		{ 312, l->code_firstlineno }, { 344, l->bpf.code_first_instr }, /* .firstlineno, .co_code_adaptive */
		{ 360, l->object_type },                                     /* pyobject.ob_type */
	};
	uint64_t version;

	if (!debug || len < 8 || memcmp(debug, "xdebugpy", 8))
		return -ENOENT;
	if (len < PY_DEBUG_OFFSETS_LEN)
		return -EINVAL;
	version = u64_at(debug, 8); /* PY_VERSION_HEX */
	if ((version >> 24) != l->major || ((version >> 16) & 0xff) != l->minor || u64_at(debug, 16))
		return -EINVAL; /* another version, or free-threaded (another layout) */
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (u64_at(debug, fields[i].at) != fields[i].want)
			return -EINVAL;
	return 0;
}
