/* elf_file.c - opens one ELF file with libelf and reads its build-id, .gnu_debuglink and PT_LOAD segments. */
#include "elf/elf_file.h"

#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SEGMENT_PAGE 4096u /* page rounding used when an offset falls in a segment's padding */

struct elf_file {
	int fd;
	Elf *elf;
	GElf_Ehdr ehdr;
	uint64_t size;    /* file size: every offset read is checked against it */
	size_t phnum;     /* program headers */
	size_t shnum;     /* section headers */
	size_t shstrndx;  /* section name table, 0 when there is none */
};

/* True when [off, off+len) lies inside the file. */
static bool in_file(const struct elf_file *f, uint64_t off, uint64_t len)
{
	return off <= f->size && len <= f->size - off;
}

int elf_file_open_fd(const char *path)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

/* Header table of count entries of kind type at off: must lie inside the file. */
static bool table_ok(const struct elf_file *f, Elf_Type type, uint64_t off, size_t count)
{
	size_t ent = gelf_fsize(f->elf, type, 1, EV_CURRENT);

	if (count == 0)
		return true;
	return ent != 0 && count <= f->size / ent && in_file(f, off, (uint64_t)count * ent);
}

/* Reads the header counts and checks both header tables lie inside the file. libelf quietly shortens a
 * table that runs past the end of the file, so its counts must equal what the ELF header claims. */
static int check_tables(struct elf_file *f)
{
	size_t claimed_ph = f->ehdr.e_phnum, claimed_sh = f->ehdr.e_shnum, shstrndx;

	if (elf_getphdrnum(f->elf, &f->phnum) != 0 || elf_getshdrnum(f->elf, &f->shnum) != 0)
		return -EINVAL;
	if (claimed_ph == PN_XNUM)
		claimed_ph = f->phnum;        /* the real count is in section 0's sh_info */
	if (claimed_sh == 0 && f->ehdr.e_shoff != 0)
		claimed_sh = f->shnum;        /* the real count is in section 0's sh_size */
	if (f->phnum != claimed_ph || f->shnum != claimed_sh || (f->ehdr.e_shoff != 0 && f->shnum == 0))
		return -EINVAL;
	if (!table_ok(f, ELF_T_PHDR, f->ehdr.e_phoff, f->phnum) ||
	    !table_ok(f, ELF_T_SHDR, f->ehdr.e_shoff, f->shnum))
		return -EINVAL;
	if (f->shnum > 0 && elf_getshdrstrndx(f->elf, &shstrndx) == 0 && shstrndx < f->shnum)
		f->shstrndx = shstrndx;
	return 0;
}

int elf_file_memfd(const char *name, const void *buf, size_t len)
{
	int fd = memfd_create(name, MFD_CLOEXEC);

	if (fd < 0)
		return -errno;
	for (size_t done = 0; done < len;) {
		ssize_t w = write(fd, (const char *)buf + done, len - done);

		if (w <= 0) {
			int err = w < 0 ? -errno : -EIO;

			close(fd);
			return err;
		}
		done += (size_t)w;
	}
	return fd;
}

bool elf_file_has_magic(int fd)
{
	char magic[SELFMAG];

	return pread(fd, magic, sizeof(magic), 0) == (ssize_t)sizeof(magic) && !memcmp(magic, ELFMAG, SELFMAG);
}

int elf_file_from_fd(int fd, struct elf_file **out)
{
	struct elf_file *f;
	struct stat st;
	int err;

	if (fd < 0)
		return -EBADF;
	f = calloc(1, sizeof(*f));
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	f->fd = fd;
	err = -EINVAL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		goto fail;
	if (fstat(fd, &st) < 0) {
		err = -errno;
		goto fail;
	}
	f->size = (uint64_t)st.st_size;
	f->elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!f->elf || elf_kind(f->elf) != ELF_K_ELF || !gelf_getehdr(f->elf, &f->ehdr))
		goto fail;
	err = check_tables(f);
	if (err)
		goto fail;
	*out = f;
	return 0;
fail:
	elf_file_free(f);
	return err;
}

int elf_file_open(const char *path, struct elf_file **out)
{
	int fd = elf_file_open_fd(path);

	if (fd < 0)
		return fd;
	return elf_file_from_fd(fd, out);
}

void elf_file_free(struct elf_file *f)
{
	if (!f)
		return;
	if (f->elf)
		elf_end(f->elf);
	close(f->fd);
	free(f);
}

