# bigc.awk - writes a C file of N functions (awk -v n=N -f bigc.awk), chained calls and loops: compiled to
# IR and optimized by opt -O3, its work is in libLLVM for a few seconds.
BEGIN {
	if (!n)
		n = 1500
	for (i = 0; i < n; i++)
		printf "int f%d(int *a, int n) { int s = 0; for (int j = 0; j < n; j++) { s += a[j] * %d + (a[j] >> %d); if (s > %d) s ^= a[(j + %d) %% n]; } return s + %s; }\n", i, i, i % 7, i * 13, i, (i % 5) ? "f" (i - 1) "(a, n - 1)" : "0"
}
