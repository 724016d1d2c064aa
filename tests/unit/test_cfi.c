/* test_cfi.c - unwind rows from call frame information: every row readelf --debug-dump=frames-interp prints
 * for fixtures built here, libc and the system's python3 is compared with cfi_lookup; .debug_frame (own and
 * in a separate debug file, compressed too), overlapping FDEs, bad input and limits; costs measured. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "syspython.h"
#include "testutil.h"
#include "unwind/cfi.h"

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"
#define FIX_PATH 256
#define COL_LEN 48       /* one readelf column value ("rsp+70016", "c-16", "exp") */
#define EXP_LEN 512      /* one DW_CFA_def_cfa_expression as readelf prints it */
#define SECT_EH 0        /* readelf section of an entry */
#define SECT_DEBUG 1
#define SECT_OTHER 2
#define SHOW 5           /* mismatches printed per binary */
#define CORRUPT_ROUNDS 300

/* leaf() sets up no frame; small_frame() has a stack array that fits the row's int16; big_stack() one that
 * does not (OTHER); vla() and with_alloca() make gcc keep the CFA in rbp. */
static const char fixture_src[] =
	"#include <alloca.h>\n#include <string.h>\n"
	"volatile int sink;\n"
	"__attribute__((noinline)) int leaf(int x) { return x * 3 + 1; }\n"
	"__attribute__((noinline)) int small_frame(int n)\n"
	"{\n\tvolatile char buf[4000];\n\tmemset((char *)buf, n, sizeof(buf));\n"
	"\treturn buf[n & 1023] + leaf(n);\n}\n"
	"__attribute__((noinline)) int big_stack(int n)\n"
	"{\n\tvolatile char buf[70000];\n\tmemset((char *)buf, n, sizeof(buf));\n"
	"\treturn buf[n & 1023] + leaf(n);\n}\n"
	"__attribute__((noinline)) int vla(int n)\n"
	"{\n\tchar a[n];\n\tmemset(a, 1, (size_t)n);\n\tsink = a[n / 2];\n\treturn leaf(a[0]) + n;\n}\n"
	"__attribute__((noinline)) int with_alloca(int n)\n"
	"{\n\tchar *p = alloca((size_t)n + 16);\n\tmemset(p, 2, (size_t)n + 16);\n\treturn leaf(p[n]);\n}\n"
	"int main(int argc, char **argv)\n"
	"{\n\t(void)argv;\n"
	"\treturn small_frame(argc) + big_stack(argc) + vla(argc + 10) + with_alloca(argc + 5);\n}\n";

/* Hand-written CFI gcc does not emit: _start with rip undefined, remember/restore_state in an rbp frame,
 * the CFA in rdi with rip in rdx and expressions, a signal frame, rbp kept in r9. */
static const char asm_src[] =
	"\t.text\n\t.globl _start\n"
	"_start:\n\t.cfi_startproc\n\t.cfi_undefined rip\n\txor %ebp, %ebp\n\tcall f_remember\n"
	"\tcall f_other\n\tcall f_sig\n\tcall f_rbp_in_r9\n"
	"\tmov $60, %eax\n\txor %edi, %edi\n\tsyscall\n\t.cfi_endproc\n"
	"f_remember:\n\t.cfi_startproc\n\tpush %rbp\n\t.cfi_def_cfa_offset 16\n\t.cfi_offset rbp, -16\n"
	"\tmov %rsp, %rbp\n\t.cfi_def_cfa_register rbp\n\ttest %edi, %edi\n\t.cfi_remember_state\n\tjz 1f\n"
	"\tleave\n\t.cfi_def_cfa rsp, 8\n\tret\n1:\n\t.cfi_restore_state\n\tsub $40000, %rsp\n\tleave\n"
	"\t.cfi_def_cfa rsp, 8\n\tret\n\t.cfi_endproc\n"
	"f_other:\n\t.cfi_startproc\n\tmov %rsp, %rdi\n\t.cfi_def_cfa rdi, 8\n\t.cfi_register rip, rdx\n"
	"\tmov (%rsp), %rdx\n\t.cfi_offset rbp, -24\n"
	"\t.cfi_escape 0x10, 0x06, 0x02, 0x76, 0x04\n"       /* DW_CFA_expression rbp: DW_OP_breg6 4 */
	"\t.cfi_escape 0x0f, 0x03, 0x77, 0x08, 0x06\n"       /* DW_CFA_def_cfa_expression: breg7 8; deref */
	"\tret\n\t.cfi_endproc\n"
	"\tnop\n"
	"f_sig:\n\t.cfi_startproc\n\t.cfi_signal_frame\n"
	"\t.cfi_escape 0x0f, 0x03, 0x77, 0xa0, 0x01\n"       /* the CFA at rsp + 160 */
	"\t.cfi_escape 0x10, 0x10, 0x03, 0x77, 0xa8, 0x01\n" /* rip at rsp + 168 */
	"\tret\n\t.cfi_endproc\n"
	"f_rbp_in_r9:\n\t.cfi_startproc\n\tmov %rbp, %r9\n\t.cfi_register rbp, r9\n\tret\n\t.cfi_endproc\n";

/* The columns of one readelf row that matter here ("" when the column is not printed). */
struct cols {
	char cfa[COL_LEN], rbp[COL_LEN], ra[COL_LEN];
};

struct cie_info {
	int sect;
	uint64_t off;
	bool signal; /* 'S' in the augmentation */
	int ra;      /* return address column */
	bool has_init;
	struct cols init; /* the initial row */
};

struct fde_info {
	int sect;
	uint64_t off, len, cie, lo, hi; /* len: the entry's length field */
	size_t first, nrows; /* its rows in dump.rows */
	int nexp;            /* distinct DW_CFA_def_cfa_expression texts in the FDE */
	char exp[EXP_LEN];
};

struct erow {
	uint64_t loc;
	struct cols c;
};

/* What readelf says about one file. */
struct dump {
	struct cie_info *cies;
	struct fde_info *fdes;
	struct erow *rows;
	size_t ncies, nfdes, nrows, cap_cies, cap_fdes, cap_rows;
};

/* The rule a readelf row stands for, mapped as cfi.h documents; why, when OTHER. */
enum other_why { WHY_NONE, WHY_SIGNAL, WHY_RA, WHY_CFA_OFF, WHY_CFA_REG, WHY_EXPR, WHY_RBP, WHY_N };
static const char *const why_names[WHY_N] = { "-", "signal frame", "return address not at CFA-8",
					       "CFA offset beyond int16", "CFA from another register",
					       "CFA expression other than the PLT's", "rbp rule" };
struct want {
	int cfa, cfa_off, rbp, rbp_off;
	enum other_why why;
};

/* Mismatch kinds, counted separately. */
enum { MIS_MISSING, MIS_CFA_KIND, MIS_CFA_OFF, MIS_RBP_KIND, MIS_RBP_OFF, MIS_AMBIGUOUS, MIS_N };
static const char *const mis_names[MIS_N] = { "no row", "CFA kind", "CFA offset", "rbp kind", "rbp offset",
					       "ambiguous expression" };

