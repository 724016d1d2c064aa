/* pyelf.c - finds a CPython interpreter's version, eval loop (with its .cold part), runtime state and perf
 * trampoline in its ELF file, from .dynsym, sections and segments (and a .symtab when there is one). */
#include "python/pyelf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "elf/elf_file.h"
#include "unwind/cfi.h"

#define PY_MAX_EVAL (16u << 20)  /* bytes of _PyEval_EvalFrameDefault read to look for its .cold part */
#define PY_MAX_FDES (1u << 20)   /* .eh_frame FDEs listed for that */
#define PY_MIN_HITS 3            /* jumps that must land in an FDE for it to be the .cold part */
#define PY_COLD_TRIES 16         /* most-hit FDEs checked for a symbol of their own before giving up */
#define PY_MAX_TRAMP 64          /* bytes between _Py_trampoline_func_start and _end */
#define TAG_CHUNK (64u << 10)    /* bytes of a read-only section scanned at a time for the cache tag */
#define TAG_MAX 16               /* bytes of "\0cpython-XYZ\0" and more: the overlap between chunks */
#define TAG_PREFIX "cpython-"
#define TAG_PREFIX_LEN 8

/* The files whose symbols are looked up: f's .dynsym and .symtab, then debug's .symtab. */
struct py_files {
	const struct elf_file *f, *debug;
};

/* A version read from the file; found says whether it was. */
struct py_version {
	unsigned major, minor, micro;
	uint64_t hex; /* PY_VERSION_HEX, from Py_Version; 0 from a cache tag */
	bool found;
};

/* Looks name up in f's .dynsym, f's .symtab, debug's .symtab. Returns 0, -ENOENT or -EINVAL. */
static int find_sym(const struct py_files *fs, const char *name, GElf_Sym *sym)
{
	int err = elf_file_symbol(fs->f, true, name, sym);

	if (err == -ENOENT)
		err = elf_file_symbol(fs->f, false, name, sym);
	if (err == -ENOENT && fs->debug)
		err = elf_file_symbol(fs->debug, false, name, sym);
	return err;
}

/* 1 when a function symbol of any of the tables find_sym reads starts at vaddr, else 0 or -EINVAL. */
static int func_at(const struct py_files *fs, uint64_t vaddr)
{
	int r = elf_file_func_at(fs->f, true, vaddr);

	if (r == 0)
		r = elf_file_func_at(fs->f, false, vaddr);
	if (r == 0 && fs->debug)
		r = elf_file_func_at(fs->debug, false, vaddr);
	return r;
}

