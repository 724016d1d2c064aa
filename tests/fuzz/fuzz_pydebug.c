/* fuzz_pydebug.c - libFuzzer target: py_layout_from_debug_offsets on any _Py_DebugOffsets table and the
 * version the binary claims. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "python/pylayout.h"

#define HEADER 8 /* the version the binary claims (PY_VERSION_HEX, 8 bytes little-endian); then the table */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct py_offsets *b;
	enum py_unsupported why;
	struct py_layout l;
	uint64_t hex;
	int rc;

	if (size < HEADER)
		return 0;
	memcpy(&hex, data, sizeof(hex));
	memset(&l, 0xa5, sizeof(l));
	/* The table ends where the input does: ASan sees any read past it. */
	rc = py_layout_from_debug_offsets(data + HEADER, size - HEADER, hex, &l, &why);
	FUZZ_ASSERT(rc == 0 || rc == -ENOENT || rc == -ENOTSUP || rc == -EINVAL);
	FUZZ_ASSERT((rc == -ENOTSUP) == (why != PY_UNSUPPORTED_NONE));
	if (rc == -ENOENT)
		FUZZ_ASSERT(size - HEADER < 24 || memcmp(data + HEADER, "xdebugpy", 8));
	if (rc)
		return 0;
	/* What the BPF program reads lies in the thread state and frame it reads at once, what the daemon
	 * reads of a code object, str or bytes in its header read. */
	b = &l.bpf;
	FUZZ_ASSERT(l.major == (hex >> 24) && l.minor == ((hex >> 16) & 0xff) && b->walk == PY_WALK_SHIM);
	FUZZ_ASSERT(b->tstate_next + 8u <= PY_TSTATE_READ && b->tstate_frame + 8u <= PY_TSTATE_READ &&
		    b->tstate_thread_id + 8u <= PY_TSTATE_READ);
	FUZZ_ASSERT(b->tstate_base_frame == PY_NO_OFFSET || b->tstate_base_frame + 8u <= PY_TSTATE_READ);
	FUZZ_ASSERT(b->frame_back + 8u <= PY_FRAME_READ && b->frame_code + 8u <= PY_FRAME_READ &&
		    b->frame_instr + 8u <= PY_FRAME_READ && b->frame_owner + 1u <= PY_FRAME_READ);
	FUZZ_ASSERT(b->cframe_frame == PY_NO_OFFSET && b->frame_entry == PY_NO_OFFSET);
	FUZZ_ASSERT(l.code_size <= PY_HEADER_MAX && l.code_filename + 8u <= l.code_size &&
		    l.code_name + 8u <= l.code_size && l.code_qualname + 8u <= l.code_size &&
		    l.code_linetable + 8u <= l.code_size && l.code_firstlineno + 4u <= l.code_size &&
		    l.object_type + 8u <= l.code_size);
	FUZZ_ASSERT(l.str_ascii_size <= PY_HEADER_MAX && l.str_state < l.str_ascii_size &&
		    l.str_length + 8u <= l.str_ascii_size && l.bytes_size + 8u <= l.bytes_data &&
		    l.bytes_data <= PY_HEADER_MAX);
	return 0;
}
