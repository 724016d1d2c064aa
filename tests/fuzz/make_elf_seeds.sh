#!/bin/bash
# make_elf_seeds.sh - builds the tiny ELF files of the elf target's seed corpus (corpus/elf/): an executable
# stripped (.dynsym only) and with -g (.symtab, DWARF, compressed DWARF), a shared library, a debuglink
# pair, one without section headers (build-id from PT_NOTE), and objects of other ABIs (32-bit,
# big-endian, ARM Thumb). Run it again when a seed should change; the files are checked in.
set -eu
out=$(cd "$(dirname "$0")" && pwd)/corpus/elf
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
cd "$tmp"

cat > prog.c <<'C'
static int depth(int n) { return n ? depth(n - 1) + 1 : 0; }
__attribute__((noinline)) int work(int n) { return depth(n) * 3; }
__attribute__((weak)) int hook(int n) { return n; }
int main(int argc, char **argv) { (void)argv; return work(argc) + hook(argc); }
C
small=(-Os "-Wl,--build-id" "-Wl,-z,noseparate-code")

cc "${small[@]}" -s prog.c -o "$out/exe-stripped"
cc "${small[@]}" -g prog.c -o "$out/exe-debug"
cc "${small[@]}" -g -gz prog.c -o "$out/exe-debug-compressed"
cc "${small[@]}" -s -shared -fPIC prog.c -o "$out/lib-shared.so"
cc "${small[@]}" -g prog.c -o full
objcopy --only-keep-debug full prog.debug
objcopy --strip-all --add-gnu-debuglink=prog.debug full "$out/exe-debuglink"
llvm-objcopy --strip-sections "$out/exe-stripped" "$out/exe-no-sections"
clang -Os -m32 -c prog.c -o "$out/obj-i386.o"
clang -Os --target=powerpc64-linux-gnu -c prog.c -o "$out/obj-ppc64-be.o"
clang -Os --target=armv7a-linux-gnueabihf -mthumb -c prog.c -o "$out/obj-thumb.o"
chmod 0644 "$out"/*  # data, not programs to run
ls -l "$out"
