/* metric.c - Prometheus text lines (see metric.h). */
#include <inttypes.h>
#include <math.h>

#include "http/metric.h"

void http_metric(FILE *o, const char *name, const char *type, const char *help)
{
	fprintf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void http_metric_u64(FILE *o, const char *name, const char *type, const char *help, uint64_t v)
{
	http_metric(o, name, type, help);
	fprintf(o, "%s %" PRIu64 "\n", name, v);
}

double finite_or_zero(double d)
{
	return isfinite(d) ? d : 0;
}
