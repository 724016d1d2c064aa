/* elf_file.h - one ELF file read with libelf: build-id, .gnu_debuglink, PT_LOAD segments, checked sections. */
#ifndef FLAMED_SYMBOLIZE_ELF_FILE_H
#define FLAMED_SYMBOLIZE_ELF_FILE_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ELF_BUILD_ID_MAX 64 /* bytes; GNU ld writes 20 (sha1) */
#define ELF_MAX_SEGMENTS 16 /* PT_LOAD headers kept per file; more are ignored */

struct elf_file;

/* One PT_LOAD program header: file bytes [offset, offset+filesz) are loaded at ELF address vaddr. */
struct elf_segment {
	uint64_t offset, vaddr, filesz;
	uint32_t flags; /* p_flags: PF_X, PF_W, PF_R */
};

/* Opens path read-only (O_CLOEXEC, O_NONBLOCK so a FIFO cannot block) and checks it is a regular file.
 * Returns the descriptor or -errno (-EINVAL: not a regular file). */
int elf_file_open_fd(const char *path);

/* Whether the file open on fd starts with ELF's magic: a file a process maps executable that is none (a
 * jitdump file, which perf's readers find by its mapping) is told apart without parsing it. */
bool elf_file_has_magic(int fd);

/* Parses the ELF file open on fd, taking ownership of fd (closed by elf_file_free, or here on failure).
 * The ELF header and the program and section header tables must lie inside the file.
 * Returns 0 or -errno (-EINVAL: not ELF, truncated or corrupt); *out is set only on success. */
int elf_file_from_fd(int fd, struct elf_file **out);

/* A memfd (O_CLOEXEC) named name holding buf[0..len): an image made or read in memory, for readers that
 * take a descriptor (elf_file_from_fd, cfi_build). Returns the descriptor or -errno. */
int elf_file_memfd(const char *name, const void *buf, size_t len);

/* elf_file_open_fd + elf_file_from_fd. */
int elf_file_open(const char *path, struct elf_file **out);

/* Closes the file; NULL is safe. */
void elf_file_free(struct elf_file *f);

/* The e_machine of the file (EM_X86_64, EM_AARCH64, ...). */
unsigned elf_file_machine(const struct elf_file *f);

/* The e_type of the file (ET_EXEC, ET_DYN, ET_REL: a relocatable object, as JIT code registered with
 * the GDB JIT interface often is, its symbols' values relative to their sections). */
unsigned elf_file_type(const struct elf_file *f);

/* Copies the GNU build-id (NT_GNU_BUILD_ID note) into buf.
 * Returns its length in bytes, -ENOENT (none) or -EINVAL (malformed or longer than cap). */
int elf_file_build_id(const struct elf_file *f, uint8_t *buf, size_t cap);

/* Reads .gnu_debuglink: the debug file's name (a bare file name, no '/') into name, its CRC32 into *crc.
 * Returns 0, -ENOENT (no section) or -EINVAL (malformed, or the name does not fit in cap). */
int elf_file_debuglink(const struct elf_file *f, char *name, size_t cap, uint32_t *crc);

/* Copies up to cap PT_LOAD segments, in header order. Returns how many, or -EINVAL. */
int elf_file_segments(const struct elf_file *f, struct elf_segment *segs, size_t cap);

/* Turns file offset off of a mapping (exec: an executable one) into an ELF virtual address with the
 * PT_LOAD segment holding it: exactly, else within the segment's pages. Where two segments share a page
 * of the file (lld and mold put the read-only segment and the code in one page, apart only in their
 * addresses), the one that is executable as the mapping is, wins. Never assumes an address equals its
 * file offset. Returns 0 or -ENOENT. */
int elf_segments_vaddr(const struct elf_segment *segs, size_t n, uint64_t off, bool exec, uint64_t *vaddr);

/* Finds the first section of type sh_type (SHT_SYMTAB, ...) and its header. Returns 0 or -ENOENT. */
int elf_file_find_section(const struct elf_file *f, uint32_t sh_type, Elf_Scn **scn, GElf_Shdr *shdr);

/* The section at index ndx and its header. Returns 0 or -EINVAL. */
int elf_file_section(const struct elf_file *f, size_t ndx, Elf_Scn **scn, GElf_Shdr *shdr);

/* The data of section scn (header shdr), after checking it lies inside the file.
 * Returns 0 or -EINVAL (out of the file, SHT_NOBITS, or libelf refused it). */
int elf_file_section_data(const struct elf_file *f, Elf_Scn *scn, const GElf_Shdr *shdr, Elf_Data **out);

/* The string at offset off of string table section ndx, or NULL when out of range. */
const char *elf_file_string(const struct elf_file *f, size_t ndx, size_t off);

/* The EI_CLASS of the file (ELFCLASS64, ELFCLASS32). */
unsigned elf_file_class(const struct elf_file *f);

/* The descriptor f reads through (owned by f: do not close it), for readers that parse the same file
 * again with libelf or libdw (cfi_fde_ranges). */
int elf_file_fd(const struct elf_file *f);

/* The number of section headers, the null one included: indices 1 to this - 1 name sections. */
size_t elf_file_section_count(const struct elf_file *f);

/* Finds the first defined symbol (st_shndx not SHN_UNDEF) called exactly name in .symtab (dynamic =
 * false) or .dynsym (dynamic = true) of f, of any type and binding. Returns 0 with *sym set, -ENOENT (no
 * such section or symbol) or -EINVAL (a corrupt section or string table). */
int elf_file_symbol(const struct elf_file *f, bool dynamic, const char *name, GElf_Sym *sym);

/* Whether a defined STT_FUNC or STT_GNU_IFUNC symbol of .symtab (dynamic = false) or .dynsym
 * (dynamic = true) of f has the value vaddr. Returns 1, 0 (none, or no such section) or -EINVAL. */
int elf_file_func_at(const struct elf_file *f, bool dynamic, uint64_t vaddr);

/* Whether ELF virtual addresses [vaddr, vaddr+len) (len 0: vaddr alone) lie in the memory image
 * (p_vaddr, p_memsz) of one PT_LOAD segment whose p_flags hold all of flags (PF_X, PF_W, PF_R; 0: any).
 * Returns 0, -ENOENT (no such segment, or the range wraps) or -EINVAL (unreadable program headers). */
int elf_file_vaddr_loaded(const struct elf_file *f, uint64_t vaddr, uint64_t len, uint32_t flags);

/* Reads len bytes at file offset off into buf (pread, retried on EINTR and short reads).
 * Returns 0, -EINVAL ([off, off+len) is not inside the file as it was opened), -EIO (the file shrank)
 * or -errno from pread. */
int elf_file_pread(const struct elf_file *f, uint64_t off, void *buf, size_t len);

/* Reads the len bytes the file holds for ELF virtual addresses [vaddr, vaddr+len): they must lie in the
 * file bytes (p_offset, p_filesz) of one PT_LOAD segment. Returns 0, -ENOENT (they do not: outside all
 * segments, or in a segment's zero-filled tail such as .bss), -EINVAL (unreadable program headers, or
 * those bytes past the end of the file), -EIO or -errno as elf_file_pread. */
int elf_file_read_vaddr(const struct elf_file *f, uint64_t vaddr, void *buf, size_t len);

#endif