/* True when f is an ELF64 x86-64 file: the layouts and the byte decoding here are for it only. */
static bool is_x86_64(const struct elf_file *f)
{
	return elf_file_machine(f) == EM_X86_64 && elf_file_class(f) == ELFCLASS64;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---- version ---- */

/* Reads Py_Version (3.11+: PY_VERSION_HEX in an unsigned long) into *v. Returns 0, -ENOENT (no symbol)
 * or -EINVAL (not 8 bytes, not in the file's segments, or not a version). */
static int version_symbol(const struct py_files *fs, struct py_version *v)
{
	uint8_t buf[8];
	uint64_t hex;
	GElf_Sym sym;
	int err = find_sym(fs, "Py_Version", &sym);

	if (err)
		return err;
	if (sym.st_size != sizeof(buf) || elf_file_read_vaddr(fs->f, sym.st_value, buf, sizeof(buf)) < 0)
		return -EINVAL;
	hex = le32(buf) | (uint64_t)le32(buf + 4) << 32;
	if (hex > UINT32_MAX || (hex >> 24) == 0)
		return -EINVAL;
	*v = (struct py_version){ .major = (unsigned)(hex >> 24), .minor = (unsigned)((hex >> 16) & 0xff),
				  .micro = (unsigned)((hex >> 8) & 0xff), .hex = hex, .found = true };
	return 0;
}

/* Parses the cache tag "cpython-" digit digit [digit] NUL at p (avail bytes) into *v (micro 0).
 * Returns true when it is one. */
static bool parse_tag(const uint8_t *p, size_t avail, struct py_version *v)
{
	size_t i, n = 0;

	if (avail < TAG_PREFIX_LEN || memcmp(p, TAG_PREFIX, TAG_PREFIX_LEN) != 0)
		return false;
	for (i = TAG_PREFIX_LEN; i < avail && p[i] >= '0' && p[i] <= '9' && n < 4; i++)
		n++;
	if (n < 2 || n > 3 || i >= avail || p[i] != '\0')
		return false;
	p += TAG_PREFIX_LEN;
	v->major = p[0] - '0';
	v->minor = n == 2 ? (unsigned)(p[1] - '0') : (unsigned)((p[1] - '0') * 10 + p[2] - '0');
	v->micro = 0;
	v->hex = 0;
	v->found = true;
	return true;
}

/* Merges tag t into *v: the first one found, or the same again. Returns 0 or -EINVAL (another one). */
static int merge_tag(struct py_version *v, const struct py_version *t)
{
	if (!v->found) {
		*v = *t;
		return 0;
	}
	return v->major == t->major && v->minor == t->minor ? 0 : -EINVAL;
}

/* Scans the len bytes at buf (file bytes from section offset pos) for NUL-delimited cache tags whose
 * delimiting NUL lies in the first scan bytes (the rest overlaps the next chunk). Returns 0 or -EINVAL
 * (two different ones). */
static int scan_tags(const uint8_t *buf, size_t len, size_t scan, uint64_t pos, struct py_version *v)
{
	static const char needle[] = "\0" TAG_PREFIX;
	const uint8_t *p = buf, *q;
	struct py_version t;
	int err = 0;

	if (pos == 0 && parse_tag(buf, len, &t))
		err = merge_tag(v, &t); /* a tag at the start of the section */
	while (!err) {
		q = memmem(p, len - (size_t)(p - buf), needle, sizeof(needle) - 1);
		if (!q || q >= buf + scan)
			break;
		if (parse_tag(q + 1, len - (size_t)(q + 1 - buf), &t))
			err = merge_tag(v, &t);
		p = q + 1;
	}
	return err;
}

/* Scans section sh of f for cache tags, TAG_CHUNK bytes at a time (buf holds TAG_CHUNK + TAG_MAX).
 * Returns 0 or -errno (-EINVAL: two different tags, or the section is not in the file). */
static int section_tags(const struct elf_file *f, const GElf_Shdr *sh, uint8_t *buf, struct py_version *v)
{
	uint64_t pos, left;
	size_t len, scan;
	int err;

	for (pos = 0; pos < sh->sh_size; pos += TAG_CHUNK) {
		left = sh->sh_size - pos;
		len = left < TAG_CHUNK + TAG_MAX ? (size_t)left : TAG_CHUNK + TAG_MAX;
		scan = len < TAG_CHUNK ? len : TAG_CHUNK;
		if (sh->sh_offset > UINT64_MAX - pos)
			return -EINVAL;
		err = elf_file_pread(f, sh->sh_offset + pos, buf, len);
		if (!err)
			err = scan_tags(buf, len, scan, pos, v);
		if (err)
			return err;
	}
	return 0;
}

/* Finds the cache tag "cpython-3X" in f's read-only data sections (allocated PROGBITS, neither writable
 * nor executable). Returns 0 (*v->found says whether one was) or -errno (-EINVAL: different ones). */
static int version_tag(const struct elf_file *f, struct py_version *v)
{
	size_t i, n = elf_file_section_count(f);
	GElf_Shdr sh;
	Elf_Scn *scn;
	uint8_t *buf;
	int err = 0;

	buf = malloc(TAG_CHUNK + TAG_MAX);
	if (!buf)
		return -ENOMEM;
	for (i = 1; i < n && !err; i++) {
		if (elf_file_section(f, i, &scn, &sh) < 0 || sh.sh_type != SHT_PROGBITS ||
		    (sh.sh_flags & (SHF_ALLOC | SHF_WRITE | SHF_EXECINSTR | SHF_COMPRESSED)) != SHF_ALLOC)
			continue;
		err = section_tags(f, &sh, buf, v);
	}
	free(buf);
	return err;
}

/* The version: Py_Version (3.11+), else the cache tag; both must agree on major.minor when both are
 * there. Returns 0, -EINVAL (none, several, or unreadable) or -ENOMEM. */
static int find_version(const struct py_files *fs, struct py_binary *b)
{
	struct py_version sym = { 0 }, tag = { 0 };
	int err = version_symbol(fs, &sym);

	if (err && err != -ENOENT)
		return err;
	err = version_tag(fs->f, &tag);
	if (err)
		return err;
	if (sym.found && tag.found && (sym.major != tag.major || sym.minor != tag.minor))
		return -EINVAL;
	if (!sym.found)
		sym = tag;
	if (!sym.found)
		return -EINVAL;
	b->major = sym.major;
	b->minor = sym.minor;
	b->micro = sym.micro;
	b->hex = sym.hex;
	return 0;
}

/* ---- addresses ---- */

/* Checks sym lies in a PT_LOAD segment with flags: [value, value+size), size 0 taken as 1. Returns 0 or
 * -EINVAL. */
static int sym_loaded(const struct elf_file *f, const GElf_Sym *sym, uint32_t flags)
{
	return elf_file_vaddr_loaded(f, sym->st_value, sym->st_size, flags) == 0 ? 0 : -EINVAL;
}

/* _PyRuntime, _PyEval_EvalFrameDefault (sized, executable, at most PY_MAX_EVAL bytes), PyCode_Type (when
 * there). Returns 0 or -EINVAL. */
static int find_addresses(const struct py_files *fs, const GElf_Sym *runtime, const GElf_Sym *eval,
			  struct py_binary *b)
{
	GElf_Sym code;
	int err;

	if (sym_loaded(fs->f, runtime, 0) < 0 || eval->st_size == 0 || eval->st_size > PY_MAX_EVAL ||
	    sym_loaded(fs->f, eval, PF_X) < 0)
		return -EINVAL;
	b->runtime = runtime->st_value;
	b->eval_start = eval->st_value;
	b->eval_end = eval->st_value + eval->st_size;
	err = find_sym(fs, "PyCode_Type", &code);
	if (err == -ENOENT)
		return 0;
	if (err || sym_loaded(fs->f, &code, 0) < 0)
		return -EINVAL;
	b->code_type = code.st_value;
	return 0;
}

/* ---- the .cold part ---- */

/* The index of the FDE of r (n, sorted) holding addr, or n. */
static size_t fde_of(const struct cfi_range *r, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n, mid;

	while (lo < hi) { /* the first FDE ending after addr */
		mid = lo + (hi - lo) / 2;
		if (r[mid].hi <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && r[lo].lo <= addr ? lo : n;
}

/* Counts, per FDE of r, the jumps out of the eval loop (code: its len bytes at start) landing in it.
 * Every byte offset is tried as a jmp rel32 (e9) or jcc rel32 (0f 80..8f), without decoding
 * instructions: a byte inside another instruction that looks like one sends a chance jump to a random
 * address, mostly outside any FDE, and chance jumps spread over FDEs, while the real ones pile into the
 * .cold part's: choose_cold keeps the most-hit FDE only. rel8 jumps (eb, 7x) are left out: they reach
 * 128 bytes, and GCC puts the .cold part in another section (.text.unlikely). */
static void count_jumps(const uint8_t *code, size_t len, uint64_t start, const struct cfi_range *r,
			size_t n, uint32_t *hits)
{
	uint64_t target, end = start + len;
	size_t i, k, ins;

	for (i = 0; i + 5 <= len; i++) {
		if (code[i] == 0xe9) {
			ins = 5;
		} else if (code[i] == 0x0f && i + 6 <= len && (code[i + 1] & 0xf0) == 0x80) {
			ins = 6;
		} else {
			continue;
		}
		target = start + i + ins + (uint64_t)(int64_t)(int32_t)le32(code + i + ins - 4);
		if (target >= start && target < end)
			continue;
		k = fde_of(r, n, target);
		if (k < n && hits[k] < UINT32_MAX)
			hits[k]++;
	}
}

/* Picks the .cold part among the FDEs of r with their hits: the most hit (at least PY_MIN_HITS) that
 * does not overlap the eval loop and does not start at a function symbol. Returns 0 (*b's cold fields
 * set when one was found) or -EINVAL. */
static int choose_cold(const struct py_files *fs, const struct cfi_range *r, size_t n, uint32_t *hits,
		       struct py_binary *b)
{
	size_t i, best, tries;
	int sym;

	for (i = 0; i < n; i++) {
		if (r[i].lo < b->eval_end && r[i].hi > b->eval_start)
			hits[i] = 0; /* the function's own FDE */
	}
	for (tries = 0; tries < PY_COLD_TRIES; tries++) {
		best = 0;
		for (i = 1; i < n; i++)
			best = hits[i] > hits[best] ? i : best;
		if (n == 0 || hits[best] < PY_MIN_HITS)
			return 0;
		sym = func_at(fs, r[best].lo);
		if (sym < 0)
			return sym;
		if (sym == 0) {
			b->cold_start = r[best].lo;
			b->cold_end = r[best].hi;
			b->cold_source = PY_COLD_JUMPS;
			return 0;
		}
		hits[best] = 0; /* another function, called by a tail jump */
	}
	return 0;
}

/* Finds the .cold part among the n FDEs r from the jumps out of the eval loop. Returns 0 (none found is
 * 0 too) or -errno (-EINVAL: the function's bytes are not in the file). */
static int cold_in_fdes(const struct py_files *fs, const struct cfi_range *r, size_t n, struct py_binary *b)
{
	size_t len = (size_t)(b->eval_end - b->eval_start);
	uint32_t *hits = calloc(n ? n : 1, sizeof(*hits));
	uint8_t *code = malloc(len);
	int err = -ENOMEM;

	if (hits && code) {
		err = elf_file_read_vaddr(fs->f, b->eval_start, code, len);
		if (err == -ENOENT)
			err = -EINVAL;
	}
	if (!err) {
		count_jumps(code, len, b->eval_start, r, n, hits);
		err = choose_cold(fs, r, n, hits, b);
	}
	free(code);
	free(hits);
	return err;
}

/* Finds the .cold part from the jumps out of the eval loop and f's .eh_frame. Returns 0 (none found, or
 * no usable .eh_frame, is 0 too) or -errno (-EINVAL: a corrupt .eh_frame). */
static int cold_from_jumps(const struct py_files *fs, struct py_binary *b)
{
	struct cfi_range *r;
	size_t n;
	int err = cfi_fde_ranges(elf_file_fd(fs->f), PY_MAX_FDES, &r, &n);

	if (err == -ENOENT || err == -E2BIG || err == -ENOTSUP)
		return 0;
	if (err)
		return err;
	err = cold_in_fdes(fs, r, n, b);
	free(r);
	return err;
}

/* Finds the .cold part: its symbol (sized, executable), else from the jumps out of the eval loop.
 * Returns 0 or -errno (-EINVAL: a symbol outside the segments). */
static int find_cold(const struct py_files *fs, struct py_binary *b)
{
	GElf_Sym sym;
	int err = find_sym(fs, "_PyEval_EvalFrameDefault.cold", &sym);

	if (err && err != -ENOENT)
		return err;
	if (!err && sym.st_size > 0) {
		if (sym_loaded(fs->f, &sym, PF_X) < 0)
			return -EINVAL;
		b->cold_start = sym.st_value;
		b->cold_end = sym.st_value + sym.st_size;
		b->cold_source = PY_COLD_SYMBOL;
		return 0;
	}
	return cold_from_jumps(fs, b);
}

/* ---- the perf trampoline ---- */

/* Decodes the trampoline template code (len bytes): [endbr64] then sub $8,%rsp; call *%rcx;
 * add $8,%rsp; ret, or push %rbp; mov %rsp,%rbp; call *%rcx; pop %rbp; ret. Either way, at the call's
 * return address CFA = rsp + 16. Anything else leaves tramp_cfa 0. */
static void decode_trampoline(const uint8_t *code, size_t len, struct py_binary *b)
{
	static const uint8_t endbr[] = { 0xf3, 0x0f, 0x1e, 0xfa };
	static const uint8_t sub[] = { 0x48, 0x83, 0xec, 0x08, 0xff, 0xd1, 0x48, 0x83, 0xc4, 0x08, 0xc3 };
	static const uint8_t push[] = { 0x55, 0x48, 0x89, 0xe5, 0xff, 0xd1, 0x5d, 0xc3 };

	if (len >= sizeof(endbr) && memcmp(code, endbr, sizeof(endbr)) == 0) {
		code += sizeof(endbr);
		len -= sizeof(endbr);
	}
	if (len == sizeof(sub) && memcmp(code, sub, sizeof(sub)) == 0) {
		b->tramp_cfa = 16;
	} else if (len == sizeof(push) && memcmp(code, push, sizeof(push)) == 0) {
		b->tramp_cfa = 16;
		b->tramp_rbp_saved = true;
	}
}

/* Finds the -X perf trampoline (3.12+): both symbols, start below end, at most PY_MAX_TRAMP bytes of
 * loaded code between them. Returns 0 (none: both 0) or -EINVAL. */
static int find_trampoline(const struct py_files *fs, struct py_binary *b)
{
	uint8_t code[PY_MAX_TRAMP];
	GElf_Sym start, end;
	size_t len;
	int err = find_sym(fs, "_Py_trampoline_func_start", &start);

	if (!err)
		err = find_sym(fs, "_Py_trampoline_func_end", &end);
	if (err)
		return err == -ENOENT ? 0 : err;
	if (end.st_value <= start.st_value || end.st_value - start.st_value > PY_MAX_TRAMP)
		return -EINVAL;
	len = (size_t)(end.st_value - start.st_value);
	/* Only a template, copied to new pages for each code object: 3.12 and 3.13 keep it in .text, 3.14
	 * and 3.15 in .rodata. */
	if (elf_file_vaddr_loaded(fs->f, start.st_value, len, 0) < 0 ||
	    elf_file_read_vaddr(fs->f, start.st_value, code, len) < 0)
		return -EINVAL;
	b->tramp_start = start.st_value;
	b->tramp_end = end.st_value;
	decode_trampoline(code, len, b);
	return 0;
}

/* ---- the layout ---- */

/* Whether the interpreter publishes its layout (_Py_DebugOffsets, 3.13+). */
static bool publishes_layout(const struct py_binary *b)
{
	return b->major > 3 || (b->major == 3 && b->minor >= 13);
}

/* Reads the layout from the _Py_DebugOffsets at the start of _PyRuntime (runtime). Returns 0, -ENOTSUP
 * (b->unsupported says why) or -EINVAL (none, or one that lies: b->debug_offsets_refused). */
static int layout_from_runtime(const struct py_files *fs, const GElf_Sym *runtime, struct py_binary *b)
{
	uint8_t buf[PY_DEBUG_OFFSETS_MAX];
	size_t len = runtime->st_size < sizeof(buf) ? (size_t)runtime->st_size : sizeof(buf);
	int err;

	if (!b->hex || elf_file_read_vaddr(fs->f, runtime->st_value, buf, len) < 0) {
		b->debug_offsets_refused = true;
		return -EINVAL;
	}
	err = py_layout_from_debug_offsets(buf, len, b->hex, &b->layout, &b->unsupported);
	if (err == -ENOTSUP)
		return err;
	if (err) {
		b->debug_offsets_refused = true;
		return -EINVAL;
	}
	b->debug_offsets = true;
	return 0;
}

/* The layout: read from the interpreter (3.13+), else compiled in. Returns 0, -ENOTSUP or -EINVAL. */
static int find_layout(const struct py_files *fs, const GElf_Sym *runtime, struct py_binary *b)
{
	const struct py_layout *l;

	if (publishes_layout(b))
		return layout_from_runtime(fs, runtime, b);
	l = py_layout_find(b->major, b->minor);
	if (!l) {
		b->unsupported = PY_UNSUPPORTED_VERSION;
		return -ENOTSUP;
	}
	b->layout = *l;
	return 0;
}

/* ---- all of it ---- */

/* The rest, once the layout is known. Returns 0 or -errno. */
static int inspect_layout(const struct py_files *fs, const GElf_Sym *runtime, const GElf_Sym *eval,
			  struct py_binary *b)
{
	int err = find_addresses(fs, runtime, eval, b);

	if (!err)
		err = find_cold(fs, b);
	if (!err)
		err = find_trampoline(fs, b);
	return err;
}

int py_elf_inspect(const struct elf_file *f, const struct elf_file *debug, struct py_binary *out)
{
	struct py_files fs = { f, debug };
	struct py_binary b = { 0 };
	GElf_Sym runtime, eval;
	int err;

	memset(out, 0, sizeof(*out));
	err = find_sym(&fs, "_PyRuntime", &runtime);
	if (!err)
		err = find_sym(&fs, "_PyEval_EvalFrameDefault", &eval);
	if (err)
		return err;
	if (!is_x86_64(f))
		return -ENOTSUP;
	err = find_version(&fs, &b);
	if (err)
		return err;
	err = find_layout(&fs, &runtime, &b);
	if (!err)
		err = inspect_layout(&fs, &runtime, &eval, &b);
	if (err) {
		/* What says which interpreter it is and why it is not walked. */
		out->major = b.major;
		out->minor = b.minor;
		out->micro = b.micro;
		out->unsupported = b.unsupported;
		out->debug_offsets_refused = b.debug_offsets_refused;
		return err;
	}
	*out = b;
	return 0;
}

int py_elf_needs_libpython(const struct elf_file *f)
{
	Elf_Scn *scn;
	GElf_Shdr sh;
	Elf_Data *data;
	GElf_Dyn dyn;

	if (elf_file_find_section(f, SHT_DYNAMIC, &scn, &sh))
		return 0;
	if (elf_file_section_data(f, scn, &sh, &data) || !sh.sh_entsize)
		return -EINVAL;
	for (size_t i = 0; i < sh.sh_size / sh.sh_entsize && gelf_getdyn(data, (int)i, &dyn); i++) {
		const char *name;

		if (dyn.d_tag == DT_NULL)
			break;
		if (dyn.d_tag != DT_NEEDED)
			continue;
		name = elf_file_string(f, sh.sh_link, dyn.d_un.d_val);
		if (name && !strncmp(name, "libpython3.", 11))
			return 1;
	}
	return 0;
}
