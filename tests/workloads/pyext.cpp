// pyext.cpp - a CPython extension module (flamedext) whose hot path is C++: crunch(n) runs
// heldout::ext::Mesh<float>::smooth, n rounds. Built by the tests without frame pointers and linked by
// lld; tests/workloads/pyext.py drives it from Python, whose callers must stay above it.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <vector>

namespace heldout {
namespace ext {
template <typename T> class Mesh {
public:
	Mesh() : v_(4096, T(1)) {}
	__attribute__((noinline)) T smooth(long rounds)
	{
		for (long r = 0; r < rounds; r++)
			for (size_t i = 1; i + 1 < v_.size(); i++)
				v_[i] = (v_[i - 1] + v_[i + 1]) * T(0.5) + T(1e-6);
		return v_[v_.size() / 2];
	}

private:
	std::vector<T> v_;
};
} // namespace ext
} // namespace heldout

static PyObject *crunch(PyObject *self, PyObject *args)
{
	long rounds;
	heldout::ext::Mesh<float> m;

	(void)self;
	if (!PyArg_ParseTuple(args, "l", &rounds))
		return NULL;
	return PyFloat_FromDouble(m.smooth(rounds));
}

static PyMethodDef methods[] = {
	{ "crunch", crunch, METH_VARARGS, "Smooths a mesh for n rounds." },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef module = { PyModuleDef_HEAD_INIT, "flamedext", NULL, -1, methods, NULL, NULL, NULL, NULL };

PyMODINIT_FUNC PyInit_flamedext(void)
{
	return PyModule_Create(&module);
}
