/* stripped_lib.c - the library of stripped_main (tests/workloads/stripped_main.c), built into
 * libstripped.so and then stripped: its exported sl_work (kept in .dynsym) calls the static
 * sl_hash_rounds, which burns the CPU and has a name only in the library's debug file. */
static __attribute__((noinline, noclone)) unsigned long sl_hash_rounds(unsigned long seed, unsigned long n)
{
	unsigned long acc = seed;

	for (unsigned long i = 0; i < n; i++)
		acc = (acc ^ (acc >> 29)) * 0xbf58476d1ce4e5b9u + i;
	return acc;
}

/* Uses the result after the call, so the call stays a call (sl_work stays on the stack). */
unsigned long sl_work(unsigned long n)
{
	return sl_hash_rounds(n, n) ^ n;
}
