/* cfi.c - turns a binary's .eh_frame / .debug_frame into sorted, merged x86-64 unwind rows; libdw
 * interprets the call frame instructions, this file only finds the FDE ranges and maps the rules. */
#include "unwind/cfi.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define REG_RBP 6          /* x86-64 DWARF register numbers */
#define REG_RSP 7
#define REG_RA 16          /* the return address column (rip) */
#define RA_AT (-8)         /* where the return address is: CFA - 8 */
#define PTR_BYTES 8        /* DW_EH_PE_absptr in ELF64 */
#define LEB_MAX 10         /* bytes of a LEB128 that fits 64 bits */
#define ROW_COST 64        /* work charged per row on top of the FDE's bytes (lookup, initial state) */
#define PLT_OPS 9          /* DW_OP_breg7 N; breg16 0; lit15; and; litK; ge; lit3; shl; plus */

/* A CFA rule, a register rule (as libdw gives them). */
enum cfa_rule { CFA_RSP, CFA_RBP, CFA_PLT, CFA_OTHER };
enum reg_rule { REG_SAME, REG_UNDEF, REG_AT_CFA, REG_OTHER };

/* One FDE's address range. */
struct fde {
	uint32_t lo, hi; /* [lo, hi): ELF virtual addresses */
	uint32_t off;    /* offset of the FDE in its section: the tie-break between equal starts */
	uint32_t cost;   /* bytes of the entry: what libdw interprets, at most, per row */
};

/* A CIE: its offset in the section, the pointer encoding of its FDEs, whether they hold augmentation
 * data ('z'). */
struct cie {
	uint64_t off;
	int enc;
	bool sized;
};

/* One CFI section, libdw's handle on it and the FDEs kept from it (sorted, not overlapping). */
struct source {
	Dwarf_CFI *cfi;
	Elf_Data *data;
	const unsigned char *ident; /* e_ident of the file holding it */
	uint64_t addr;              /* sh_addr: pc-relative pointers are relative to addr + offset */
	bool eh;
	struct fde *v;   /* the FDEs kept */
	size_t n, cap;
	uint32_t *offs;  /* the offsets of all its FDEs, in section order */
	size_t noffs, cap_offs;
};

/* An ELF file read with libelf. */
struct elf_in {
	Elf *elf;
	GElf_Ehdr ehdr;
	uint64_t size;
	size_t shnum, shstrndx;
};

/* The state of one cfi_build. */
struct build {
	struct elf_in bin, dbg;
	Dwarf *dw; /* libdw's handle on the file whose .debug_frame is used */
	struct source eh, df;
	uint64_t exec_lo[CFI_MAX_EXEC], exec_hi[CFI_MAX_EXEC];
	int nexec;
	size_t max_rows, max_fdes;
	uint64_t work, max_work; /* bytes of FDE instructions given to libdw, and the bound (work_bound) */
	struct unwind_row *rows;
	size_t n, cap;
	struct cfi_stats st;
};

/* ---- ELF files ---- */

/* True when [off, off+len) lies inside a file of size bytes. */
static bool in_file(uint64_t size, uint64_t off, uint64_t len)
{
	return off <= size && len <= size - off;
}

/* Checks both header tables lie inside the file and libelf's counts are the header's (it shortens a
 * table running past the end). Returns 0 or -EINVAL. */
static int check_tables(struct elf_in *in)
{
	size_t phnum, shent = gelf_fsize(in->elf, ELF_T_SHDR, 1, EV_CURRENT);
	size_t phent = gelf_fsize(in->elf, ELF_T_PHDR, 1, EV_CURRENT);
	size_t claimed_sh = in->ehdr.e_shnum, claimed_ph = in->ehdr.e_phnum;

	if (elf_getshdrnum(in->elf, &in->shnum) != 0 || elf_getphdrnum(in->elf, &phnum) != 0)
		return -EINVAL;
	if (claimed_ph == PN_XNUM)
		claimed_ph = phnum;
	if (claimed_sh == 0 && in->ehdr.e_shoff != 0)
		claimed_sh = in->shnum;
	if (in->shnum != claimed_sh || phnum != claimed_ph || (in->ehdr.e_shoff != 0 && in->shnum == 0) ||
	    shent == 0 || phent == 0)
		return -EINVAL;
	if (in->shnum > in->size / shent || !in_file(in->size, in->ehdr.e_shoff, in->shnum * shent) ||
	    phnum > in->size / phent || !in_file(in->size, in->ehdr.e_phoff, phnum * phent))
		return -EINVAL;
	in->shstrndx = 0;
	if (in->shnum > 0 && (elf_getshdrstrndx(in->elf, &in->shstrndx) != 0 || in->shstrndx >= in->shnum))
		in->shstrndx = 0;
	return 0;
}

/* Reads the ELF headers of the file open on fd (not taken over). Returns 0, -EINVAL (not ELF, or its
 * header tables lie outside the file) or -errno from fstat. */
static int elf_in_open(struct elf_in *in, int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	in->size = (uint64_t)st.st_size;
	in->elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!in->elf || elf_kind(in->elf) != ELF_K_ELF || !gelf_getehdr(in->elf, &in->ehdr))
		return -EINVAL;
	return check_tables(in);
}

/* True for a little-endian ELF64 x86-64 file of a kind processes map (executable, shared object). */
static bool is_x86_64(const struct elf_in *in)
{
	return in->ehdr.e_ident[EI_CLASS] == ELFCLASS64 && in->ehdr.e_ident[EI_DATA] == ELFDATA2LSB &&
	       in->ehdr.e_machine == EM_X86_64 && (in->ehdr.e_type == ET_EXEC || in->ehdr.e_type == ET_DYN);
}

