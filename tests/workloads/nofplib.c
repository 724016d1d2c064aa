/* nofplib.c - a library nofp --dlopen loads once its process has unwind tables: lib_outer -> lib_leaf,
 * built -O2 -fomit-frame-pointer, lib_leaf setting up no frame. */
__attribute__((noinline)) unsigned long lib_leaf(unsigned long n)
{
	unsigned long acc = n;

	for (unsigned long i = 0; i < n; i++)
		acc = acc * 6364136223846793005u + (acc >> 17);
	return acc;
}

unsigned long lib_outer(unsigned long n)
{
	return lib_leaf(n) ^ n;
}
