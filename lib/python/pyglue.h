/* pyglue.h - which native functions of the interpreter are call machinery between Python frames. */
#ifndef FLAMED_PYTHON_PYGLUE_H
#define FLAMED_PYTHON_PYGLUE_H

#include <stdbool.h>

/* True when name is one of CPython's (3.8 to 3.15) functions that only pass a call on: the eval loop's
 * wrappers, vectorcall and tp_call dispatch, bound-method and slot trampolines, generator resumption,
 * the -X perf trampoline, and the opcode handlers of a tail-calling interpreter (3.14+, _TAIL_CALL_*:
 * the eval loop's own code, one frame above _PyEval_EvalFrameDefault). They stand between two Python
 * frames and are no work of their own, as py-spy --native leaves them out. The eval loop itself
 * (_PyEval_EvalFrameDefault) is not glue: where it is still in a stack its Python frames could not be
 * walked. Builtins doing work (list_sort, builtin_sorted, time_sleep) are not glue either. */
bool py_is_glue(const char *name);

#endif