/* Remembers the binary's executable PT_LOAD segments (up to CFI_MAX_EXEC). Returns 0 or -EINVAL. */
static int load_exec_segments(struct build *b)
{
	GElf_Phdr ph;
	size_t i, phnum;

	if (elf_getphdrnum(b->bin.elf, &phnum) != 0)
		return -EINVAL;
	for (i = 0; i < phnum && b->nexec < CFI_MAX_EXEC; i++) {
		if (!gelf_getphdr(b->bin.elf, (int)i, &ph))
			return -EINVAL;
		if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) || ph.p_memsz == 0 ||
		    ph.p_vaddr + ph.p_memsz < ph.p_vaddr)
			continue;
		b->exec_lo[b->nexec] = ph.p_vaddr;
		b->exec_hi[b->nexec++] = ph.p_vaddr + ph.p_memsz;
	}
	return 0;
}

/* True when [lo, hi) lies inside one executable segment. */
static bool in_exec(const struct build *b, uint64_t lo, uint64_t hi)
{
	int i;

	for (i = 0; i < b->nexec; i++) {
		if (lo >= b->exec_lo[i] && hi <= b->exec_hi[i])
			return true;
	}
	return false;
}

/* Finds the first section called name that is not SHT_NOBITS (the one libdw takes) and checks its bytes
 * lie in the file. Returns 0, -ENOENT (none, or empty) or -EINVAL (it runs past the end of the file). */
static int find_section(const struct elf_in *in, const char *name, Elf_Scn **scn, GElf_Shdr *sh)
{
	const char *s;
	size_t i;

	if (in->shstrndx == 0)
		return -ENOENT;
	for (i = 1; i < in->shnum; i++) {
		*scn = elf_getscn(in->elf, i);
		if (!*scn || !gelf_getshdr(*scn, sh))
			return -EINVAL;
		s = elf_strptr(in->elf, in->shstrndx, sh->sh_name);
		if (!s || strcmp(s, name) != 0 || sh->sh_type == SHT_NOBITS)
			continue;
		if (sh->sh_size == 0)
			return -ENOENT;
		return in_file(in->size, sh->sh_offset, sh->sh_size) ? 0 : -EINVAL;
	}
	return -ENOENT;
}

/* The uncompressed size of section scn. Returns 0 or -EINVAL (a compression header that does not read). */
static int section_size(Elf_Scn *scn, const GElf_Shdr *sh, const char *name, uint64_t *size)
{
	GElf_Chdr ch;
	ssize_t n;

	*size = sh->sh_size;
	if (sh->sh_flags & SHF_COMPRESSED) {
		if (!gelf_getchdr(scn, &ch))
			return -EINVAL;
		*size = ch.ch_size;
	} else if (strncmp(name, ".zdebug_", 8) == 0) {
		n = dwelf_scn_gnu_compressed_size(scn);
		if (n < 0)
			return -EINVAL;
		*size = (uint64_t)n;
	}
	return 0;
}

/* True when the .debug_* sections libdw would load from in are, uncompressed, at most CFI_MAX_DWARF
 * bytes. Returns 1, 0 or -EINVAL (a section outside the file or a corrupt compression header). */
static int dwarf_fits(const struct elf_in *in)
{
	uint64_t size, total = 0;
	const char *name;
	GElf_Shdr sh;
	Elf_Scn *scn;
	size_t i;

	for (i = 1; i < in->shnum; i++) {
		scn = elf_getscn(in->elf, i);
		if (!scn || !gelf_getshdr(scn, &sh))
			return -EINVAL;
		name = elf_strptr(in->elf, in->shstrndx, sh.sh_name);
		if (!name || sh.sh_type == SHT_NOBITS || sh.sh_size == 0 ||
		    (strncmp(name, ".debug_", 7) != 0 && strncmp(name, ".zdebug_", 8) != 0))
			continue;
		if (!in_file(in->size, sh.sh_offset, sh.sh_size) || section_size(scn, &sh, name, &size) < 0)
			return -EINVAL;
		if (size > CFI_MAX_DWARF - total)
			return 0;
		total += size;
	}
	return 1;
}

/* ---- CIEs and FDEs ---- */

/* Reads a LEB128 at *p (before end) into *v. Returns 0 or -EINVAL (runs past end or past 64 bits). */
static int read_leb(const uint8_t **p, const uint8_t *end, bool sign, uint64_t *v)
{
	unsigned shift = 0, i;
	uint8_t byte;

	*v = 0;
	for (i = 0; i < LEB_MAX && *p < end; i++) {
		byte = *(*p)++;
		*v |= (uint64_t)(byte & 0x7f) << shift;
		shift += 7;
		if (!(byte & 0x80)) {
			if (sign && shift < 64 && (byte & 0x40))
				*v |= ~(uint64_t)0 << shift;
			return 0;
		}
	}
	return -EINVAL;
}

/* Reads n little-endian bytes at *p (before end) into *v, sign-extended when sign. Returns 0 or -EINVAL. */
static int read_fixed(const uint8_t **p, const uint8_t *end, unsigned n, bool sign, uint64_t *v)
{
	unsigned i;

	if ((size_t)(end - *p) < n)
		return -EINVAL;
	*v = 0;
	for (i = 0; i < n; i++)
		*v |= (uint64_t)(*p)[i] << (8 * i);
	if (sign && n < 8 && (*v >> (8 * n - 1)) & 1)
		*v |= ~(uint64_t)0 << (8 * n);
	*p += n;
	return 0;
}

/* Reads a value of pointer encoding enc (DW_EH_PE_*) at *p (before end); field is the ELF address of *p,
 * for DW_EH_PE_pcrel. Returns 0, -EINVAL (runs past end, unknown format) or -ENOTSUP (an application
 * other than absolute or pc-relative, indirect, or omitted). */
