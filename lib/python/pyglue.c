/* pyglue.c - CPython's call machinery by name (see pyglue.h). */
#include <string.h>

#include "python/pyglue.h"

/* Names starting so are glue (what a call passes through in 3.8 to 3.15). */
static const char *const prefixes[] = {
	"_PyEval_Vector", "_PyEval_EvalCode", "_PyEval_EvalFrame", "PyEval_EvalFrame", "PyEval_EvalCode",
	"PyEval_CallObject", "_PyFunction_", "function_code_fastcall", "call_function", "do_call_core",
	"PyObject_Call", "_PyObject_Call", "PyObject_Vectorcall", "_PyObject_Vectorcall", "_PyObject_FastCall",
	"_PyObject_MakeTpCall", "PyVectorcall_", "_PyVectorcall_", "object_vacall", "callmethod",
	"method_vectorcall", "cfunction_vectorcall", "cfunction_call", "_PyCFunction_FastCall",
	"_PyMethodDef_RawFastCall", "_PyMethodDescr_FastCall", "method_call", "vectorcall_", "slot_tp_",
	"wrapperdescr_call", "wrapper_call", "call_method", "type_call", "gen_send_ex", "gen_iternext",
	"_PyGen_Send", "PyIter_Send", "partial_call", "partial_vectorcall", "property_descr_get",
	"py_trampoline_evaluator", "_Py_trampoline_func", "context_run", "_PyEvalFramePushAndInit",
	"_Py_VectorCall", /* 3.15: _Py_VectorCall_StackRefSteal, the eval loop's calls */
	"_TAIL_CALL_",    /* 3.14+ built --with-tail-call-interp: an opcode's handler, the eval loop's own */
};

bool py_is_glue(const char *name)
{
	if (!strcmp(name, "_PyEval_EvalFrameDefault") || !strncmp(name, "_PyEval_EvalFrameDefault.", 25))
		return false; /* the eval loop left in place: its Python frames are missing */
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}