/* What one comparison found. */
struct tally {
	size_t rows, fdes, kinds[UNWIND_CFA_OTHER + 1], rbp_cfa, why[WHY_N], mis[MIS_N], ends_bad, gaps;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- reading readelf's output ---- */

/* Grows array *v of *cap elements of size sz to hold n + 1. Returns 0 or -1. */
static int grow(void **v, size_t *cap, size_t n, size_t sz)
{
	void *nv;
	size_t c;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 256;
	nv = realloc(*v, c * sz);
	if (!nv)
		return -1;
	*v = nv;
	*cap = c;
	return 0;
}

static void dump_free(struct dump *d)
{
	free(d->cies);
	free(d->fdes);
	free(d->rows);
	memset(d, 0, sizeof(*d));
}

/* The section a "Contents of the X section:" line names. */
static int section_of(const char *line)
{
	if (strstr(line, " .eh_frame section"))
		return SECT_EH;
	if (strstr(line, " .debug_frame section"))
		return SECT_DEBUG;
	return SECT_OTHER;
}

/* Parses an FDE header line. Returns true when line is one. */
static bool parse_fde(const char *line, uint64_t *off, uint64_t *len, uint64_t *cie, uint64_t *lo,
		      uint64_t *hi)
{
	unsigned long long o, l, ptr, c, a, b;

	return sscanf(line, "%llx %llx %llx FDE cie=%llx pc=%llx..%llx", &o, &l, &ptr, &c, &a, &b) == 6 &&
	       (*off = o, *len = l, *cie = c, *lo = a, *hi = b, true);
}

/* Parses a CIE header line into c. Returns true when line is one. */
static bool parse_cie(const char *line, int sect, struct cie_info *c)
{
	unsigned long long o, len, id;
	const char *aug = strstr(line, " CIE \""), *end, *ra;

	if (!aug || sscanf(line, "%llx %llx %llx", &o, &len, &id) != 3)
		return false;
	aug += 6;
	end = strchr(aug, '"');
	ra = strstr(line, " ra=");
	if (!end || !ra)
		return false;
	memset(c, 0, sizeof(*c));
	c->sect = sect;
	c->off = o;
	c->signal = memchr(aug, 'S', (size_t)(end - aug)) != NULL;
	c->ra = atoi(ra + 4);
	return true;
}

/* Splits a column header ("   LOC  CFA  rbx  rbp  ra") into names. Returns how many (LOC not counted). */
static int parse_header(char *line, char names[][COL_LEN], int max)
{
	char *save = NULL, *t = strtok_r(line, " \t\n", &save);
	int n = 0;

	if (!t || strcmp(t, "LOC") != 0)
		return -1;
	while ((t = strtok_r(NULL, " \t\n", &save)) && n < max)
		snprintf(names[n++], COL_LEN, "%s", t);
	return n;
}

/* The next column value of a row at *p: a run of non-blanks, with a following "(name)" joined to it
 * (readelf prints DW_CFA_register as "r10 (r10)"). Returns its length, 0 at the end. */
static size_t next_value(const char **p, char *out, size_t cap)
{
	const char *s = *p + strspn(*p, " \t\n"), *e = s + strcspn(s, " \t\n");
	const char *after = e + strspn(e, " \t\n");

	if (*after == '(')
		e = after + strcspn(after, " \t\n");
	snprintf(out, cap, "%.*s", (int)(e - s), s);
	*p = e;
	return (size_t)(e - s);
}

/* Parses a row ("0000000000001180 rsp+8  u  c-8") with the current column names. Returns true when line
 * is one. */
static bool parse_row(const char *line, char names[][COL_LEN], int ncols, struct erow *r)
{
	const char *p = line + 16;
	char v[COL_LEN];
	int i;

	if (strspn(line, "0123456789abcdef") != 16 || line[16] != ' ')
		return false;
	memset(r, 0, sizeof(*r));
	r->loc = strtoull(line, NULL, 16);
	for (i = 0; i < ncols && next_value(&p, v, sizeof(v)) > 0; i++) {
		if (strcmp(names[i], "CFA") == 0)
			snprintf(r->c.cfa, COL_LEN, "%s", v);
		else if (strcmp(names[i], "rbp") == 0)
			snprintf(r->c.rbp, COL_LEN, "%s", v);
		else if (strcmp(names[i], "ra") == 0)
			snprintf(r->c.ra, COL_LEN, "%s", v);
	}
	return true;
}

/* The FDE of d at (sect, off), or NULL. */
static struct fde_info *find_fde(struct dump *d, int sect, uint64_t off)
{
	size_t i;

	for (i = d->nfdes; i-- > 0;) { /* the raw dump visits them in the same order: look from the end */
		if (d->fdes[i].sect == sect && d->fdes[i].off == off)
			return &d->fdes[i];
	}
	return NULL;
}

static const struct cie_info *find_cie(const struct dump *d, int sect, uint64_t off)
{
	size_t i;

	for (i = 0; i < d->ncies; i++) {
		if (d->cies[i].sect == sect && d->cies[i].off == off)
			return &d->cies[i];
	}
	return NULL;
}

/* Reads readelf --debug-dump=frames-interp of path into d. Returns 0 or -1. */
static int read_interp(const char *path, struct dump *d)
{
	char cmd[PATH_MAX + 64], line[1024], names[64][COL_LEN];
	struct fde_info *f = NULL;
	struct cie_info *c = NULL;
	uint64_t off, len, cie, lo, hi;
	int sect = SECT_OTHER, ncols = 0, rc = 0;
	struct erow r;
	FILE *fp;

	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames-interp -- '%s' 2>/dev/null", path);
	fp = popen(cmd, "re");
	if (!fp)
		return -1;
	while (fgets(line, sizeof(line), fp) && rc == 0) {
		if (strncmp(line, "Contents of the ", 16) == 0) {
			sect = section_of(line);
			f = NULL;
			c = NULL;
		} else if (parse_fde(line, &off, &len, &cie, &lo, &hi)) {
			c = NULL;
			rc = grow((void **)&d->fdes, &d->cap_fdes, d->nfdes, sizeof(*d->fdes));
			if (rc == 0) {
				f = &d->fdes[d->nfdes++];
				*f = (struct fde_info){ .sect = sect, .off = off, .len = len, .cie = cie, .lo = lo,
							.hi = hi, .first = d->nrows };
			}
		} else if (strstr(line, " CIE \"")) {
			f = NULL;
			rc = grow((void **)&d->cies, &d->cap_cies, d->ncies, sizeof(*d->cies));
			if (rc == 0 && parse_cie(line, sect, &d->cies[d->ncies]))
				c = &d->cies[d->ncies++];
		} else if (strstr(line, "   LOC ")) {
			ncols = parse_header(line, names, 64);
		} else if (ncols > 0 && parse_row(line, names, ncols, &r)) {
			if (c && !c->has_init) {
				c->init = r.c;
				c->has_init = true;
			} else if (f) {
				rc = grow((void **)&d->rows, &d->cap_rows, d->nrows, sizeof(*d->rows));
				if (rc == 0) {
					d->rows[d->nrows++] = r;
					f->nrows++;
				}
			}
		}
	}
	pclose(fp); /* readelf exits 1 on complaints unrelated to frames ("Unable to find program interpreter") */
	return rc == 0 && d->nfdes > 0 ? 0 : -1;
}

/* Adds the DW_CFA_def_cfa_expression texts of readelf --debug-dump=frames of path to d's FDEs. Returns
 * 0 or -1. */
static int read_raw(const char *path, struct dump *d)
{
	char cmd[PATH_MAX + 64], line[1024], text[EXP_LEN];
	struct fde_info *f = NULL;
	uint64_t off, len, cie, lo, hi;
	int sect = SECT_OTHER;
	const char *e;
	FILE *fp;

	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames -- '%s' 2>/dev/null", path);
	fp = popen(cmd, "re");
	if (!fp)
		return -1;
	while (fgets(line, sizeof(line), fp)) {
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "Contents of the ", 16) == 0) {
			sect = section_of(line);
			f = NULL;
		} else if (parse_fde(line, &off, &len, &cie, &lo, &hi)) {
			f = find_fde(d, sect, off);
		} else if (strstr(line, " CIE")) {
			f = NULL;
		} else if (f && (e = strstr(line, "DW_CFA_def_cfa_expression ("))) {
			e += strlen("DW_CFA_def_cfa_expression (");
			snprintf(text, sizeof(text), "%.*s", (int)strlen(e) - 1, e); /* without the closing ')' */
			if (f->nexp == 0 || strcmp(f->exp, text) != 0)
				f->nexp++;
			snprintf(f->exp, EXP_LEN, "%s", text);
		}
	}
	pclose(fp);
	return 0;
}

/* ---- the expected rule ---- */

