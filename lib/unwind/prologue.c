/* prologue.c - unwind rows for functions no CFI covers (assembly kernels), read from their prologues. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "elf/elf_file.h"
#include "unwind/cfi.h"
#include "unwind/prologue.h"

#define MAX_FRAME 0x7ff8 /* bytes: a CFA offset must fit the row's int16 */

/* What the decoder knows after each instruction. */
struct frame {
	int64_t cfa_off;  /* CFA = rsp + cfa_off (or rbp + cfa_off, on_rbp) */
	int64_t rbp_at;   /* rbp saved at CFA + rbp_at (rbp_saved) */
	bool rbp_saved, on_rbp;
};

static struct unwind_row frame_row(const struct frame *f, uint64_t pc)
{
	return (struct unwind_row){ .pc = (__u32)pc, .cfa_off = (__s16)f->cfa_off,
				    .kinds = UNWIND_KINDS(f->on_rbp ? UNWIND_CFA_RBP : UNWIND_CFA_RSP,
							  f->rbp_saved ? UNWIND_RBP_CFA : UNWIND_RBP_SAME),
				    .rbp_off = f->rbp_saved ? (__s8)(f->rbp_at / 8) : 0 };
}

/* The signed 32-bit little-endian immediate or displacement at p. */
static int32_t imm32(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

/* rbp saved at rsp + disp: kept where the row can say it (a multiple of 8 within int8 * 8). */
static void save_rbp(struct frame *f, int64_t disp)
{
	int64_t at = disp - f->cfa_off;

	if (!f->rbp_saved && at % 8 == 0 && at <= -16 && at / 8 >= -128) { /* below the return address */
		f->rbp_saved = true;
		f->rbp_at = at;
	}
}

/* Length of `mov %reg, disp(%rsp)` (REX.W 89 /r with an rsp base and no index) at c, its register in
 * *reg and displacement in *disp; 0 when c holds no such instruction. */
static size_t store_to_rsp(const uint8_t *c, size_t left, int *reg, int64_t *disp)
{
	uint8_t modrm;

	if (left < 4 || (c[0] & 0xf8) != 0x48 || (c[0] & 0x3) || c[1] != 0x89 || c[3] != 0x24)
		return 0; /* REX.W, optionally R (no X, no B), opcode 89, SIB base rsp without index */
	modrm = c[2];
	*reg = ((modrm >> 3) & 7) | (c[0] & 4 ? 8 : 0);
	if ((modrm & 0xc7) == 0x04) {
		*disp = 0;
		return 4;
	}
	if ((modrm & 0xc7) == 0x44 && left >= 5) {
		*disp = (int8_t)c[4];
		return 5;
	}
	if ((modrm & 0xc7) == 0x84 && left >= 8) {
		*disp = imm32(c + 4);
		return 8;
	}
	return 0;
}

/* Length of an instruction at c that moves neither rsp nor rbp and may sit among a prologue's: a move
 * between registers (REX.W 89 or 8b, register operands, neither written one rsp nor rbp), vzeroupper,
 * xor of 32-bit registers (31 or 33, register operands, optionally REX); 0 for anything else. */
static size_t harmless(const uint8_t *c, size_t left)
{
	int dst;

	if (left >= 3 && (c[0] & 0xf8) == 0x48 && (c[1] == 0x89 || c[1] == 0x8b) && (c[2] & 0xc0) == 0xc0) {
		dst = c[1] == 0x89 ? (c[2] & 7) | (c[0] & 1 ? 8 : 0) : ((c[2] >> 3) & 7) | (c[0] & 4 ? 8 : 0);
		return dst == 4 || dst == 5 ? 0 : 3;
	}
	if (left >= 3 && c[0] == 0xc5 && c[1] == 0xf8 && c[2] == 0x77)
		return 3;
	if (left >= 2 && (c[0] == 0x31 || c[0] == 0x33) && (c[1] & 0xc0) == 0xc0 && (c[1] & 7) != 4 && (c[1] & 7) != 5 &&
	    ((c[1] >> 3) & 7) != 4 && ((c[1] >> 3) & 7) != 5)
		return 2;
	if (left >= 3 && (c[0] & 0xf0) == 0x40 && !(c[0] & 8) && (c[1] == 0x31 || c[1] == 0x33) && (c[2] & 0xc0) == 0xc0)
		return 3; /* r8d-r15d: rsp and rbp are not among them when REX.R or REX.B is set, else as above */
	return 0;
}

/* Whether the function's last bytes tail[0..len) end in an epilogue that undoes the frame f describes:
 * `ret` (trailing nop and int3 padding skipped) after, from the end back: vzeroupper; pops; one
 * `add $N, %rsp` (what comes before it, such as OpenBLAS's loads of its saved registers, is not read).
 * On rsp, the pops and the add must free what the prologue took (cfa_off - 8); on rbp, `leave` or
 * `pop %rbp` must come last. A prologue cut short (an instruction the decoder stops at before the frame is whole) fails
 * this, as does a function ending otherwise (a tail call, ud2): their rows are not guessed. */
static bool epilogue_matches(const uint8_t *tail, size_t len, const struct frame *f)
{
	size_t p = len;
	int64_t freed = 0;
	bool added = false, last_rbp = false, first = true;

	while (p > 0 && (tail[p - 1] == 0x90 || tail[p - 1] == 0xcc))
		p--;
	if (p == 0 || tail[p - 1] != 0xc3)
		return false;
	p--;
	if (p >= 3 && tail[p - 3] == 0xc5 && tail[p - 2] == 0xf8 && tail[p - 1] == 0x77)
		p -= 3;
	if (p >= 1 && tail[p - 1] == 0xc9)
		return f->on_rbp; /* leave */
	for (;;) {
		const uint8_t *t = tail + p;

		if (!added && p >= 2 && t[-2] == 0x41 && (t[-1] & 0xf8) == 0x58) {
			p -= 2, freed += 8; /* pop %r8-%r15 */
		} else if (!added && p >= 1 && (t[-1] & 0xf8) == 0x58 && t[-1] != 0x5c) {
			last_rbp |= first && t[-1] == 0x5d;
			p -= 1, freed += 8; /* pop %r64 */
		} else if (!added && p >= 4 && t[-4] == 0x48 && t[-3] == 0x83 && t[-2] == 0xc4 && !(t[-1] & 0x80)) {
			p -= 4, freed += t[-1], added = true; /* add $imm8, %rsp */
		} else if (!added && p >= 7 && t[-7] == 0x48 && t[-6] == 0x81 && t[-5] == 0xc4) {
			p -= 7, freed += imm32(t - 4), added = true; /* add $imm32, %rsp */
		} else {
			break;
		}
		first = false;
		if (freed > MAX_FRAME)
			return false;
	}
	if (f->on_rbp)
		return last_rbp;
	return freed == f->cfa_off - 8;
}

size_t prologue_decode(const uint8_t *code, size_t len, const uint8_t *tail, size_t tail_len, uint64_t lo,
		       struct unwind_row *rows)
{
	struct frame f = { .cfa_off = 8 };
	size_t i = 0, n = 0, step;
	int64_t disp, grow;
	int reg;

	if (len > PROLOGUE_MAX_BYTES)
		len = PROLOGUE_MAX_BYTES;
	rows[n++] = frame_row(&f, lo);
	while (i < len && !f.on_rbp && n < PROLOGUE_MAX_ROWS) {
		const uint8_t *c = code + i;
		size_t left = len - i;

		grow = 0;
		if (left >= 4 && c[0] == 0xf3 && c[1] == 0x0f && c[2] == 0x1e && c[3] == 0xfa) {
			step = 4; /* endbr64 */
		} else if ((c[0] & 0xf8) == 0x50) {
			step = 1, grow = 8; /* push %r64 */
			if (c[0] == 0x55)
				save_rbp(&f, -8);
		} else if (left >= 2 && c[0] == 0x41 && (c[1] & 0xf8) == 0x50) {
			step = 2, grow = 8; /* push %r8-%r15 */
		} else if (left >= 4 && c[0] == 0x48 && c[1] == 0x83 && c[2] == 0xec) {
			step = 4, grow = (int8_t)c[3]; /* sub $imm8, %rsp */
		} else if (left >= 7 && c[0] == 0x48 && c[1] == 0x81 && c[2] == 0xec) {
			step = 7, grow = imm32(c + 3); /* sub $imm32, %rsp */
		} else if (left >= 3 && c[0] == 0x48 && ((c[1] == 0x89 && c[2] == 0xe5) || (c[1] == 0x8b && c[2] == 0xec))) {
			if (!f.rbp_saved)
				break; /* a frame pointer over an unsaved rbp: not a frame this decoder knows */
			step = 3; /* mov %rsp, %rbp: the CFA is rbp + what it was on rsp, from here on */
			f.on_rbp = true;
			rows[n++] = frame_row(&f, lo + i + step);
			break;
		} else if (left >= 4 && c[0] == 0x48 && (c[1] == 0x83 || c[1] == 0x81) && c[2] == 0xe4) {
			return 0; /* and $N, %rsp: aligned by an amount unknown here */
		} else if ((step = harmless(c, left)) != 0) {
			/* an instruction that leaves rsp and rbp alone: decoding goes on */
		} else if ((step = store_to_rsp(c, left, &reg, &disp)) != 0) {
			/* a callee-saved register kept in the frame: only rbp's place matters to the rows */
			if (reg == 5 && !f.rbp_saved) {
				save_rbp(&f, disp);
				if (f.rbp_saved)
					rows[n++] = frame_row(&f, lo + i + step);
			}
		} else {
			break;
		}
		if (grow < 0 || f.cfa_off + grow > MAX_FRAME)
			return 0;
		i += step;
		if (grow) {
			f.cfa_off += grow;
			rows[n++] = frame_row(&f, lo + i);
		}
	}
	return epilogue_matches(tail, tail_len, &f) ? n : 0; /* each row past the instruction before it */
}

/* One function no row covers: [lo, hi). */
struct func {
	uint64_t lo, hi;
};

static int by_lo(const void *a, const void *b)
{
	const struct func *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo ? 1 : x->hi < y->hi ? -1 : x->hi > y->hi;
}

/* Whether no row covers [lo, hi): the row at lo (if any) is UNWIND_CFA_NONE and none starts inside. */
static bool uncovered(const struct unwind_row *rows, size_t n, uint64_t lo, uint64_t hi)
{
	const struct unwind_row *r = cfi_lookup(rows, n, lo);
	size_t next = r ? (size_t)(r - rows) + 1 : 0;

	if (r && UNWIND_CFA_KIND(r->kinds) != UNWIND_CFA_NONE)
		return false;
	return next >= n || rows[next].pc >= hi;
}

/* Appends the function symbols of one table (.symtab or .dynsym) that no row covers to *fs.
 * Returns 0, -EINVAL or -ENOMEM. */
static int gather(const struct elf_file *ef, uint32_t type, const struct unwind_row *rows, size_t n,
		  struct func **fs, size_t *nf, size_t *cap)
{
	GElf_Shdr sh;
	GElf_Sym sym;
	Elf_Scn *scn;
	Elf_Data *data;
	struct func *nv;

	if (elf_file_find_section(ef, type, &scn, &sh) < 0)
		return 0;
	if (elf_file_section_data(ef, scn, &sh, &data) < 0)
		return -EINVAL;
	for (int i = 1; i < INT32_MAX && *nf < PROLOGUE_MAX_FUNCS && gelf_getsym(data, i, &sym); i++) {
		uint64_t lo = sym.st_value, hi = lo + sym.st_size;

		if (GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF || sym.st_size == 0 ||
		    hi < lo || hi > UINT32_MAX || !uncovered(rows, n, lo, hi) ||
		    elf_file_vaddr_loaded(ef, lo, sym.st_size, PF_X) < 0)
			continue;
		if (*nf == *cap) {
			size_t c = *cap ? *cap * 2 : 256;

			nv = realloc(*fs, c * sizeof(*nv));
			if (!nv)
				return -ENOMEM;
			*fs = nv;
			*cap = c;
		}
		(*fs)[(*nf)++] = (struct func){ lo, hi };
	}
	return 0;
}

/* Appends row to out (room for it checked by the caller), merged into the last one when their rules
 * are equal, replacing it when at the same pc. */
static void put(struct unwind_row *out, size_t *k, struct unwind_row row)
{
	if (*k > 0 && out[*k - 1].pc == row.pc)
		(*k)--;
	if (*k > 0 && cfi_same_rule(&out[*k - 1], &row))
		return;
	out[(*k)++] = row;
}

/* prologue_decode of f (its first len bytes in code), its epilogue looked for at each `ret` inside the
 * function, from its end back, up to PROLOGUE_MAX_RETS of them, in a function of at most
 * PROLOGUE_MAX_BODY bytes. Returns how many rows, or 0. */
static size_t decode_inside(const struct elf_file *ef, const struct func *f, const uint8_t *code, size_t len,
			    struct unwind_row *pro)
{
	size_t size = f->hi - f->lo, np = 0;
	unsigned rets = 0;
	uint8_t *body;

	if (size > PROLOGUE_MAX_BODY || !(body = malloc(size)))
		return 0;
	if (elf_file_read_vaddr(ef, f->lo, body, size) == 0) {
		for (size_t i = size; i-- > 0 && !np && rets < PROLOGUE_MAX_RETS;) {
			size_t from = i + 1 > PROLOGUE_MAX_BYTES ? i + 1 - PROLOGUE_MAX_BYTES : 0;

			if (body[i] != 0xc3)
				continue;
			rets++;
			np = prologue_decode(code, len, body + from, i + 1 - from, f->lo, pro);
		}
	}
	free(body);
	return np;
}

int prologue_fill(const struct elf_file *ef, struct unwind_row **rows, size_t *n, size_t max_rows)
{
	return prologue_fill_ex(ef, rows, n, max_rows, 0);
}

int prologue_fill_ex(const struct elf_file *ef, struct unwind_row **rows, size_t *n, size_t max_rows, unsigned flags)
{
	struct unwind_row pro[PROLOGUE_MAX_ROWS], *out = NULL, *in = *rows;
	struct func *fs = NULL;
	size_t nf = 0, cap = 0, kept = 0, k = 0, r = 0;
	uint64_t end = 0;
	uint8_t code[PROLOGUE_MAX_BYTES], tail[PROLOGUE_MAX_BYTES];
	int err;

	err = gather(ef, SHT_SYMTAB, in, *n, &fs, &nf, &cap);
	if (!err)
		err = gather(ef, SHT_DYNSYM, in, *n, &fs, &nf, &cap);
	if (err || nf == 0)
		goto out;
	qsort(fs, nf, sizeof(*fs), by_lo);
	out = malloc((*n + nf * (PROLOGUE_MAX_ROWS + 1)) * sizeof(*out));
	if (!out) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nf; i++) {
		const struct func *f = &fs[i];
		size_t len = f->hi - f->lo < PROLOGUE_MAX_BYTES ? f->hi - f->lo : PROLOGUE_MAX_BYTES, np;
		bool overlaps = f->lo < end;

		if (f->hi > end)
			end = f->hi;
		if (overlaps)
			continue; /* an alias (.symtab and .dynsym both name it), or overlapping ones: the first */
		if (elf_file_read_vaddr(ef, f->lo, code, len) < 0 || elf_file_read_vaddr(ef, f->hi - len, tail, len) < 0)
			continue;
		np = prologue_decode(code, len, tail, len, f->lo, pro);
		if (!np && (flags & PROLOGUE_EPILOGUE_INSIDE))
			np = decode_inside(ef, f, code, len, pro);
		if (!np)
			continue;
		while (r < *n && in[r].pc <= f->lo)
			put(out, &k, in[r++]);
		for (size_t j = 0; j < np; j++)
			put(out, &k, pro[j]);
		if (r >= *n || in[r].pc > f->hi)
			put(out, &k, (struct unwind_row){ .pc = (__u32)f->hi,
							  .kinds = UNWIND_KINDS(UNWIND_CFA_NONE, UNWIND_RBP_SAME) });
		kept++;
	}
	while (r < *n)
		put(out, &k, in[r++]);
	if (kept == 0)
		goto out;
	if (k > max_rows) {
		err = -E2BIG;
		goto out;
	}
	free(*rows);
	*rows = out;
	*n = k;
	out = NULL;
	err = (int)kept;
out:
	free(out);
	free(fs);
	return err;
}
