/* pyruntime.h - CPython as a runtime (runtime/runtime.h): the process tracker (pyprocs.c) and the frame
 * namer (pynames.c) behind the runtime operations, and their counters (pycounters.c). */
#ifndef FLAMED_PYTHON_PYRUNTIME_H
#define FLAMED_PYTHON_PYRUNTIME_H

#include "python/pynames.h"
#include "python/pyprocs.h"
#include "runtime/runtime.h"

/* What get_stats writes: the tracker's counters, then the namer's. */
struct python_stats {
	struct pyprocs_stats procs;
	struct pynames_stats names;
};

extern const struct runtime_ops python_runtime;

#endif