static struct want want_other(enum other_why why)
{
	return (struct want){ .cfa = UNWIND_CFA_OTHER, .why = why };
}

/* "c-16" and the like: *off from the CFA. */
static bool col_at_cfa(const char *v, long *off)
{
	char *end;

	if (v[0] != 'c' || (v[1] != '+' && v[1] != '-'))
		return false;
	*off = strtol(v + 1, &end, 10);
	return *end == '\0';
}

/* readelf's text of the PLT expression: *n from rsp and the threshold *k. */
static bool exp_plt(const char *e, long *n, long *k)
{
	char tail[128];

	if (sscanf(e, "DW_OP_breg7 (rsp): %ld; DW_OP_breg16 (rip): 0; DW_OP_lit15; DW_OP_and; "
		   "DW_OP_lit%ld; %127[^\n]", n, k, tail) != 3)
		return false;
	return strcmp(tail, "DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus") == 0 && *k >= 0 && *k <= 31;
}

/* The rule readelf's row c stands for, in FDE f of CIE cie. Sets *ambiguous when the CFA is an expression
 * the raw dump does not pin down (several different ones in the FDE). */
static struct want expected(const struct cols *c, const struct cie_info *cie, const struct fde_info *f,
			    bool *ambiguous)
{
	struct want w = { 0 };
	long off, k;
	char *end;

	*ambiguous = false;
	if (strcmp(c->ra, "u") == 0 || c->ra[0] == '\0')
		return (struct want){ .cfa = UNWIND_CFA_END };
	if (cie->signal)
		return want_other(WHY_SIGNAL);
	if (cie->ra != 16 || !col_at_cfa(c->ra, &off) || off != -8)
		return want_other(WHY_RA);
	if (strcmp(c->cfa, "exp") == 0) {
		*ambiguous = f->nexp != 1;
		if (f->nexp != 1 || !exp_plt(f->exp, &off, &k) || off < INT16_MIN || off > INT16_MAX)
			return want_other(WHY_EXPR);
		if (c->rbp[0] && strcmp(c->rbp, "u") != 0 && strcmp(c->rbp, "s") != 0)
			return want_other(WHY_RBP);
		return (struct want){ .cfa = UNWIND_CFA_PLT, .cfa_off = (int)off, .rbp_off = (int)k };
	}
	if (strncmp(c->cfa, "rsp", 3) == 0)
		w.cfa = UNWIND_CFA_RSP;
	else if (strncmp(c->cfa, "rbp", 3) == 0)
		w.cfa = UNWIND_CFA_RBP;
	else
		return want_other(WHY_CFA_REG);
	off = strtol(c->cfa + 3, &end, 10);
	if (*end != '\0')
		return want_other(WHY_CFA_REG);
	if (off < INT16_MIN || off > INT16_MAX)
		return want_other(WHY_CFA_OFF);
	w.cfa_off = (int)off;
	if (c->rbp[0] == '\0' || strcmp(c->rbp, "u") == 0 || strcmp(c->rbp, "s") == 0)
		return w;
	if (col_at_cfa(c->rbp, &off) && off % 8 == 0 && off / 8 >= INT8_MIN && off / 8 <= INT8_MAX) {
		w.rbp = UNWIND_RBP_CFA;
		w.rbp_off = (int)(off / 8);
		return w;
	}
	w.rbp = UNWIND_RBP_OTHER;
	w.why = WHY_RBP;
	return w;
}

/* ---- comparing ---- */

static void print_row(const char *what, const struct unwind_row *r)
{
	if (!r) {
		printf("%s NULL", what);
		return;
	}
	printf("%s pc 0x%x cfa %d%+d rbp %d%+d", what, r->pc, UNWIND_CFA_KIND(r->kinds), r->cfa_off,
	       UNWIND_RBP_KIND(r->kinds), r->rbp_off);
}

/* The first way r differs from w (MIS_*), or -1 when they agree. */
static int mismatch(const struct unwind_row *r, const struct want *w)
{
	if (!r || UNWIND_CFA_KIND(r->kinds) == UNWIND_CFA_NONE)
		return MIS_MISSING;
	if (UNWIND_CFA_KIND(r->kinds) != w->cfa)
		return MIS_CFA_KIND;
	if (r->cfa_off != w->cfa_off)
		return MIS_CFA_OFF;
	if (UNWIND_RBP_KIND(r->kinds) != w->rbp)
		return MIS_RBP_KIND;
	if (r->rbp_off != w->rbp_off)
		return MIS_RBP_OFF;
	return -1;
}

/* Compares the row covering loc with w; counts the rule and what differs into t (an ambiguous expression
 * only needs OTHER or PLT). */
