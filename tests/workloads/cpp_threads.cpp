// cpp_threads.cpp - threads as native libraries start them: a std::thread (libstdc++) running
// worker -> work::spin, and an OpenMP team (libgomp) running team's loop -> work::spin, each for the
// seconds given. Every thread's stack should begin clone3 -> start_thread -> the library's thread
// function, the main thread's _start -> ... -> main.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace work {
__attribute__((noinline)) double spin(int k)
{
	double s = 0;
	for (int i = 0; i < 200000; i++)
		s += (i ^ k) * 1e-9;
	return s;
}
} // namespace work

static double elapsed(std::chrono::steady_clock::time_point t)
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

__attribute__((noinline)) void worker(double seconds)
{
	auto t = std::chrono::steady_clock::now();
	double s = 0;

	while (elapsed(t) < seconds)
		s += work::spin(1);
	std::printf("worker %f\n", s);
}

__attribute__((noinline)) void team(double seconds)
{
	auto t = std::chrono::steady_clock::now();
	double s = 0;

	while (elapsed(t) < seconds) {
#pragma omp parallel for reduction(+ : s) num_threads(2)
		for (int k = 0; k < 64; k++)
			s += work::spin(k);
	}
	std::printf("team %f\n", s);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? std::atof(argv[1]) : 3;
	std::thread a(worker, seconds);

	team(seconds);
	a.join();
	return 0;
}
