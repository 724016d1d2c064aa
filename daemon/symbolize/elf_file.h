/* elf_file.h - one ELF file read with libelf: build-id, .gnu_debuglink, PT_LOAD segments, checked sections. */
#ifndef FLAMED_SYMBOLIZE_ELF_FILE_H
#define FLAMED_SYMBOLIZE_ELF_FILE_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

#define ELF_BUILD_ID_MAX 64 /* bytes; GNU ld writes 20 (sha1) */
#define ELF_MAX_SEGMENTS 16 /* PT_LOAD headers kept per file; more are ignored */

struct elf_file;

/* One PT_LOAD program header: file bytes [offset, offset+filesz) are loaded at ELF address vaddr. */
struct elf_segment {
	uint64_t offset, vaddr, filesz;
};

/* Opens path read-only (O_CLOEXEC, O_NONBLOCK so a FIFO cannot block) and checks it is a regular file.
 * Returns the descriptor or -errno (-EINVAL: not a regular file). */
int elf_file_open_fd(const char *path);

/* Parses the ELF file open on fd, taking ownership of fd (closed by elf_file_free, or here on failure).
 * The ELF header and the program and section header tables must lie inside the file.
 * Returns 0 or -errno (-EINVAL: not ELF, truncated or corrupt); *out is set only on success. */
int elf_file_from_fd(int fd, struct elf_file **out);

/* elf_file_open_fd + elf_file_from_fd. */
int elf_file_open(const char *path, struct elf_file **out);

/* Closes the file; NULL is safe. */
void elf_file_free(struct elf_file *f);

/* The e_machine of the file (EM_X86_64, EM_AARCH64, ...). */
unsigned elf_file_machine(const struct elf_file *f);

/* Copies the GNU build-id (NT_GNU_BUILD_ID note) into buf.
 * Returns its length in bytes, -ENOENT (none) or -EINVAL (malformed or longer than cap). */
int elf_file_build_id(const struct elf_file *f, uint8_t *buf, size_t cap);

/* Reads .gnu_debuglink: the debug file's name (a bare file name, no '/') into name, its CRC32 into *crc.
 * Returns 0, -ENOENT (no section) or -EINVAL (malformed, or the name does not fit in cap). */
int elf_file_debuglink(const struct elf_file *f, char *name, size_t cap, uint32_t *crc);

/* Copies up to cap PT_LOAD segments, in header order. Returns how many, or -EINVAL. */
int elf_file_segments(const struct elf_file *f, struct elf_segment *segs, size_t cap);

/* Turns file offset off into an ELF virtual address with the PT_LOAD segment holding it (exactly, else
 * within the segment's pages). Returns 0 or -ENOENT. */
int elf_segments_vaddr(const struct elf_segment *segs, size_t n, uint64_t off, uint64_t *vaddr);

/* Finds the first section of type sh_type (SHT_SYMTAB, ...) and its header. Returns 0 or -ENOENT. */
int elf_file_find_section(const struct elf_file *f, uint32_t sh_type, Elf_Scn **scn, GElf_Shdr *shdr);

/* The section at index ndx and its header. Returns 0 or -EINVAL. */
int elf_file_section(const struct elf_file *f, size_t ndx, Elf_Scn **scn, GElf_Shdr *shdr);

/* The data of section scn (header shdr), after checking it lies inside the file.
 * Returns 0 or -EINVAL (out of the file, SHT_NOBITS, or libelf refused it). */
int elf_file_section_data(const struct elf_file *f, Elf_Scn *scn, const GElf_Shdr *shdr, Elf_Data **out);

/* The string at offset off of string table section ndx, or NULL when out of range. */
const char *elf_file_string(const struct elf_file *f, size_t ndx, size_t off);

#endif