static void compare_row(const struct unwind_row *rows, size_t n, uint64_t loc, const struct want *w,
			bool ambiguous, struct tally *t, const char *tag)
{
	const struct unwind_row *r = cfi_lookup(rows, n, loc);
	int got = r ? UNWIND_CFA_KIND(r->kinds) : -1, mis = mismatch(r, w);

	t->rows++;
	t->kinds[w->cfa]++;
	t->rbp_cfa += w->rbp == UNWIND_RBP_CFA && (w->cfa == UNWIND_CFA_RSP || w->cfa == UNWIND_CFA_RBP);
	t->why[w->why]++;
	if (ambiguous) {
		t->mis[MIS_AMBIGUOUS]++;
		mis = got == UNWIND_CFA_OTHER || got == UNWIND_CFA_PLT ? -1 : MIS_CFA_KIND;
	}
	if (mis < 0)
		return;
	if (t->mis[MIS_MISSING] + t->mis[MIS_CFA_KIND] + t->mis[MIS_CFA_OFF] + t->mis[MIS_RBP_KIND] +
	    t->mis[MIS_RBP_OFF] < SHOW) {
		printf("# %s 0x%" PRIx64 ": %s: want cfa %d%+d rbp %d%+d, ", tag, loc, mis_names[mis], w->cfa,
		       w->cfa_off, w->rbp, w->rbp_off);
		print_row("got", r);
		printf("\n");
	}
	t->mis[mis]++;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* True when some FDE in sections mask of d starts at pc (starts: sorted). */
static bool starts_at(const uint64_t *starts, size_t n, uint64_t pc)
{
	return bsearch(&pc, starts, n, sizeof(*starts), u64_cmp) != NULL;
}

/* Compares every row readelf prints for the FDEs of sections in mask (1 << SECT_*) with our rows, and
 * checks each FDE's end: a NONE row unless another FDE starts there. */
static void compare_dump(const struct dump *d, unsigned mask, const struct unwind_row *rows, size_t n,
			 struct tally *t, const char *tag)
{
	uint64_t *starts = calloc(d->nfdes ? d->nfdes : 1, sizeof(*starts));
	const struct unwind_row *r;
	const struct cie_info *cie;
	const struct fde_info *f;
	size_t i, j, nstarts = 0;
	struct want w;
	bool amb;

	if (!starts)
		return;
	for (i = 0; i < d->nfdes; i++) {
		if ((mask >> d->fdes[i].sect) & 1)
			starts[nstarts++] = d->fdes[i].lo;
	}
	qsort(starts, nstarts, sizeof(*starts), u64_cmp);
	for (i = 0; i < d->nfdes; i++) {
		f = &d->fdes[i];
		if (!((mask >> f->sect) & 1) || f->lo == f->hi)
			continue;
		t->fdes++;
		cie = find_cie(d, f->sect, f->cie);
		if (!cie) {
			t->mis[MIS_MISSING]++;
			continue;
		}
		if (f->nrows == 0) { /* readelf prints no row for an FDE without instructions: the CIE's holds */
			w = expected(&cie->init, cie, f, &amb); /* none printed: nothing known, the ra undefined */
			compare_row(rows, n, f->lo, &w, amb, t, tag);
		}
		for (j = f->first; j < f->first + f->nrows; j++) {
			if (j + 1 < f->first + f->nrows && d->rows[j + 1].loc == d->rows[j].loc)
				continue; /* a later row at the same address holds */
			w = expected(&d->rows[j].c, cie, f, &amb);
			compare_row(rows, n, d->rows[j].loc, &w, amb, t, tag);
		}
		if (starts_at(starts, nstarts, f->hi))
			continue;
		r = cfi_lookup(rows, n, f->hi);
		t->gaps++;
		if (!r || r->pc != f->hi || UNWIND_CFA_KIND(r->kinds) != UNWIND_CFA_NONE) {
			if (t->ends_bad++ < SHOW) {
				printf("# %s: FDE end 0x%" PRIx64 " (no FDE starts there): ", tag, f->hi);
				print_row("got", r);
				printf("\n");
			}
		}
	}
	free(starts);
}

/* Checks the rows' own invariants: strictly increasing pcs, merged, last NONE, kinds in range. */
static void check_invariants(const char *tag, const struct unwind_row *rows, size_t n)
{
	size_t i, unsorted = 0, unmerged = 0, bad = 0;

	for (i = 0; i < n; i++) {
		bad += UNWIND_CFA_KIND(rows[i].kinds) > UNWIND_CFA_OTHER ||
		       UNWIND_RBP_KIND(rows[i].kinds) > UNWIND_RBP_OTHER;
		if (i == 0)
			continue;
		unsorted += rows[i].pc <= rows[i - 1].pc;
		unmerged += rows[i].kinds == rows[i - 1].kinds && rows[i].cfa_off == rows[i - 1].cfa_off &&
			    rows[i].rbp_off == rows[i - 1].rbp_off;
	}
	CHECK(n >= 2 && unsorted == 0, "%s: %zu rows, pcs strictly increasing (%zu not)", tag, n, unsorted);
	CHECK(unmerged == 0 && bad == 0, "%s: adjacent rows differ (%zu equal), kinds valid (%zu not)", tag,
	      unmerged, bad);
	CHECK(n > 0 && UNWIND_CFA_KIND(rows[n - 1].kinds) == UNWIND_CFA_NONE, "%s: the last row is NONE", tag);
	CHECK(cfi_lookup(rows, n, 0) == NULL && cfi_lookup(rows, n, rows[0].pc - 1) == NULL,
	      "%s: addresses below the first row have no row", tag);
	CHECK(cfi_lookup(rows, n, UINT64_MAX) == &rows[n - 1], "%s: the last address is in the last (NONE) row",
	      tag);
}

/* Prints t and checks full agreement. */
static void report(const char *tag, const struct tally *t, size_t nrows)
{
	size_t mis = 0;
	int i;

	for (i = 0; i < MIS_AMBIGUOUS; i++)
		mis += t->mis[i];
	printf("# %s: readelf rows %zu in %zu FDEs: RSP %zu, RBP %zu (rbp saved in %zu), PLT %zu, END %zu, "
	       "OTHER %zu; our rows %zu\n", tag, t->rows, t->fdes, t->kinds[UNWIND_CFA_RSP],
	       t->kinds[UNWIND_CFA_RBP], t->rbp_cfa, t->kinds[UNWIND_CFA_PLT], t->kinds[UNWIND_CFA_END],
	       t->kinds[UNWIND_CFA_OTHER], nrows);
	printf("# %s: OTHER or rbp OTHER by reason:", tag);
	for (i = 1; i < WHY_N; i++)
		printf(" %s %zu%s", why_names[i], t->why[i], i + 1 < WHY_N ? ";" : "\n");
	printf("# %s: mismatches:", tag);
	for (i = 0; i < MIS_N; i++)
		printf(" %s %zu%s", mis_names[i], t->mis[i], i + 1 < MIS_N ? ";" : "");
	printf("; FDE ends not NONE %zu of %zu\n", t->ends_bad, t->gaps);
	CHECK(t->rows > 0 && mis == 0, "%s: all %zu rows readelf prints agree with cfi_lookup (%zu differ)", tag,
	      t->rows, mis);
	CHECK(t->mis[MIS_AMBIGUOUS] == 0, "%s: no CFA expression left ambiguous by readelf (%zu)", tag,
	      t->mis[MIS_AMBIGUOUS]);
	CHECK(t->ends_bad == 0 && t->gaps > 0, "%s: each FDE end no FDE starts at is a NONE row (%zu of %zu not)",
	      tag, t->ends_bad, t->gaps);
}

/* Opens path (and debug, when not NULL) and builds its rows. Returns cfi_build's result. */
static int build_path(const char *path, const char *debug, size_t max, struct unwind_row **rows, size_t *n,
		      struct cfi_stats *st)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), dfd = debug ? open(debug, O_RDONLY | O_CLOEXEC) : -1, rc;

	if (fd < 0 || (debug && dfd < 0)) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	rc = cfi_build(fd, dfd, max, rows, n, st);
	close(fd);
	if (dfd >= 0)
		close(dfd);
	return rc;
}

/* Builds path's rows and compares them with readelf's dump of dumped (path, or its debug file) for the
 * sections in mask. Fills *st, *ms. Returns the rows (free()) or NULL. */
static struct unwind_row *compare_file(const char *tag, const char *path, const char *debug,
				       const char *dumped, unsigned mask, struct cfi_stats *st, size_t *n, double *ms)
{
	struct unwind_row *rows = NULL;
	struct dump d = { 0 };
	struct tally t = { 0 };
	double t0 = now_ms();
	int rc = build_path(path, debug, UNWIND_MAX_ROWS, &rows, n, st);

	*ms = now_ms() - t0;
	CHECK(rc == 0, "%s: cfi_build (%d)", tag, rc);
	if (rc)
		return NULL;
	check_invariants(tag, rows, *n);
	CHECK(st->rows == *n && st->fdes > 0 && st->rows_other <= *n, "%s: stats: %zu rows, %zu OTHER, %zu FDEs, "
	      "%zu dropped", tag, st->rows, st->rows_other, st->fdes, st->fdes_dropped);
	if (read_interp(dumped, &d) < 0 || read_raw(dumped, &d) < 0) {
		CHECK(0, "%s: readelf --debug-dump=frames(-interp) of %s", tag, dumped);
	} else {
		compare_dump(&d, mask, rows, *n, &t, tag);
		report(tag, &t, *n);
	}
	dump_free(&d);
	return rows;
}

/* ---- fixtures ---- */

/* Builds fixture variant tag with cc and flags into dir/fix_tag (path in bin). Returns 0 or -1. */
static int build_fixture(const char *dir, const char *tag, const char *cc, const char *flags, char *bin,
			 size_t cap)
{
	snprintf(bin, cap, "%s/fix_%s", dir, tag);
	if (run("%s %s -o '%s' '%s/fixture.c'", cc, flags, bin, dir) != 0) {
		CHECK(0, "%s: fixture built with %s %s", tag, cc, flags);
		return -1;
	}
	return 0;
}

/* The address nm gives for symbol name in path, or 0. */
static uint64_t symbol_addr(const char *path, const char *name)
{
	char cmd[PATH_MAX + 32], line[512], sym[256], type;
	unsigned long long v;
	uint64_t addr = 0;
	FILE *fp;

	snprintf(cmd, sizeof(cmd), "nm -- '%s' 2>/dev/null", path);
	fp = popen(cmd, "re");
	if (!fp)
		return 0;
	while (fgets(line, sizeof(line), fp)) {
		if (sscanf(line, "%llx %c %255s", &v, &type, sym) == 3 && strcmp(sym, name) == 0)
			addr = v;
	}
	pclose(fp);
	return addr;
}

/* The kind of the row at symbol name's address plus delta. -1: no symbol or no row. */
static int kind_at(const char *path, const char *name, uint64_t delta, const struct unwind_row *rows,
		   size_t n)
{
	uint64_t a = symbol_addr(path, name);
	const struct unwind_row *r = a ? cfi_lookup(rows, n, a + delta) : NULL;

	return r ? UNWIND_CFA_KIND(r->kinds) : -1;
}

