/* pyelf.h - tells whether an ELF file is a CPython interpreter (a python binary with libpython linked in,
 * or libpython3.X.so), and where it keeps what a Python stack walk needs; from .dynsym and sections
 * alone, as a stripped distribution binary keeps them, with its .symtab (or a debug file's) when there. */
#ifndef FLAMED_PYTHON_PYELF_H
#define FLAMED_PYTHON_PYELF_H

#include <stdbool.h>
#include <stdint.h>

#include "python/pylayout.h"

struct elf_file;

/* How the eval loop's .cold part was found. */
enum py_cold_source {
	PY_COLD_NONE = 0,    /* none: the function is in one piece, or the part was not found */
	PY_COLD_SYMBOL = 1,  /* the symbol _PyEval_EvalFrameDefault.cold (.symtab, or the debug file's) */
	PY_COLD_JUMPS = 2,   /* the FDE most jumps out of the function land in, with no symbol of its own */
};

/* An interpreter; addresses are ELF virtual addresses of the file. */
struct py_binary {
	unsigned major, minor, micro;      /* from Py_Version (3.11+), else the "cpython-3X" cache tag
					    * (micro 0 then) */
	uint64_t hex;                      /* PY_VERSION_HEX from Py_Version; 0 when only the tag says */
	struct py_layout layout;           /* from _Py_DebugOffsets (3.13+), else py_layout_find's */
	uint64_t runtime;                  /* _PyRuntime */
	uint64_t eval_start, eval_end;     /* _PyEval_EvalFrameDefault, from its symbol's size */
	uint64_t cold_start, cold_end;     /* its .cold part; both 0 when none */
	enum py_cold_source cold_source;
	uint64_t code_type;                /* PyCode_Type; 0 when not found (code objects then unchecked) */
	uint64_t tramp_start, tramp_end;   /* _Py_trampoline_func_start, _end (3.12+ -X perf); 0: none */
	uint8_t tramp_cfa;                 /* at the trampoline's call's return address CFA = rsp +
					    * tramp_cfa; 0 when the template was not understood */
	bool tramp_rbp_saved;              /* the template pushes rbp (saved at CFA - 16) */
	bool debug_offsets;                /* 3.13+: the layout was read from _Py_DebugOffsets */
	bool debug_offsets_refused;        /* 3.13+: its _Py_DebugOffsets were missing or lied (-EINVAL) */
	enum py_unsupported unsupported;   /* -ENOTSUP: why it is not walked */
};

/* Inspects f, with its separate debug file debug (NULL: none) for .symtab. Symbols are looked up in
 * f's .dynsym, then .symtab, then debug's .symtab. The layout of 3.13 and later is read from the
 * _Py_DebugOffsets at the start of _PyRuntime, as the file holds it. Returns 0 with *out filled;
 * -ENOENT when f is not an interpreter (no _PyRuntime or _PyEval_EvalFrameDefault symbol: most files);
 * -ENOTSUP for an interpreter this build does not walk (out->major, minor, micro and unsupported say
 * which and why); -EINVAL when it looks like one but is inconsistent: no version found or several, a
 * 3.13+ _Py_DebugOffsets missing or lying (out->debug_offsets_refused), symbols outside the file's
 * segments. */
int py_elf_inspect(const struct elf_file *f, const struct elf_file *debug, struct py_binary *out);

/* Whether f needs a libpython3 (a DT_NEEDED entry starting "libpython3."): a python executable whose
 * interpreter comes in a library the dynamic loader maps after the program starts. Returns 1, 0 (no
 * such entry, or no dynamic section), or -EINVAL (a malformed dynamic section). */
int py_elf_needs_libpython(const struct elf_file *f);

#endif
