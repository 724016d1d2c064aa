/* folded.c - writes stacks in the folded text FlameGraph and speedscope read: "root;...;leaf COUNT". */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "render/folded.h"

/* Writes a process name as one frame: ';' would split it, so it becomes ':'; a line break would end
 * the line, so it becomes '?'. Spaces stay (readers take the count after the last space). An empty
 * or missing name is written as "[unknown]". */
static int write_comm(FILE *out, const char *comm)
{
	if (!comm || !comm[0])
		return fputs("[unknown]", out) == EOF ? -EIO : 0;
	for (const char *c = comm; *c; c++) {
		int ch = *c == ';' ? ':' : (*c == '\n' || *c == '\r') ? '?' : (unsigned char)*c;

		if (putc(ch, out) == EOF)
			return -EIO;
	}
	return 0;
}

/* Writes the stack as it is, except that a line break (the store never holds one) becomes '?'. */
static int write_stack(FILE *out, const char *folded)
{
	while (*folded) {
		size_t n = strcspn(folded, "\n\r");

		if (n && fwrite(folded, 1, n, out) != n)
			return -EIO;
		folded += n;
		if (*folded) {
			if (putc('?', out) == EOF)
				return -EIO;
			folded++;
		}
	}
	return 0;
}

int render_folded_line(FILE *out, const char *comm, const char *folded, uint64_t count)
{
	if (!out)
		return -EIO;
	if (write_comm(out, comm) < 0)
		return -EIO;
	if (folded && folded[0] && (putc(';', out) == EOF || write_stack(out, folded) < 0))
		return -EIO;
	if (fprintf(out, " %" PRIu64 "\n", count) < 0 || ferror(out))
		return -EIO;
	return 0;
}