/* True when some row of [lo, lo + len) has CFA kind kind. */
static bool has_kind(const struct unwind_row *rows, size_t n, uint64_t lo, uint64_t len, int kind)
{
	const struct unwind_row *r = cfi_lookup(rows, n, lo);
	size_t i = r ? (size_t)(r - rows) : 0;

	for (; i < n && rows[i].pc < lo + len; i++) {
		if (UNWIND_CFA_KIND(rows[i].kinds) == kind)
			return true;
	}
	return false;
}

/* -fomit-frame-pointer and -fno-omit-frame-pointer fixtures: every row against readelf, and the shapes
 * the fixture was written to produce. */
static void test_fixtures(const char *dir, char *omit, size_t cap)
{
	static const struct {
		const char *tag, *cc, *flags;
	} v[] = {
		{ "gcc_omit_fp", "cc", "-O2 -fomit-frame-pointer" },
		{ "gcc_fp", "cc", "-O2 -fno-omit-frame-pointer" },
		{ "clang_fp", "clang", "-O2 -fno-omit-frame-pointer" },
	};
	char bin[FIX_PATH];
	struct unwind_row *rows;
	struct cfi_stats st;
	size_t i, n;
	double ms;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		if (strcmp(v[i].cc, "clang") == 0 && run_quiet("clang --version >/dev/null 2>&1") != 0) {
			SKIP("clang fixture", "clang missing");
			continue;
		}
		if (build_fixture(dir, v[i].tag, v[i].cc, v[i].flags, bin, sizeof(bin)) < 0)
			continue;
		rows = compare_file(v[i].tag, bin, NULL, bin, 1u << SECT_EH, &st, &n, &ms);
		if (!rows)
			continue;
		CHECK(st.source == CFI_SRC_EH_FRAME, "%s: rows from .eh_frame only (source %d)", v[i].tag, st.source);
		CHECK(kind_at(bin, "leaf", 0, rows, n) == UNWIND_CFA_RSP, "%s: leaf() is rsp-based", v[i].tag);
		CHECK(kind_at(bin, "_start", 0, rows, n) == UNWIND_CFA_END, "%s: _start is the outermost frame (END)",
		      v[i].tag);
		CHECK(has_kind(rows, n, symbol_addr(bin, "vla"), 64, UNWIND_CFA_RBP),
		      "%s: vla() has rbp-based rows", v[i].tag);
		CHECK(has_kind(rows, n, symbol_addr(bin, "big_stack"), 128, UNWIND_CFA_OTHER) == (i == 0),
		      "%s: big_stack()'s 70000-byte frame is OTHER where the CFA is rsp-based (%s)", v[i].tag,
		      i == 0 ? "it is" : "here rbp-based");
		CHECK(st.rows_other >= (i == 0 ? 1u : 0u), "%s: %zu OTHER rows", v[i].tag, st.rows_other);
		if (i == 0)
			snprintf(omit, cap, "%s", bin);
		free(rows);
	}
}

/* A fixture with .debug_frame for its own code (-fno-asynchronous-unwind-tables -g): its .eh_frame holds
 * only what crt files bring; the .debug_frame fills the rest. Then the same split into a binary without
 * any CFI and a separate debug file, plain and with the debug sections compressed. */
static void test_debug_frame(const char *dir)
{
	char bin[FIX_PATH], bare[FIX_PATH + 8], dbg[FIX_PATH + 8], zdbg[FIX_PATH + 8];
	struct unwind_row *rows;
	struct cfi_stats st;
	size_t n;
	double ms;
	int rc;

	if (build_fixture(dir, "debug_frame", "cc", "-O2 -fno-asynchronous-unwind-tables -g", bin, sizeof(bin)) < 0)
		return;
	CHECK(run_quiet("readelf -S '%s' 2>/dev/null | grep -q ' .debug_frame'", bin) == 0,
	      "debug_frame: the fixture has .debug_frame");
	rows = compare_file("debug_frame", bin, NULL, bin, 1u << SECT_EH | 1u << SECT_DEBUG, &st, &n, &ms);
	if (rows) {
		CHECK(st.source == (CFI_SRC_EH_FRAME | CFI_SRC_DEBUG_FRAME), "debug_frame: rows from both "
		      "sections (source %d)", st.source);
		CHECK(kind_at(bin, "leaf", 0, rows, n) == UNWIND_CFA_RSP && kind_at(bin, "main", 0, rows, n) ==
		      UNWIND_CFA_RSP, "debug_frame: leaf() and main() have rows (from .debug_frame)");
		CHECK(has_kind(rows, n, symbol_addr(bin, "vla"), 64, UNWIND_CFA_RBP), "debug_frame: vla() has rbp-based "
		      "rows");
		free(rows);
	}

	snprintf(bare, sizeof(bare), "%s.bare", bin);
	snprintf(dbg, sizeof(dbg), "%s.debug", bin);
	snprintf(zdbg, sizeof(zdbg), "%s.zdebug", bin);
	if (run("objcopy --only-keep-debug '%s' '%s' && objcopy --compress-debug-sections=zlib '%s' '%s' && "
		"objcopy --strip-debug --remove-section .eh_frame --remove-section .eh_frame_hdr '%s' '%s'",
		bin, dbg, dbg, zdbg, bin, bare) != 0) {
		CHECK(0, "debug_frame: split into a binary without CFI and a debug file");
		return;
	}
	rc = build_path(bare, NULL, UNWIND_MAX_ROWS, &rows, &n, &st);
	CHECK(rc == -ENOENT, "debug_frame: the stripped binary alone has no CFI (-ENOENT, got %d)", rc);
	if (rc == 0)
		free(rows);
	rows = compare_file("separate debug file", bare, dbg, dbg, 1u << SECT_DEBUG, &st, &n, &ms);
	if (rows) {
		CHECK(st.source == CFI_SRC_DEBUG_FRAME, "separate debug file: rows from its .debug_frame (source %d)",
		      st.source);
		free(rows);
	}
	CHECK(run_quiet("readelf -SW '%s' 2>/dev/null | grep ' .debug_frame' | grep -q ' C '", zdbg) == 0,
	      "compressed debug file: its .debug_frame is SHF_COMPRESSED");
	rows = compare_file("compressed debug file", bare, zdbg, dbg, 1u << SECT_DEBUG, &st, &n, &ms);
	free(rows);
	rc = build_path(bare, bare, UNWIND_MAX_ROWS, &rows, &n, &st);
	CHECK(rc == -ENOENT, "debug_frame: a debug file without CFI gives -ENOENT (%d)", rc);
	if (rc == 0)
		free(rows);
}

/* The hand-written CFI: every row against readelf; the rules the BPF side cannot follow are OTHER. */
static void test_asm(const char *dir)
{
	char src[FIX_PATH], bin[FIX_PATH];
	struct unwind_row *rows;
	struct cfi_stats st;
	size_t n;
	double ms;

	snprintf(src, sizeof(src), "%s/frames.S", dir);
	snprintf(bin, sizeof(bin), "%s/fix_asm", dir);
	if (write_file(src, asm_src, sizeof(asm_src) - 1) < 0 ||
	    run("cc -nostdlib -static -Wl,--build-id=none -o '%s' '%s'", bin, src) != 0) {
		CHECK(0, "asm: fixture built with cc -nostdlib -static");
		return;
	}
	rows = compare_file("asm", bin, NULL, bin, 1u << SECT_EH, &st, &n, &ms);
	if (!rows)
		return;
	CHECK(kind_at(bin, "_start", 0, rows, n) == UNWIND_CFA_END, "asm: _start (rip undefined) is END");
	CHECK(kind_at(bin, "f_remember", 4, rows, n) == UNWIND_CFA_RBP && kind_at(bin, "f_remember", 13, rows, n) ==
	      UNWIND_CFA_RBP, "asm: f_remember is rbp-based after restore_state too");
	CHECK(kind_at(bin, "f_other", 3, rows, n) == UNWIND_CFA_OTHER, "asm: CFA in rdi, rip in rdx: OTHER");
	CHECK(kind_at(bin, "f_sig", 0, rows, n) == UNWIND_CFA_OTHER, "asm: a signal frame is OTHER");
	CHECK(kind_at(bin, "f_rbp_in_r9", 3, rows, n) == UNWIND_CFA_RSP &&
	      UNWIND_RBP_KIND(cfi_lookup(rows, n, symbol_addr(bin, "f_rbp_in_r9") + 3)->kinds) == UNWIND_RBP_OTHER,
	      "asm: rbp kept in r9 is rbp OTHER, the CFA still rsp-based");
	CHECK(st.rows_other == 3, "asm: 3 OTHER rows (%zu)", st.rows_other);
	free(rows);
}

