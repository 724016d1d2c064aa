/* fuzz_kallsyms.c - libFuzzer target: /proc/kallsyms lines (kallsyms_parse_line), whole files and lookups. */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "symbolize/kallsyms.h"

/* Addresses of the lines parsed, to look up in the loaded table afterwards. */
struct addrs {
	uint64_t v[64];
	size_t n;
};

static void parse_line(char *line, void *ctx)
{
	struct addrs *a = ctx;
	const char *name;
	uint64_t addr;
	char type;

	if (kallsyms_parse_line(line, &addr, &type, &name) < 0)
		return;
	FUZZ_ASSERT(name[0] && strlen(name) <= KALLSYMS_MAX_NAME);
	if (a->n < sizeof(a->v) / sizeof(a->v[0]))
		a->v[a->n++] = addr;
}

/* Looks addr up and checks a name found is a readable string. */
static void lookup(const struct kallsyms *k, uint64_t addr)
{
	const char *name = kallsyms_lookup(k, addr);

	if (name)
		FUZZ_ASSERT(name[0] && strlen(name) <= KALLSYMS_MAX_NAME);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct addrs a = { .n = 0 };
	struct kallsyms *k;
	char path[64];
	int fd;

	fuzz_each_line(data, size, parse_line, &a);

	fd = fuzz_memfd(data, size);
	fuzz_fd_path(fd, path, sizeof(path));
	if (kallsyms_load(path, &k) == 0) {
		lookup(k, 0);
		lookup(k, UINT64_MAX);
		for (size_t i = 0; i < a.n; i++) {
			lookup(k, a.v[i]);
			lookup(k, a.v[i] - 1);
			lookup(k, a.v[i] + KALLSYMS_MAX_SPAN);
		}
		kallsyms_free(k);
	}
	close(fd);
	return 0;
}