unsigned elf_file_machine(const struct elf_file *f)
{
	return f->ehdr.e_machine;
}

unsigned elf_file_type(const struct elf_file *f)
{
	return f->ehdr.e_type;
}

int elf_file_section(const struct elf_file *f, size_t ndx, Elf_Scn **scn, GElf_Shdr *shdr)
{
	if (ndx == 0 || ndx >= f->shnum)
		return -EINVAL;
	*scn = elf_getscn(f->elf, ndx);
	if (!*scn || !gelf_getshdr(*scn, shdr))
		return -EINVAL;
	return 0;
}

int elf_file_find_section(const struct elf_file *f, uint32_t sh_type, Elf_Scn **scn, GElf_Shdr *shdr)
{
	size_t i;

	for (i = 1; i < f->shnum; i++) {
		if (elf_file_section(f, i, scn, shdr) == 0 && shdr->sh_type == sh_type)
			return 0;
	}
	return -ENOENT;
}

/* Finds the section called name. Returns 0 or -ENOENT. */
static int find_named_section(const struct elf_file *f, const char *name, Elf_Scn **scn, GElf_Shdr *shdr)
{
	const char *s;
	size_t i;

	if (f->shstrndx == 0)
		return -ENOENT;
	for (i = 1; i < f->shnum; i++) {
		if (elf_file_section(f, i, scn, shdr) < 0)
			continue;
		s = elf_file_string(f, f->shstrndx, shdr->sh_name);
		if (s && strcmp(s, name) == 0)
			return 0;
	}
	return -ENOENT;
}

int elf_file_section_data(const struct elf_file *f, Elf_Scn *scn, const GElf_Shdr *shdr, Elf_Data **out)
{
	Elf_Data *d;

	if (shdr->sh_type == SHT_NOBITS || (shdr->sh_flags & SHF_COMPRESSED) ||
	    !in_file(f, shdr->sh_offset, shdr->sh_size))
		return -EINVAL;
	d = elf_getdata(scn, NULL);
	if (!d || (d->d_size > 0 && !d->d_buf))
		return -EINVAL;
	*out = d;
	return 0;
}

const char *elf_file_string(const struct elf_file *f, size_t ndx, size_t off)
{
	return elf_strptr(f->elf, ndx, off);
}