/* ---- bad input ---- */

/* cfi_build on the file at path; only the result matters. */
static int build_result(const char *path, const char *debug, size_t max)
{
	struct unwind_row *rows = NULL;
	struct cfi_stats st;
	size_t n = 0;
	int rc = build_path(path, debug, max, &rows, &n, &st);

	if (rc == 0)
		free(rows);
	return rc;
}

/* Writes len bytes of img into dir/name (path into out). Returns 0 or -1. */
static int write_copy(const char *dir, const char *name, const void *img, size_t len, char *out, size_t cap)
{
	snprintf(out, cap, "%s/%s", dir, name);
	return write_file(out, img, len);
}

/* The section header of name in a 64-bit little-endian ELF image. Returns true when found. */
static bool shdr_named(const unsigned char *img, size_t len, const char *name, Elf64_Shdr *out)
{
	const Elf64_Ehdr *eh = (const void *)img;
	Elf64_Shdr sh, strs;
	size_t i;

	if (len < sizeof(*eh) || eh->e_shentsize != sizeof(sh) || eh->e_shstrndx >= eh->e_shnum ||
	    eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(sh) > len)
		return false;
	memcpy(&strs, img + eh->e_shoff + eh->e_shstrndx * sizeof(sh), sizeof(sh));
	for (i = 1; i < eh->e_shnum; i++) {
		memcpy(&sh, img + eh->e_shoff + i * sizeof(sh), sizeof(sh));
		if (strs.sh_offset + sh.sh_name + strlen(name) + 1 <= len &&
		    strcmp((const char *)img + strs.sh_offset + sh.sh_name, name) == 0) {
			*out = sh;
			return true;
		}
	}
	return false;
}

/* Empty, not ELF, truncated, another machine, a relocatable object, no CFI, NULL arguments. */
static void test_bad_input(const char *dir, const char *fixture)
{
	static const char text[] = "#!/bin/sh\necho not an ELF file\n";
	struct unwind_row *rows = NULL;
	unsigned char *img, *copy;
	char path[PATH_MAX], obj[PATH_MAX];
	size_t len = 0, i, n = 0, cuts[] = { 4, 63, 64, 1000, 0, 0 }, bad = 0;
	Elf64_Ehdr eh;
	int rc;

	write_copy(dir, "empty", "", 0, path, sizeof(path));
	CHECK(build_result(path, NULL, 1000) == -EINVAL, "bad input: an empty file is -EINVAL");
	write_copy(dir, "text", text, sizeof(text) - 1, path, sizeof(path));
	CHECK(build_result(path, NULL, 1000) == -EINVAL, "bad input: a shell script is -EINVAL");
	CHECK(build_result(dir, NULL, 1000) == -EINVAL, "bad input: a directory is -EINVAL");
	CHECK(cfi_build(-1, -1, 1000, &rows, &n, NULL) == -EBADF, "bad input: fd -1 is -EBADF");
	CHECK(cfi_build(0, -1, 1000, NULL, &n, NULL) == -EINVAL, "bad input: NULL rows is -EINVAL");

	img = read_all(fixture, &len);
	CHECK(img && len > 4096, "bad input: read the fixture (%zu bytes)", len);
	if (!img || len <= 4096) {
		free(img);
		return;
	}
	cuts[4] = len / 2;
	cuts[5] = len - 1;
	for (i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		write_copy(dir, "trunc", img, cuts[i], path, sizeof(path));
		rc = build_result(path, NULL, UNWIND_MAX_ROWS);
		if (rc != -EINVAL && bad++ < SHOW)
			printf("# truncated to %zu bytes: %d\n", cuts[i], rc);
	}
	CHECK(bad == 0, "bad input: copies truncated to 4, 63, 64, 1000, half and all but 1 bytes are -EINVAL");

	copy = malloc(len);
	if (copy) {
		memcpy(&eh, img, sizeof(eh));
		eh.e_machine = EM_AARCH64;
		memcpy(copy, img, len);
		memcpy(copy, &eh, sizeof(eh));
		write_copy(dir, "aarch64", copy, len, path, sizeof(path));
		CHECK(build_result(path, NULL, 1000) == -ENOTSUP, "bad input: e_machine EM_AARCH64 is -ENOTSUP");
		free(copy);
	}
	free(img);
	snprintf(obj, sizeof(obj), "%s/fixture.o", dir);
	if (run("cc -O2 -c -o '%s' '%s/fixture.c'", obj, dir) == 0)
		CHECK(build_result(obj, NULL, 1000) == -ENOTSUP, "bad input: a relocatable object is -ENOTSUP");
	snprintf(obj, sizeof(obj), "%s/fixture32.o", dir);
	if (run_quiet("echo 'int f(int x) { return x + 1; }' | cc -m32 -O2 -x c -c -o '%s' - 2>/dev/null", obj) == 0)
		CHECK(build_result(obj, NULL, 1000) == -ENOTSUP, "bad input: a 32-bit object is -ENOTSUP");
	else
		SKIP("bad input: 32-bit object", "cc -m32 cannot build one");
	snprintf(obj, sizeof(obj), "%s/fix_nocfi", dir);
	if (run("cc -O2 -fno-asynchronous-unwind-tables -fno-unwind-tables -o '%s' '%s/fixture.c' && "
		"objcopy --remove-section .eh_frame --remove-section .eh_frame_hdr '%s'", obj, dir, obj) == 0) {
		CHECK(build_result(obj, NULL, 1000) == -ENOENT, "bad input: an executable without CFI is -ENOENT");
		write_copy(dir, "text", text, sizeof(text) - 1, path, sizeof(path));
		CHECK(build_result(obj, path, 1000) == -EINVAL, "bad input: a debug file that is not ELF is -EINVAL");
		CHECK(build_result(obj, fixture, 1000) == -ENOENT, "bad input: a debug file without .debug_frame is "
		      "-ENOENT");
	}
}

/* max_rows: exactly enough works, one fewer is -E2BIG, 0 is -E2BIG. */
/* A library whose rows cost libdw more than CFI_MAX_WORK in all, at a few hundred bytes per byte of its
 * .eh_frame, as big libraries do (libtorch_cpu; OpenBLAS at 146): 1000 functions of 150 push/pop pairs,
 * each pair two rows of its FDE. It builds, whole; one FDE of tens of thousands of rows stays refused
 * (libdw's work grows with the square of an FDE's rows). */