static int read_encoded(const uint8_t **p, const uint8_t *end, int enc, uint64_t field, uint64_t *v)
{
	int err;

	if (enc == DW_EH_PE_omit || (enc & DW_EH_PE_indirect) ||
	    ((enc & 0x70) != DW_EH_PE_absptr && (enc & 0x70) != DW_EH_PE_pcrel))
		return -ENOTSUP;
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
		err = read_fixed(p, end, PTR_BYTES, false, v);
		break;
	case DW_EH_PE_uleb128:
	case DW_EH_PE_sleb128:
		err = read_leb(p, end, (enc & 0x0f) == DW_EH_PE_sleb128, v);
		break;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		err = read_fixed(p, end, 2, enc & DW_EH_PE_signed, v);
		break;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		err = read_fixed(p, end, 4, enc & DW_EH_PE_signed, v);
		break;
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		err = read_fixed(p, end, 8, false, v);
		break;
	default:
		return -EINVAL;
	}
	if (!err && (enc & 0x70) == DW_EH_PE_pcrel)
		*v += field;
	return err;
}

/* The pointer encoding the FDEs of CIE c use: its augmentation's 'R' byte, else absolute. Only the
 * augmentations libdw 0.188 reads the same way are taken: "" and 'z' followed by L, P, R and S. Returns
 * the encoding, or -1 (another augmentation, data too short, or an encoding other than an absolute or
 * pc-relative fixed-size or LEB128 value). */
static int fde_encoding(const Dwarf_CIE *c)
{
	const uint8_t *p = c->augmentation_data, *end = p + c->augmentation_data_size;
	const char *a = c->augmentation;
	int enc = DW_EH_PE_absptr, penc;
	uint64_t skip;

	if (a[0] != '\0' && (a[0] != 'z' || !p))
		return -1;
	for (a += a[0] == 'z'; *a; a++) {
		if (*a == 'S')
			continue; /* signal frame: libdw reports it per frame */
		if (p >= end || (*a != 'L' && *a != 'P' && *a != 'R'))
			return -1;
		if (*a == 'R')
			enc = *p;
		penc = *p++;
		if (*a == 'P' && read_encoded(&p, end, penc & 0x0f, 0, &skip) < 0)
			return -1; /* the personality pointer: its size depends on its format only */
	}
	if (enc == DW_EH_PE_omit || (enc & DW_EH_PE_indirect) ||
	    ((enc & 0x70) != DW_EH_PE_absptr && (enc & 0x70) != DW_EH_PE_pcrel))
		return -1;
	return enc;
}

/* The operands of call frame instruction op: R a register (ULEB128), U a ULEB128, S an SLEB128, B a
 * ULEB128 length and that many bytes, 1/2/4/8 fixed bytes, A a pointer in the FDE encoding. NULL: an
 * opcode libdw refuses. */
static const char *operands(uint8_t op)
{
	switch (op & 0xc0) {
	case DW_CFA_advance_loc:
	case DW_CFA_restore:
		return "";
	case DW_CFA_offset:
		return "U";
	}
	switch (op) {
	case DW_CFA_nop:
	case DW_CFA_remember_state:
	case DW_CFA_restore_state:
	case DW_CFA_GNU_window_save:
		return "";
	case DW_CFA_set_loc:
		return "A";
	case DW_CFA_advance_loc1:
		return "1";
	case DW_CFA_advance_loc2:
		return "2";
	case DW_CFA_advance_loc4:
		return "4";
	case DW_CFA_MIPS_advance_loc8:
		return "8";
	case DW_CFA_restore_extended:
	case DW_CFA_undefined:
	case DW_CFA_same_value:
	case DW_CFA_def_cfa_register:
		return "R";
	case DW_CFA_def_cfa_offset:
	case DW_CFA_GNU_args_size:
		return "U";
	case DW_CFA_def_cfa_offset_sf:
		return "S";
	case DW_CFA_register:
		return "RR";
	case DW_CFA_offset_extended:
	case DW_CFA_def_cfa:
	case DW_CFA_val_offset:
	case DW_CFA_GNU_negative_offset_extended:
		return "RU";
	case DW_CFA_offset_extended_sf:
	case DW_CFA_def_cfa_sf:
	case DW_CFA_val_offset_sf:
		return "RS";
	case DW_CFA_def_cfa_expression:
		return "B";
	case DW_CFA_expression:
	case DW_CFA_val_expression:
		return "RB";
	default:
		return NULL;
	}
}

/* True when every operand of the call frame instructions [p, end) lies before end (set_loc operands are
 * in pointer encoding enc), registers are below CFI_MAX_REG and remember_state nests at most
 * CFI_MAX_NEST deep. This is no interpreter: it checks what libdw 0.188 does not. It reads the first byte
 * of an operand without checking it is there (one byte past a truncated entry, past the section's buffer
 * for the last one), grows its register array to any register number (up to 2 GiB) and copies the whole
 * state at each remember_state. Decoding stops at an opcode libdw refuses: it stops there too. */
static bool insns_ok(const uint8_t *p, const uint8_t *end, int enc)
{
	unsigned depth = 0;
	const char *o;
	uint64_t v;

	while (p < end) {
		if (*p == DW_CFA_remember_state && ++depth > CFI_MAX_NEST)
			return false;
		if (*p == DW_CFA_restore_state && depth > 0)
			depth--;
		o = operands(*p++);
		if (!o)
			return true;
		for (; *o; o++) {
			if (*o == 'R' || *o == 'U' || *o == 'S' || *o == 'B') {
				if (read_leb(&p, end, *o == 'S', &v) < 0 || (*o == 'B' && v > (uint64_t)(end - p)) ||
				    (*o == 'R' && v >= CFI_MAX_REG))
					return false;
				if (*o == 'B')
					p += v;
			} else if (*o == 'A') {
				if (read_encoded(&p, end, enc & 0x0f, 0, &v) < 0)
					return false;
			} else {
				if ((size_t)(end - p) < (size_t)(*o - '0'))
					return false;
				p += *o - '0';
			}
		}
	}
	return true;
}

