// cpp_work.cpp - a C++ CPU burner with a known chain through namespaces and templates, for names that
// must read demangled: main -> heldout::run -> heldout::geo::Grid<double>::relax(int) ->
// heldout::geo::Grid<double>::cell(int, int) const. Built without frame pointers by the tests.
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <vector>

namespace heldout {
namespace geo {
template <typename T> class Grid {
public:
	explicit Grid(int n) : n_(n), v_(static_cast<size_t>(n) * n, T(1)) {}
	__attribute__((noinline)) T cell(int i, int j) const
	{
		T s = v_[static_cast<size_t>(i) * n_ + j];
		for (int k = 0; k < 64; k++)
			s = s * T(0.999) + T(0.001) * static_cast<T>(k);
		return s;
	}
	__attribute__((noinline)) void relax(int rounds)
	{
		for (int r = 0; r < rounds; r++)
			for (int i = 1; i < n_ - 1; i++)
				for (int j = 1; j < n_ - 1; j++)
					v_[static_cast<size_t>(i) * n_ + j] = (cell(i - 1, j) + cell(i + 1, j)) * T(0.5);
	}
	T sum() const
	{
		T s = 0;
		for (T x : v_)
			s += x;
		return s;
	}

private:
	int n_;
	std::vector<T> v_;
};
} // namespace geo

__attribute__((noinline)) double run(double seconds)
{
	auto start = std::chrono::steady_clock::now();
	geo::Grid<double> g(64);
	while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds)
		g.relax(1);
	return g.sum();
}
} // namespace heldout

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? std::atof(argv[1]) : 3;

	std::printf("%f\n", heldout::run(seconds));
	return 0;
}