static void test_work(const char *dir)
{
	char src[FIX_PATH], lib[FIX_PATH];
	struct unwind_row *rows = NULL;
	struct cfi_stats st;
	size_t n = 0;
	FILE *f;
	int rc;

	snprintf(src, sizeof(src), "%s/work.s", dir);
	snprintf(lib, sizeof(lib), "%s/libwork.so", dir);
	f = fopen(src, "w");
	if (!f) {
		CHECK(0, "work: %s written", src);
		return;
	}
	fputs("\t.text\n", f);
	for (int i = 0; i < 1000; i++) {
		fprintf(f, "\t.globl f%d\n\t.type f%d, @function\nf%d:\n\t.cfi_startproc\n", i, i, i);
		for (int k = 0; k < 150; k++)
			fputs("\tpush %rbx\n\t.cfi_adjust_cfa_offset 8\n\tpop %rbx\n\t.cfi_adjust_cfa_offset -8\n", f);
		fprintf(f, "\tret\n\t.cfi_endproc\n\t.size f%d, .-f%d\n", i, i);
	}
	fputs("\t.section .note.GNU-stack,\"\",@progbits\n", f);
	fclose(f);
	if (run_quiet("cc -shared -nostdlib '%s' -o '%s' 2>/dev/null", src, lib) != 0) {
		CHECK(0, "work: the library of 1000 functions builds");
		return;
	}
	rc = build_path(lib, NULL, UNWIND_MAX_ROWS, &rows, &n, &st);
	CHECK(rc == 0 && st.fdes == 1000 && n >= 1000 * 300,
	      "work: 1000 FDEs of 300 rows each, past 2^28 bytes for libdw, build whole (%d, %zu FDEs, %zu rows)", rc,
	      rc ? 0 : st.fdes, n);
	free(rows);
	rows = NULL;

	/* One function of 20000 pairs: 40000 rows of an 80 KB FDE, 3.2 GB for libdw. */
	f = fopen(src, "w");
	if (!f)
		return;
	fputs("\t.text\n\t.globl g\n\t.type g, @function\ng:\n\t.cfi_startproc\n", f);
	for (int k = 0; k < 20000; k++)
		fputs("\tpush %rbx\n\t.cfi_adjust_cfa_offset 8\n\tpop %rbx\n\t.cfi_adjust_cfa_offset -8\n", f);
	fputs("\tret\n\t.cfi_endproc\n\t.size g, .-g\n\t.section .note.GNU-stack,\"\",@progbits\n", f);
	fclose(f);
	if (run_quiet("cc -shared -nostdlib '%s' -o '%s' 2>/dev/null", src, lib) != 0) {
		CHECK(0, "work: the library of one long function builds");
		return;
	}
	rc = build_path(lib, NULL, UNWIND_MAX_ROWS, &rows, &n, NULL);
	CHECK(rc == -E2BIG, "work: one FDE of 40000 rows (40000 bytes for libdw per byte of it) is refused (%d)", rc);
	if (rc == 0)
		free(rows);
}

static void test_limits(const char *fixture)
{
	struct unwind_row *rows = NULL;
	struct cfi_stats st;
	size_t n = 0;
	int rc = build_path(fixture, NULL, UNWIND_MAX_ROWS, &rows, &n, &st);

	CHECK(rc == 0, "limits: the fixture builds (%d)", rc);
	if (rc)
		return;
	free(rows);
	rc = build_path(fixture, NULL, n, &rows, &n, NULL);
	CHECK(rc == 0, "limits: max_rows = %zu (the row count) works (%d)", n, rc);
	if (rc == 0)
		free(rows);
	CHECK(build_result(fixture, NULL, n - 1) == -E2BIG, "limits: max_rows = %zu is -E2BIG", n - 1);
	CHECK(build_result(fixture, NULL, 3) == -E2BIG, "limits: max_rows = 3 is -E2BIG");
	CHECK(build_result(fixture, NULL, 0) == -E2BIG, "limits: max_rows = 0 is -E2BIG");
}

/* cfi_lookup on a small table. */
static void test_lookup(void)
{
	static const struct unwind_row t[] = {
		{ .pc = 0x1000, .kinds = UNWIND_KINDS(UNWIND_CFA_RSP, UNWIND_RBP_SAME), .cfa_off = 8 },
		{ .pc = 0x1004, .kinds = UNWIND_KINDS(UNWIND_CFA_RSP, UNWIND_RBP_CFA), .cfa_off = 16, .rbp_off = -2 },
		{ .pc = 0x1010, .kinds = UNWIND_KINDS(UNWIND_CFA_NONE, UNWIND_RBP_SAME) },
	};

	CHECK(cfi_lookup(t, 3, 0xfff) == NULL && cfi_lookup(t, 0, 0x1000) == NULL, "lookup: below the table, "
	      "or an empty table, is NULL");
	CHECK(cfi_lookup(t, 3, 0x1000) == &t[0] && cfi_lookup(t, 3, 0x1003) == &t[0], "lookup: row 0 covers "
	      "[0x1000, 0x1004)");
	CHECK(cfi_lookup(t, 3, 0x1004) == &t[1] && cfi_lookup(t, 3, 0x100f) == &t[1], "lookup: row 1 covers "
	      "[0x1004, 0x1010)");
	CHECK(cfi_lookup(t, 3, 0x1010) == &t[2] && cfi_lookup(t, 3, UINT64_MAX) == &t[2], "lookup: the last row "
	      "covers the rest");
	CHECK(cfi_lookup(t, 1, 0x5000) == &t[0], "lookup: a one-row table");
}

/* Moves the pc-relative initial location (sdata4) of the FDE at .eh_frame offset fde_off in img by delta. */
static void move_fde(unsigned char *img, const Elf64_Shdr *eh, uint64_t fde_off, int32_t delta)
{
	int32_t v;

	memcpy(&v, img + eh->sh_offset + fde_off + 8, sizeof(v));
	v += delta;
	memcpy(img + eh->sh_offset + fde_off + 8, &v, sizeof(v));
}

/* FDEs moved to overlap others (the .eh_frame_hdr table no longer matches): the output stays sorted and
 * merged, and the same for the same input. The fixture's FDEs are not in address order to begin with. */
static void test_overlaps(const char *dir, const char *fixture)
{
	struct unwind_row *a = NULL, *b = NULL;
	struct cfi_stats st;
	struct dump d = { 0 };
	unsigned char *img;
	char path[PATH_MAX];
	size_t len = 0, i, na = 0, nb = 0, moved = 0, unordered = 0;
	Elf64_Shdr eh;
	int rc;

	img = read_all(fixture, &len);
	if (!img || !shdr_named(img, len, ".eh_frame", &eh) || read_interp(fixture, &d) < 0) {
		CHECK(0, "overlaps: read the fixture and its FDEs");
		free(img);
		dump_free(&d);
		return;
	}
	for (i = 0; i + 1 < d.nfdes; i++)
		unordered += d.fdes[i + 1].lo < d.fdes[i].lo;
	CHECK(unordered > 0, "overlaps: the fixture's .eh_frame lists FDEs out of address order (%zu times)",
	      unordered);
	for (i = 1; i < d.nfdes && moved < 3; i++) { /* each onto the middle of the previous FDE */
		if (d.fdes[i].sect != SECT_EH || d.fdes[i - 1].hi - d.fdes[i - 1].lo < 4)
			continue;
		move_fde(img, &eh, d.fdes[i].off, (int32_t)((int64_t)(d.fdes[i - 1].lo + 2) - (int64_t)d.fdes[i].lo));
		moved++;
	}
	write_copy(dir, "overlap", img, len, path, sizeof(path));
	rc = build_path(path, NULL, UNWIND_MAX_ROWS, &a, &na, &st);
	CHECK(rc == 0, "overlaps: %zu FDEs moved onto others: builds (%d)", moved, rc);
	if (rc == 0) {
		check_invariants("overlaps", a, na);
		CHECK(st.fdes_dropped >= 1, "overlaps: overlapping FDEs dropped (%zu)", st.fdes_dropped);
		rc = build_path(path, NULL, UNWIND_MAX_ROWS, &b, &nb, NULL);
		CHECK(rc == 0 && na == nb && memcmp(a, b, na * sizeof(*a)) == 0, "overlaps: the same rows again");
	}
	free(a);
	free(b);
	free(img);
	dump_free(&d);
}

/* Writes img with byte at off set to v as dir/name and builds it. Returns cfi_build's result. */
static int build_patched(const char *dir, const char *name, const unsigned char *img, size_t len, size_t off,
			 unsigned char v)
{
	unsigned char *copy = malloc(len);
	char path[PATH_MAX];

	if (!copy)
		return -ENOMEM;
	memcpy(copy, img, len);
	copy[off] = v;
	write_copy(dir, name, copy, len, path, sizeof(path));
	free(copy);
	return build_result(path, NULL, UNWIND_MAX_ROWS);
}