/* Looks for an NT_GNU_BUILD_ID note named "GNU" in note data d. Returns its length, -ENOENT or -EINVAL. */
static int note_build_id(const Elf_Data *d, uint8_t *buf, size_t cap)
{
	size_t off = 0, next, name_off, desc_off;
	const char *base = d->d_buf;
	GElf_Nhdr nh;

	while ((next = gelf_getnote((Elf_Data *)d, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(base + name_off, "GNU", 4) == 0) {
			if (nh.n_descsz == 0 || nh.n_descsz > cap)
				return -EINVAL;
			memcpy(buf, base + desc_off, nh.n_descsz);
			return (int)nh.n_descsz;
		}
		off = next;
	}
	return -ENOENT;
}

/* The build-id from SHT_NOTE sections. */
static int build_id_from_sections(const struct elf_file *f, uint8_t *buf, size_t cap)
{
	GElf_Shdr sh;
	Elf_Data *d;
	Elf_Scn *scn;
	size_t i;
	int r;

	for (i = 1; i < f->shnum; i++) {
		if (elf_file_section(f, i, &scn, &sh) < 0 || sh.sh_type != SHT_NOTE)
			continue;
		if (elf_file_section_data(f, scn, &sh, &d) < 0)
			continue;
		r = note_build_id(d, buf, cap);
		if (r != -ENOENT)
			return r;
	}
	return -ENOENT;
}

/* The build-id from PT_NOTE segments (files without section headers). */
static int build_id_from_segments(const struct elf_file *f, uint8_t *buf, size_t cap)
{
	GElf_Phdr ph;
	Elf_Data *d;
	size_t i;
	int r;

	for (i = 0; i < f->phnum; i++) {
		if (!gelf_getphdr(f->elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		if (!in_file(f, ph.p_offset, ph.p_filesz))
			continue;
		d = elf_getdata_rawchunk(f->elf, (int64_t)ph.p_offset, ph.p_filesz,
					 ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (!d || (d->d_size > 0 && !d->d_buf))
			continue;
		r = note_build_id(d, buf, cap);
		if (r != -ENOENT)
			return r;
	}
	return -ENOENT;
}

int elf_file_build_id(const struct elf_file *f, uint8_t *buf, size_t cap)
{
	int r = build_id_from_sections(f, buf, cap);

	if (r != -ENOENT)
		return r;
	return build_id_from_segments(f, buf, cap);
}

/* Reads a 4-byte word in the file's byte order. */
static uint32_t read_word(const struct elf_file *f, const unsigned char *p)
{
	if (f->ehdr.e_ident[EI_DATA] == ELFDATA2MSB)
		return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

int elf_file_debuglink(const struct elf_file *f, char *name, size_t cap, uint32_t *crc)
{
	const unsigned char *p;
	const char *nul;
	GElf_Shdr sh;
	Elf_Data *d;
	Elf_Scn *scn;
	size_t len, crc_off;

	if (find_named_section(f, ".gnu_debuglink", &scn, &sh) < 0)
		return -ENOENT;
	if (elf_file_section_data(f, scn, &sh, &d) < 0)
		return -EINVAL;
	p = d->d_buf;
	nul = d->d_size ? memchr(p, '\0', d->d_size) : NULL;
	if (!nul)
		return -EINVAL;
	len = (size_t)(nul - (const char *)p);
	crc_off = (len + 4) & ~(size_t)3; /* the name, its NUL, padding to 4 bytes */
	if (len == 0 || len >= cap || memchr(p, '/', len) || crc_off > d->d_size || d->d_size - crc_off < 4)
		return -EINVAL;
	memcpy(name, p, len + 1);
	*crc = read_word(f, p + crc_off);
	return 0;
}

int elf_file_segments(const struct elf_file *f, struct elf_segment *segs, size_t cap)
{
	GElf_Phdr ph;
	size_t i, n = 0;

	for (i = 0; i < f->phnum && n < cap; i++) {
		if (!gelf_getphdr(f->elf, (int)i, &ph))
			return -EINVAL;
		if (ph.p_type != PT_LOAD)
			continue;
		segs[n].offset = ph.p_offset;
		segs[n].vaddr = ph.p_vaddr;
		segs[n].filesz = ph.p_filesz;
		segs[n].flags = ph.p_flags;
		n++;
	}
	return (int)n;
}

/* Whether segment sg holds file offset off: exactly (pages false), or within its pages. */
static bool segment_holds(const struct elf_segment *sg, uint64_t off, bool pages)
{
	uint64_t lo = sg->offset, hi = sg->offset + sg->filesz;

	if (hi < sg->offset || hi > UINT64_MAX - SEGMENT_PAGE)
		return false;
	if (pages) {
		lo &= ~(uint64_t)(SEGMENT_PAGE - 1);
		hi = (hi + SEGMENT_PAGE - 1) & ~(uint64_t)(SEGMENT_PAGE - 1);
	}
	return off >= lo && off < hi;
}

int elf_segments_vaddr(const struct elf_segment *segs, size_t n, uint64_t off, bool exec, uint64_t *vaddr)
{
	/* Exactly, then within the pages; first the segments executable as the mapping is, then any. */
	for (int pass = 0; pass < 4; pass++) {
		bool pages = pass & 1, any = pass >= 2;

		for (size_t i = 0; i < n; i++) {
			if (!any && !!(segs[i].flags & PF_X) != exec)
				continue;
			if (segment_holds(&segs[i], off, pages)) {
				*vaddr = off - segs[i].offset + segs[i].vaddr; /* unsigned wrap gives the right value */
				return 0;
			}
		}
	}
	return -ENOENT;
}

unsigned elf_file_class(const struct elf_file *f)
{
	return f->ehdr.e_ident[EI_CLASS];
}

int elf_file_fd(const struct elf_file *f)
{
	return f->fd;
}

size_t elf_file_section_count(const struct elf_file *f)
{
	return f->shnum;
}

/* What a symbol search looks for: the symbol called name, or (name NULL) a function symbol at value. */
struct sym_query {
	const char *name;
	uint64_t value;
};

/* The symbol table .symtab or .dynsym and the index of its string table. Returns 0, -ENOENT or -EINVAL. */
static int symbol_table(const struct elf_file *f, bool dynamic, Elf_Data **data, size_t *strndx)
{
	GElf_Shdr sh, strsh;
	Elf_Scn *scn, *strscn;
	Elf_Data *strdata;

	if (elf_file_find_section(f, dynamic ? SHT_DYNSYM : SHT_SYMTAB, &scn, &sh) < 0)
		return -ENOENT;
	if (elf_file_section(f, sh.sh_link, &strscn, &strsh) < 0 || strsh.sh_type != SHT_STRTAB ||
	    elf_file_section_data(f, strscn, &strsh, &strdata) < 0 ||
	    elf_file_section_data(f, scn, &sh, data) < 0)
		return -EINVAL;
	*strndx = sh.sh_link;
	return 0;
}

/* True when defined symbol sym (name at offset st_name of section strndx) is what q looks for. */
static bool sym_matches(const struct elf_file *f, size_t strndx, const GElf_Sym *sym,
			const struct sym_query *q)
{
	unsigned type = GELF_ST_TYPE(sym->st_info);
	const char *s;

	if (!q->name)
		return sym->st_value == q->value && (type == STT_FUNC || type == STT_GNU_IFUNC);
	s = elf_file_string(f, strndx, sym->st_name);
	return s && strcmp(s, q->name) == 0;
}

/* Finds the first defined symbol of .symtab or .dynsym that q looks for. Returns 0 (in *sym), -ENOENT
 * or -EINVAL. */
static int find_symbol(const struct elf_file *f, bool dynamic, const struct sym_query *q, GElf_Sym *sym)
{
	Elf_Data *data;
	size_t strndx;
	int i, err = symbol_table(f, dynamic, &data, &strndx);

	if (err)
		return err;
	for (i = 1; i < INT32_MAX && gelf_getsym(data, i, sym); i++) {
		if (sym->st_shndx != SHN_UNDEF && sym_matches(f, strndx, sym, q))
			return 0;
	}
	return -ENOENT;
}

int elf_file_symbol(const struct elf_file *f, bool dynamic, const char *name, GElf_Sym *sym)
{
	struct sym_query q = { .name = name };

	return find_symbol(f, dynamic, &q, sym);
}

int elf_file_func_at(const struct elf_file *f, bool dynamic, uint64_t vaddr)
{
	struct sym_query q = { .value = vaddr };
	GElf_Sym sym;
	int err = find_symbol(f, dynamic, &q, &sym);

	if (err == -ENOENT)
		return 0;
	return err ? err : 1;
}

/* Finds the PT_LOAD header *ph whose memory image (file: its file bytes) holds [vaddr, vaddr+len) and
 * whose flags hold flags. Returns 0, -ENOENT or -EINVAL. */
static int find_load(const struct elf_file *f, uint64_t vaddr, uint64_t len, uint32_t flags, bool file,
		     GElf_Phdr *ph)
{
	uint64_t size;
	size_t i;

	if (len == 0)
		len = 1;
	if (vaddr + len < vaddr)
		return -ENOENT;
	for (i = 0; i < f->phnum; i++) {
		if (!gelf_getphdr(f->elf, (int)i, ph))
			return -EINVAL;
		if (ph->p_type != PT_LOAD || (ph->p_flags & flags) != flags)
			continue;
		size = file ? ph->p_filesz : ph->p_memsz;
		if (vaddr >= ph->p_vaddr && vaddr - ph->p_vaddr <= size && len <= size - (vaddr - ph->p_vaddr))
			return 0;
	}
	return -ENOENT;
}

int elf_file_vaddr_loaded(const struct elf_file *f, uint64_t vaddr, uint64_t len, uint32_t flags)
{
	GElf_Phdr ph;

	return find_load(f, vaddr, len, flags, false, &ph);
}

int elf_file_pread(const struct elf_file *f, uint64_t off, void *buf, size_t len)
{
	size_t done = 0;
	ssize_t r;

	if (!in_file(f, off, len))
		return -EINVAL;
	while (done < len) {
		r = pread(f->fd, (char *)buf + done, len - done, (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EIO;
		done += (size_t)r;
	}
	return 0;
}

int elf_file_read_vaddr(const struct elf_file *f, uint64_t vaddr, void *buf, size_t len)
{
	uint64_t delta;
	GElf_Phdr ph;
	int err = find_load(f, vaddr, len, 0, true, &ph);

	if (err)
		return err;
	delta = vaddr - ph.p_vaddr;
	if (ph.p_offset > UINT64_MAX - delta)
		return -EINVAL;
	return elf_file_pread(f, ph.p_offset + delta, buf, len);
}