/* The CIE at section offset off in cies (sorted by offset), or NULL. */
static const struct cie *find_cie(const struct cie *cies, size_t n, uint64_t off)
{
	size_t lo = 0, hi = n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (cies[mid].off == off)
			return &cies[mid];
		if (cies[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Appends v to the array *arr of *n elements of size sz (capacity *cap). Returns 0 or -ENOMEM. */
static int append(void **arr, size_t *n, size_t *cap, size_t sz, const void *v)
{
	size_t c = *cap ? *cap * 2 : 64;
	void *nv;

	if (*n == *cap) {
		nv = realloc(*arr, c * sz);
		if (!nv)
			return -ENOMEM;
		*arr = nv;
		*cap = c;
	}
	memcpy((char *)*arr + *n * sz, v, sz);
	(*n)++;
	return 0;
}

/* Reads the entry of s at section offset off into e and where the next one starts into *next. Returns 0,
 * 1 past the last entry, or -EINVAL (it does not parse, or the next offset does not move forward). */
static int next_entry(const struct source *s, Dwarf_Off off, Dwarf_Off *next, Dwarf_CFI_Entry *e)
{
	int r = dwarf_next_cfi(s->ident, s->data, s->eh, off, next, e);

	if (r == 1)
		return 1;
	return r < 0 || *next <= off ? -EINVAL : 0;
}

/* Lists the CIEs of s in section order into *out (malloc'd), checking each. Returns their count or
 * -errno (-EINVAL: an entry that does not parse, a CIE not understood or with instructions running
 * past its end; -E2BIG: more than CFI_MAX_CIES). */
static ssize_t list_cies(const struct source *s, struct cie **out)
{
	struct cie *v = NULL, c;
	size_t n = 0, cap = 0;
	Dwarf_Off off = 0, next;
	Dwarf_CFI_Entry e;
	int r, err = 0;

	for (; err == 0; off = next) {
		r = next_entry(s, off, &next, &e);
		if (r) {
			err = r < 0 ? r : 0;
			break;
		}
		if (e.CIE_id != DW_CIE_ID_64)
			continue;
		c = (struct cie){ .off = off, .enc = fde_encoding(&e.cie), .sized = e.cie.augmentation[0] == 'z' };
		if (c.enc < 0 || !insns_ok(e.cie.initial_instructions, e.cie.initial_instructions_end, c.enc))
			err = -EINVAL;
		else if (n == CFI_MAX_CIES)
			err = -E2BIG;
		else
			err = append((void **)&v, &n, &cap, sizeof(*v), &c);
	}
	if (err) {
		free(v);
		return err;
	}
	*out = v;
	return (ssize_t)n;
}

/* Keeps FDE [lo, lo+len) of s (entry at off, cost bytes) when it is non-empty, not at 0 and inside an
 * executable segment. Returns 0, -E2BIG (above 4 GiB, or too many FDEs) or -ENOMEM. */
static int add_fde(struct build *b, struct source *s, uint64_t lo, uint64_t len, uint64_t off, uint64_t cost)
{
	uint64_t hi = lo + len;
	struct fde f;

	if (len == 0 || lo == 0 || hi < lo || !in_exec(b, lo, hi)) {
		b->st.fdes_dropped++;
		return 0;
	}
	if (hi > UINT32_MAX || b->eh.n + b->df.n >= b->max_fdes)
		return -E2BIG;
	f = (struct fde){ .lo = (uint32_t)lo, .hi = (uint32_t)hi, .off = (uint32_t)off, .cost = (uint32_t)cost };
	return append((void **)&s->v, &s->n, &s->cap, sizeof(f), &f);
}

/* Decodes FDE e (at section offset off, entry ending at next) of s with its CIE c, checks its
 * instructions and keeps its range. Returns 0 or -errno (-EINVAL: it runs past its entry). */
static int decode_fde(struct build *b, struct source *s, const struct cie *c, const Dwarf_FDE *e,
		      Dwarf_Off off, Dwarf_Off next)
{
	const uint8_t *base = s->data->d_buf, *p = e->start, *end = e->end;
	uint64_t lo, len, aug = 0;
	uint32_t off32 = (uint32_t)off;

	if (read_encoded(&p, end, c->enc, s->addr + (uint64_t)(p - base), &lo) < 0 ||
	    read_encoded(&p, end, c->enc & 0x0f, 0, &len) < 0 ||
	    (c->sized && (read_leb(&p, end, false, &aug) < 0 || aug > (uint64_t)(end - p))))
		return -EINVAL;
	if (!insns_ok(p + aug, end, c->enc))
		return -EINVAL;
	if (append((void **)&s->offs, &s->noffs, &s->cap_offs, sizeof(off32), &off32) < 0)
		return -ENOMEM;
	return add_fde(b, s, lo, len, off, next - off + ROW_COST);
}

/* Collects the FDE ranges of s (CIEs first, since a .debug_frame FDE may name a later one). Every entry
 * libdw could be led to is checked here, so that it never runs instructions this file did not.
 * Returns 0 or -errno (-EINVAL: an entry that does not parse or runs past its end, an FDE naming no CIE). */
static int collect_fdes(struct build *b, struct source *s)
{
	Dwarf_Off off = 0, next;
	const struct cie *c;
	struct cie *cies = NULL;
	Dwarf_CFI_Entry e;
	ssize_t ncies = list_cies(s, &cies);
	int r, err = 0;

	if (ncies < 0)
		return (int)ncies;
	for (;; off = next) {
		r = next_entry(s, off, &next, &e);
		if (r) {
			err = r < 0 ? r : 0;
			break;
		}
		if (e.CIE_id == DW_CIE_ID_64)
			continue;
		c = find_cie(cies, (size_t)ncies, e.fde.CIE_pointer);
		err = c ? decode_fde(b, s, c, &e.fde, off, next) : -EINVAL;
		if (err)
			break;
	}
	free(cies);
	return err;
}

/* True when off is the offset of an FDE of s (offs: in section order, so sorted). */
static bool is_fde(const struct source *s, uint64_t off)
{
	size_t lo = 0, hi = s->noffs, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (s->offs[mid] == off)
			return true;
		if (s->offs[mid] < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* Checks the .eh_frame_hdr search table libdw binary-searches (when it uses one): each entry must name
 * an FDE collect_fdes checked. Only the layout ld writes is accepted: version 1, the .eh_frame pointer
 * absolute or pc-relative, a count, entries of two datarel sdata4 values. Returns 0 or -EINVAL. */
static int check_hdr(struct build *b)
{
	const uint8_t *h, *p, *end;
	uint64_t ptr, count, i, v;
	GElf_Shdr sh;
	Elf_Scn *scn;
	Elf_Data *d;
	int err = find_section(&b->bin, ".eh_frame_hdr", &scn, &sh);

	if (err)
		return err == -ENOENT ? 0 : err;
	d = elf_getdata(scn, NULL);
	if (!d || !d->d_buf || d->d_size != sh.sh_size || d->d_size < 4)
		return -EINVAL;
	h = d->d_buf;
	end = h + d->d_size;
	p = h + 4;
	if (h[0] != 1 || read_encoded(&p, end, h[1], sh.sh_addr + 4, &ptr) < 0)
		return -EINVAL;
	if (h[2] == DW_EH_PE_omit || h[3] == DW_EH_PE_omit || (h[3] & ~DW_EH_PE_signed) == DW_EH_PE_uleb128)
		return 0; /* no table: libdw walks the entries, all checked */
	if ((h[2] & 0x70) != DW_EH_PE_absptr || read_encoded(&p, end, h[2], 0, &count) < 0)
		return -EINVAL;
	if (count == 0)
		return 0;
	if (h[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4) || count > (uint64_t)(end - p) / 8)
		return -EINVAL;
	if (ptr != b->eh.addr)
		return 0; /* libdw ignores the table */
	for (i = 0; i < count; i++) {
		p += 4; /* the initial location: only where to look */
		if (read_fixed(&p, end, 4, true, &v) < 0 || !is_fde(&b->eh, sh.sh_addr + v - b->eh.addr))
			return -EINVAL;
	}
	return 0;
}

/* Orders FDEs by start, then by offset in the section. */
static int fde_cmp(const void *a, const void *b)
{
	const struct fde *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* True when [lo, hi) overlaps an FDE of s (sorted, not overlapping). */
static bool overlaps(const struct source *s, uint32_t lo, uint32_t hi)
{
	size_t a = 0, z = s->n, mid;

	while (a < z) { /* the first FDE ending after lo */
		mid = a + (z - a) / 2;
		if (s->v[mid].hi <= lo)
			a = mid + 1;
		else
			z = mid;
	}
	return a < s->n && s->v[a].lo < hi;
}

/* Sorts the FDEs of s and drops those overlapping an earlier one or one of other (NULL: none). */
static void sort_fdes(struct build *b, struct source *s, const struct source *other)
{
	size_t i, kept = 0;

	if (s->n > 1)
		qsort(s->v, s->n, sizeof(*s->v), fde_cmp);
	for (i = 0; i < s->n; i++) {
		if ((kept > 0 && s->v[i].lo < s->v[kept - 1].hi) || (other && overlaps(other, s->v[i].lo, s->v[i].hi))) {
			b->st.fdes_dropped++;
			continue;
		}
		s->v[kept++] = s->v[i];
	}
	s->n = kept;
}

/* ---- rules ---- */

/* How the caller's value of register regno is found in frame fr; *off: the offset from the CFA. */
static enum reg_rule reg_rule(Dwarf_Frame *fr, int regno, int64_t *off)
{
	Dwarf_Op mem[3], *ops = NULL;
	size_t nops = 0;

	*off = 0;
	if (regno < 0 || dwarf_frame_register(fr, regno, mem, &ops, &nops) < 0)
		return REG_OTHER;
	if (nops == 0)
		return ops ? REG_UNDEF : REG_SAME;
	if (ops[0].atom != DW_OP_call_frame_cfa || nops > 2)
		return REG_OTHER;
	if (nops == 2) {
		if (ops[1].atom != DW_OP_plus_uconst) /* DW_OP_stack_value: a value, not a slot */
			return REG_OTHER;
		*off = (int64_t)ops[1].number;
	}
	return REG_AT_CFA;
}

/* True when op is "register reg + *off" (DW_OP_bregN or DW_OP_bregx). */
static bool op_breg(const Dwarf_Op *op, unsigned reg, int64_t *off)
{
	if (op->atom == DW_OP_breg0 + reg) {
		*off = (int64_t)op->number;
		return true;
	}
	if (op->atom == DW_OP_bregx && op->number == reg) {
		*off = (int64_t)op->number2;
		return true;
	}
	return false;
}

/* True when ops is the .plt rule of gcc and ld: rsp + *off + ((rip & 15) >= *k ? 8 : 0). */
static bool is_plt(const Dwarf_Op *ops, size_t nops, int64_t *off, int64_t *k)
{
	static const uint8_t tail[] = { DW_OP_ge, DW_OP_lit3, DW_OP_shl, DW_OP_plus };
	int64_t zero;
	size_t i;

	if (nops != PLT_OPS || !op_breg(&ops[0], REG_RSP, off) || !op_breg(&ops[1], REG_RA, &zero) || zero != 0 ||
	    ops[2].atom != DW_OP_lit15 || ops[3].atom != DW_OP_and || ops[4].atom < DW_OP_lit0 ||
	    ops[4].atom > DW_OP_lit31)
		return false;
	for (i = 0; i < sizeof(tail); i++) {
		if (ops[5 + i].atom != tail[i])
			return false;
	}
	*k = ops[4].atom - DW_OP_lit0;
	return true;
}

/* How the CFA is found in frame fr: *off from rsp or rbp, or the PLT rule's offset and threshold *k. */
static enum cfa_rule cfa_rule(Dwarf_Frame *fr, int64_t *off, int64_t *k)
{
	Dwarf_Op *ops = NULL;
	size_t nops = 0;

	*k = 0;
	if (dwarf_frame_cfa(fr, &ops, &nops) != 0 || nops == 0 || !ops)
		return CFA_OTHER;
	if (nops == 1 && ops[0].atom == DW_OP_bregx) { /* libdw's form of DW_CFA_def_cfa reg, off */
		*off = (int64_t)ops[0].number2;
		if (*off < INT16_MIN || *off > INT16_MAX)
			return CFA_OTHER;
		return ops[0].number == REG_RSP ? CFA_RSP : ops[0].number == REG_RBP ? CFA_RBP : CFA_OTHER;
	}
	if (is_plt(ops, nops, off, k) && *off >= INT16_MIN && *off <= INT16_MAX)
		return CFA_PLT;
	return CFA_OTHER;
}

/* A row with the given kinds and offsets. */
static struct unwind_row make_row(int cfa, int64_t cfa_off, int rbp, int64_t rbp_off)
{
	return (struct unwind_row){ .cfa_off = (__s16)cfa_off, .kinds = UNWIND_KINDS(cfa, rbp),
				    .rbp_off = (__s8)rbp_off };
}

/* The row for frame fr: ra is its return address column, signal whether it is a signal frame. */
static struct unwind_row frame_row(Dwarf_Frame *fr, int ra, bool signal)
{
	int64_t ra_off, off, k, rbp_off;
	enum cfa_rule cfa;
	enum reg_rule rr = reg_rule(fr, ra, &ra_off), rbp;

	if (rr == REG_UNDEF)
		return make_row(UNWIND_CFA_END, 0, UNWIND_RBP_SAME, 0);
	if (signal || ra != REG_RA || rr != REG_AT_CFA || ra_off != RA_AT)
		return make_row(UNWIND_CFA_OTHER, 0, UNWIND_RBP_SAME, 0);
	cfa = cfa_rule(fr, &off, &k);
	rbp = reg_rule(fr, REG_RBP, &rbp_off);
	if (cfa == CFA_PLT)
		return rbp == REG_SAME ? make_row(UNWIND_CFA_PLT, off, UNWIND_RBP_SAME, k)
				       : make_row(UNWIND_CFA_OTHER, 0, UNWIND_RBP_SAME, 0);
	if (cfa == CFA_OTHER)
		return make_row(UNWIND_CFA_OTHER, 0, UNWIND_RBP_SAME, 0);
	if (rbp == REG_SAME)
		return make_row(cfa == CFA_RSP ? UNWIND_CFA_RSP : UNWIND_CFA_RBP, off, UNWIND_RBP_SAME, 0);
	if (rbp == REG_AT_CFA && rbp_off % 8 == 0 && rbp_off / 8 >= INT8_MIN && rbp_off / 8 <= INT8_MAX)
		return make_row(cfa == CFA_RSP ? UNWIND_CFA_RSP : UNWIND_CFA_RBP, off, UNWIND_RBP_CFA, rbp_off / 8);
	return make_row(cfa == CFA_RSP ? UNWIND_CFA_RSP : UNWIND_CFA_RBP, off, UNWIND_RBP_OTHER, 0);
}

/* The row libdw gives at pc with cfi, and where it ends in *end (0 when libdw fails: an OTHER row). */
static struct unwind_row row_at(Dwarf_CFI *cfi, uint64_t pc, uint64_t *end)
{
	struct unwind_row row = make_row(UNWIND_CFA_OTHER, 0, UNWIND_RBP_SAME, 0);
	Dwarf_Frame *fr = NULL;
	Dwarf_Addr start, stop;
	bool signal = false;
	int ra;

	*end = 0;
	if (dwarf_cfi_addrframe(cfi, pc, &fr) != 0 || !fr)
		return row;
	ra = dwarf_frame_info(fr, &start, &stop, &signal);
	if (ra >= 0 && start <= pc && stop > pc) {
		row = frame_row(fr, ra, signal);
		*end = stop;
	}
	free(fr);
	return row;
}

/* ---- rows ---- */

bool cfi_same_rule(const struct unwind_row *a, const struct unwind_row *b)
{
	return a->kinds == b->kinds && a->cfa_off == b->cfa_off && a->rbp_off == b->rbp_off;
}

/* Appends row at pc, merged into the last row when their rules are equal. Returns 0, -E2BIG (more than
 * max_rows rows), -EINVAL (pc not above the last row's) or -ENOMEM. */
static int push_row(struct build *b, uint64_t pc, struct unwind_row row)
{
	struct unwind_row *nv;
	size_t cap;

	if (b->n > 0 && cfi_same_rule(&b->rows[b->n - 1], &row))
		return 0;
	if (pc > UINT32_MAX || (b->n > 0 && pc <= b->rows[b->n - 1].pc))
		return -EINVAL;
	if (b->n == b->max_rows)
		return -E2BIG;
	if (b->n == b->cap) {
		cap = b->cap ? b->cap * 2 : 1024;
		if (cap > b->max_rows)
			cap = b->max_rows;
		nv = realloc(b->rows, cap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		b->rows = nv;
		b->cap = cap;
	}
	row.pc = (__u32)pc;
	b->rows[b->n++] = row;
	return 0;
}

/* Appends the rows of FDE f of s, then a NONE row at its end unless the next FDE starts at next_lo ==
 * f->hi. Returns 0 or -errno. */
static int walk_fde(struct build *b, const struct source *s, const struct fde *f, uint64_t next_lo)
{
	uint64_t pc = f->lo, end;
	struct unwind_row row;
	int err;

	while (pc < f->hi) {
		if (f->cost > b->max_work - b->work)
			return -E2BIG;
		b->work += f->cost;
		row = row_at(s->cfi, pc, &end);
		if (end <= pc || end > f->hi)
			end = f->hi; /* libdw failed, or its row runs past this FDE (an overlap it resolved) */
		err = push_row(b, pc, row);
		if (err)
			return err;
		pc = end;
	}
	if (next_lo == f->hi)
		return 0;
	return push_row(b, f->hi, make_row(UNWIND_CFA_NONE, 0, UNWIND_RBP_SAME, 0));
}

/* The bound on b->work: CFI_WORK_PER_BYTE per byte of the sections walked, within [CFI_MAX_WORK,
 * CFI_MAX_WORK_CAP]. A library's work grows faster than its size (each row of an FDE costs the whole
 * FDE), so one fixed bound refuses the largest: OpenBLAS needs 146 bytes per byte of its .eh_frame,
 * libtorch_cpu passed 2^28 in all. */
static uint64_t work_bound(const struct build *b)
{
	uint64_t bytes = (b->eh.n && b->eh.data ? b->eh.data->d_size : 0) + (b->df.n && b->df.data ? b->df.data->d_size : 0);
	uint64_t bound = bytes * CFI_WORK_PER_BYTE;

	return bound < CFI_MAX_WORK ? CFI_MAX_WORK : bound > CFI_MAX_WORK_CAP ? CFI_MAX_WORK_CAP : bound;
}

/* Walks the FDEs of both sources in address order. Returns 0 or -errno. */
static int walk_all(struct build *b)
{
	size_t i = 0, j = 0;
	const struct fde *f, *next;
	const struct source *s;
	int err;

	b->max_work = work_bound(b);

	while (i < b->eh.n || j < b->df.n) {
		if (j >= b->df.n || (i < b->eh.n && b->eh.v[i].lo < b->df.v[j].lo)) {
			s = &b->eh;
			f = &b->eh.v[i++];
		} else {
			s = &b->df;
			f = &b->df.v[j++];
		}
		next = NULL;
		if (i < b->eh.n)
			next = &b->eh.v[i];
		if (j < b->df.n && (!next || b->df.v[j].lo < next->lo))
			next = &b->df.v[j];
		err = walk_fde(b, s, f, next ? next->lo : UINT64_MAX);
		if (err)
			return err;
	}
	return 0;
}

/* ---- sources ---- */

/* Sets up s over the binary's .eh_frame. Returns 0, -ENOENT (none) or -errno. */
static int open_eh_frame(struct build *b)
{
	struct source *s = &b->eh;
	GElf_Shdr sh;
	Elf_Scn *scn;
	int err = find_section(&b->bin, ".eh_frame", &scn, &sh);

	if (err)
		return err;
	if ((sh.sh_type != SHT_PROGBITS && sh.sh_type != SHT_X86_64_UNWIND) || (sh.sh_flags & SHF_COMPRESSED) ||
	    sh.sh_addr + sh.sh_size < sh.sh_addr)
		return -EINVAL;
	if (sh.sh_size > CFI_MAX_SECTION)
		return -ENOENT;
	s->data = elf_getdata(scn, NULL);
	if (!s->data || !s->data->d_buf || s->data->d_size != sh.sh_size)
		return -EINVAL;
	s->cfi = dwarf_getcfi_elf(b->bin.elf);
	if (!s->cfi)
		return -EINVAL;
	s->ident = b->bin.ehdr.e_ident;
	s->addr = sh.sh_addr;
	s->eh = true;
	return 0;
}

/* How many sections of in that are not SHT_NOBITS have names containing "debug_frame" (.debug_frame,
 * .zdebug_frame, .gnu.debuglto_.debug_frame: libdw picks one of them by rules of its own). */
static int count_debug_frames(const struct elf_in *in)
{
	const char *name;
	GElf_Shdr sh;
	Elf_Scn *scn;
	size_t i;
	int n = 0;

	for (i = 1; i < in->shnum && in->shstrndx; i++) {
		scn = elf_getscn(in->elf, i);
		if (!scn || !gelf_getshdr(scn, &sh))
			return -EINVAL;
		name = elf_strptr(in->elf, in->shstrndx, sh.sh_name);
		n += name && sh.sh_type != SHT_NOBITS && strstr(name, "debug_frame");
	}
	return n;
}

/* Sets up s over the .debug_frame of in (the binary or its debug file), opening its DWARF. It must be
 * the only section libdw could take for it, so that the one checked here is the one libdw runs.
 * Returns 0, -ENOENT (none, or over the size limits), -EINVAL (corrupt, or more than one) or -errno. */
static int open_debug_frame(struct build *b, struct elf_in *in)
{
	struct source *s = &b->df;
	uint64_t size;
	GElf_Shdr sh;
	Elf_Scn *scn;
	int err = find_section(in, ".debug_frame", &scn, &sh);

	if (err)
		return err;
	if (count_debug_frames(in) != 1)
		return -EINVAL;
	if (sh.sh_type != SHT_PROGBITS || section_size(scn, &sh, ".debug_frame", &size) < 0)
		return -EINVAL;
	if (size > CFI_MAX_SECTION)
		return -ENOENT;
	err = dwarf_fits(in);
	if (err <= 0)
		return err < 0 ? err : -ENOENT;
	b->dw = dwarf_begin_elf(in->elf, DWARF_C_READ, NULL);
	if (!b->dw)
		return -EINVAL;
	s->cfi = dwarf_getcfi(b->dw);
	if (!s->cfi || !gelf_getshdr(scn, &sh))
		return -EINVAL;
	if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0) /* libdw inflates it, normally */
		return -EINVAL;
	s->data = elf_getdata(scn, NULL);
	if (!s->data || !s->data->d_buf || s->data->d_size == 0 || s->data->d_size > CFI_MAX_SECTION)
		return -EINVAL;
	s->ident = in->ehdr.e_ident;
	s->addr = sh.sh_addr;
	s->eh = false;
	return 0;
}

/* The .debug_frame of the binary, else of the debug file open on debug_fd (-1: none).
 * Returns 0, -ENOENT or -errno. */
static int find_debug_frame(struct build *b, int debug_fd)
{
	int err = open_debug_frame(b, &b->bin);

	if (err != -ENOENT || debug_fd < 0)
		return err;
	err = elf_in_open(&b->dbg, debug_fd);
	if (err)
		return err;
	if (!is_x86_64(&b->dbg))
		return -EINVAL; /* not this binary's debug file */
	return open_debug_frame(b, &b->dbg);
}

/* Finds, collects and walks the FDEs of both sources. Returns 0 or -errno. */
static int build_rows(struct build *b, int debug_fd)
{
	int err = open_eh_frame(b);

	if (err == 0)
		err = collect_fdes(b, &b->eh);
	if (err == 0)
		err = check_hdr(b);
	if (err && err != -ENOENT)
		return err;
	err = find_debug_frame(b, debug_fd);
	if (err == 0)
		err = collect_fdes(b, &b->df);
	if (err && err != -ENOENT)
		return err;
	sort_fdes(b, &b->eh, NULL);
	sort_fdes(b, &b->df, &b->eh);
	if (b->eh.n + b->df.n == 0)
		return -ENOENT;
	b->st.fdes = b->eh.n + b->df.n;
	b->st.source = (b->eh.n ? CFI_SRC_EH_FRAME : 0) | (b->df.n ? CFI_SRC_DEBUG_FRAME : 0);
	return walk_all(b);
}

static void build_free(struct build *b)
{
	if (b->eh.cfi)
		dwarf_cfi_end(b->eh.cfi);
	if (b->dw)
		dwarf_end(b->dw); /* owns b->df.cfi */
	if (b->dbg.elf)
		elf_end(b->dbg.elf);
	if (b->bin.elf)
		elf_end(b->bin.elf);
	free(b->eh.v);
	free(b->df.v);
	free(b->eh.offs);
	free(b->df.offs);
	free(b->rows);
}

int cfi_build(int fd, int debug_fd, size_t max_rows, struct unwind_row **rows, size_t *n,
	      struct cfi_stats *stats)
{
	struct build b = { 0 };
	size_t i;
	int err;

	if (!rows || !n)
		return -EINVAL;
	if (fd < 0)
		return -EBADF;
	b.max_rows = max_rows < UNWIND_MAX_ROWS ? max_rows : UNWIND_MAX_ROWS;
	b.max_fdes = 2 * b.max_rows;
	err = elf_in_open(&b.bin, fd);
	if (!err && !is_x86_64(&b.bin))
		err = -ENOTSUP;
	if (!err)
		err = load_exec_segments(&b);
	if (!err)
		err = build_rows(&b, debug_fd);
	if (err) {
		build_free(&b);
		return err;
	}
	for (i = 0; i < b.n; i++)
		b.st.rows_other += UNWIND_CFA_KIND(b.rows[i].kinds) == UNWIND_CFA_OTHER ||
				   UNWIND_RBP_KIND(b.rows[i].kinds) == UNWIND_RBP_OTHER;
	b.st.rows = b.n;
	if (stats)
		*stats = b.st;
	*rows = b.rows;
	*n = b.n;
	b.rows = NULL;
	build_free(&b);
	return 0;
}

const struct unwind_row *cfi_lookup(const struct unwind_row *rows, size_t n, uint64_t pc)
{
	size_t lo = 0, hi = n, mid;

	if (n == 0 || pc < rows[0].pc)
		return NULL;
	while (hi - lo > 1) { /* rows[lo].pc <= pc, and pc < rows[hi].pc when hi < n */
		mid = lo + (hi - lo) / 2;
		if (rows[mid].pc <= pc)
			lo = mid;
		else
			hi = mid;
	}
	return &rows[lo];
}

/* Copies the kept .eh_frame FDEs of b into a malloc'd array. Returns 0, -ENOENT (none) or -ENOMEM. */
static int copy_ranges(const struct build *b, struct cfi_range **out, size_t *n)
{
	struct cfi_range *v;
	size_t i;

	if (b->eh.n == 0)
		return -ENOENT;
	v = calloc(b->eh.n, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < b->eh.n; i++)
		v[i] = (struct cfi_range){ .lo = b->eh.v[i].lo, .hi = b->eh.v[i].hi };
	*out = v;
	*n = b->eh.n;
	return 0;
}

int cfi_fde_ranges(int fd, size_t max, struct cfi_range **out, size_t *n)
{
	struct build b = { 0 };
	int err;

	if (!out || !n)
		return -EINVAL;
	if (fd < 0)
		return -EBADF;
	b.max_fdes = max;
	err = elf_in_open(&b.bin, fd);
	if (!err && !is_x86_64(&b.bin))
		err = -ENOTSUP;
	if (!err)
		err = load_exec_segments(&b);
	if (!err)
		err = open_eh_frame(&b);
	if (!err)
		err = collect_fdes(&b, &b.eh);
	if (!err) {
		sort_fdes(&b, &b.eh, NULL);
		err = copy_ranges(&b, out, n);
	}
	build_free(&b);
	return err;
}