/* What libdw must never be handed: an instruction whose operand would lie past its entry (libdw 0.188
 * reads it anyway, past the section's buffer for the last entry), an .eh_frame_hdr table naming something
 * that is not an FDE. */
static void test_guards(const char *dir, const char *fixture)
{
	const struct fde_info *f = NULL;
	struct dump d = { 0 };
	unsigned char *img;
	Elf64_Shdr eh, hdr;
	size_t len = 0, i, last = 0;
	uint32_t ptr;
	int rc;

	img = read_all(fixture, &len);
	if (!img || !shdr_named(img, len, ".eh_frame", &eh) || !shdr_named(img, len, ".eh_frame_hdr", &hdr) ||
	    read_interp(fixture, &d) < 0) {
		CHECK(0, "guards: read the fixture and its FDEs");
		free(img);
		dump_free(&d);
		return;
	}
	for (i = 0; i < d.nfdes && !f; i++) { /* an FDE ending in DW_CFA_nop padding */
		last = eh.sh_offset + d.fdes[i].off + 4 + d.fdes[i].len - 1;
		if (d.fdes[i].sect == SECT_EH && last < len && img[last] == 0)
			f = &d.fdes[i];
	}
	CHECK(f != NULL, "guards: an FDE ends in DW_CFA_nop");
	if (f) {
		CHECK(build_patched(dir, "guard", img, len, last, 0) == 0, "guards: the unpatched copy builds");
		rc = build_patched(dir, "guard", img, len, last, 0x0e);
		CHECK(rc == -EINVAL, "guards: DW_CFA_def_cfa_offset without its operand at an FDE's end is -EINVAL (%d)",
		      rc);
		rc = build_patched(dir, "guard", img, len, last, 0x0f);
		CHECK(rc == -EINVAL, "guards: DW_CFA_def_cfa_expression without its block is -EINVAL (%d)", rc);
	}
	memcpy(&ptr, img + hdr.sh_offset + 16, sizeof(ptr)); /* the first table entry's FDE pointer */
	rc = build_patched(dir, "guard", img, len, hdr.sh_offset + 16, (unsigned char)(ptr + 1));
	CHECK(img[hdr.sh_offset + 3] == 0x3b && rc == -EINVAL, "guards: an .eh_frame_hdr entry naming no FDE is "
	      "-EINVAL (%d)", rc);
	free(img);
	dump_free(&d);
}

/* Changes random bytes of .eh_frame, .eh_frame_hdr and the headers in copies of the fixture: each build
 * returns a documented result, and rows that come back keep their invariants. */
static void test_corrupt(const char *dir, const char *fixture)
{
	static const int ok[] = { 0, -EINVAL, -ENOENT, -E2BIG, -ENOTSUP };
	unsigned char *img, *copy;
	struct unwind_row *rows;
	Elf64_Shdr eh, hdr;
	char path[PATH_MAX];
	uint64_t seed = 42, lo, span;
	size_t len = 0, i, j, n, odd = 0, unsorted = 0, built = 0;
	int rc, k;
	bool known;

	img = read_all(fixture, &len);
	copy = img ? malloc(len) : NULL;
	if (!copy || !shdr_named(img, len, ".eh_frame", &eh) || !shdr_named(img, len, ".eh_frame_hdr", &hdr)) {
		CHECK(0, "corrupt: read the fixture's .eh_frame");
		free(img);
		free(copy);
		return;
	}
	lo = hdr.sh_offset < eh.sh_offset ? hdr.sh_offset : eh.sh_offset;
	span = eh.sh_offset + eh.sh_size - lo;
	for (i = 0; i < CORRUPT_ROUNDS; i++) {
		memcpy(copy, img, len);
		for (j = 0; j < 4; j++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			copy[j == 0 && i % 10 == 0 ? (seed >> 33) % 64 : lo + (seed >> 33) % span] = (unsigned char)(seed >> 17);
		}
		write_copy(dir, "corrupt", copy, len, path, sizeof(path));
		rows = NULL;
		rc = build_path(path, NULL, UNWIND_MAX_ROWS, &rows, &n, NULL);
		for (known = false, k = 0; k < (int)(sizeof(ok) / sizeof(ok[0])); k++)
			known |= rc == ok[k];
		odd += !known;
		if (rc == 0) {
			built++;
			for (j = 1; j < n; j++)
				unsorted += rows[j].pc <= rows[j - 1].pc;
			unsorted += UNWIND_CFA_KIND(rows[n - 1].kinds) != UNWIND_CFA_NONE;
			free(rows);
		}
	}
	CHECK(odd == 0, "corrupt: %d copies with 4 bytes changed give documented results (%zu do not)",
	      CORRUPT_ROUNDS, odd);
	CHECK(unsorted == 0, "corrupt: the %zu tables built are sorted and end NONE (%zu faults)", built, unsorted);
	free(img);
	free(copy);
}

/* ---- system binaries ---- */

/* Compares path's rows with readelf, and prints the numbers for the closing note (best of 3 builds). */
static void test_system(const char *tag, const char *path)
{
	struct unwind_row *rows, *again;
	struct cfi_stats st;
	size_t n, n2;
	double ms, best, t0;
	int i;

	if (access(path, R_OK) != 0) {
		SKIP(tag, "missing on this machine");
		return;
	}
	rows = compare_file(tag, path, NULL, path, 1u << SECT_EH, &st, &n, &ms);
	if (!rows)
		return;
	best = ms;
	for (i = 0; i < 2; i++) {
		t0 = now_ms();
		if (build_path(path, NULL, UNWIND_MAX_ROWS, &again, &n2, NULL) == 0) {
			free(again);
			if (now_ms() - t0 < best)
				best = now_ms() - t0;
		}
	}
	printf("# %s: %zu FDEs -> %zu rows, %zu OTHER (%.3f%%), %zu bytes of table (rows * %zu); "
	       "build %.1f ms (best of 3; first %.1f ms)\n", tag, st.fdes, n, st.rows_other,
	       100.0 * (double)st.rows_other / (double)n, n * sizeof(*rows), sizeof(*rows), best, ms);
	CHECK(st.source == CFI_SRC_EH_FRAME && st.fdes_dropped == 0, "%s: all %zu FDEs from .eh_frame kept "
	      "(%zu dropped)", tag, st.fdes, st.fdes_dropped);
	free(rows);
}

int main(void)
{
	char dir[] = "/tmp/test_cfi.XXXXXX", src[FIX_PATH], omit[FIX_PATH] = "";

	if (!mkdtemp(dir)) {
		CHECK(0, "test setup: %s", strerror(errno));
		return CHECK_EXIT();
	}
	test_lookup();
	snprintf(src, sizeof(src), "%s/fixture.c", dir);
	if (run("cc --version >/dev/null 2>&1 && objcopy --version >/dev/null 2>&1 && readelf --version >/dev/null "
		"2>&1 && nm --version >/dev/null 2>&1") != 0) {
		SKIP("CFI fixtures", "cc or binutils (objcopy, readelf, nm) missing: apt-get install gcc binutils");
	} else if (write_file(src, fixture_src, sizeof(fixture_src) - 1) < 0) {
		CHECK(0, "fixture source written");
	} else {
		test_fixtures(dir, omit, sizeof(omit));
		test_debug_frame(dir);
		test_asm(dir);
		if (omit[0]) {
			test_bad_input(dir, omit);
			test_limits(omit);
			test_work(dir);
			test_overlaps(dir, omit);
			test_guards(dir, omit);
			test_corrupt(dir, omit);
		}
	}
	if (run_quiet("readelf --version >/dev/null 2>&1") == 0) {
		struct system_python py;

		test_system("libc", LIBC);
		system_python(&py); /* its rows whatever its version: the CFI is the compiler's, not CPython's */
		test_system(py.name, py.path);
	}
	run("rm -rf -- '%s'", dir);
	return CHECK_EXIT();
}
