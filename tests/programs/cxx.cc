// SPDX-License-Identifier: MIT
//
// cxx.cc - C++ names the analyzer must demangle: a constructor and a method
// of a class in a namespace, a function template at two types, and a
// function in an anonymous namespace; a function template whose instances
// differ in nothing but their template argument; and a function left by an
// exception (GCC calls the exit hook while unwinding).  Calls: Klass(int) 1,
// method(int) 4, twice<int> 3, twice<double> 2, width<char> 1, width<long>
// 1, helper() 1, fail(int) 2.
#include <cstdio>

namespace ns
{
class Klass
{
      public:
	explicit Klass(int b);
	int method(int x);

      private:
	int base;
};

__attribute__((noipa)) Klass::Klass(int b) : base(b)
{
}

__attribute__((noipa)) int Klass::method(int x)
{
	return base + x;
}

template <typename T> __attribute__((noipa)) T twice(T x)
{
	return x + x;
}

template <typename T> __attribute__((noipa)) int width()
{
	return (int)sizeof(T);
}

__attribute__((noipa)) void fail(int x)
{
	throw x;
}
} // namespace ns

namespace
{
__attribute__((noipa)) int helper()
{
	return 1;
}
} // namespace

int main()
{
	ns::Klass k(10);
	int sum = helper();
	double d = 0;

	for (int i = 0; i < 4; i++)
		sum += k.method(i);
	for (int i = 0; i < 3; i++)
		sum += ns::twice(i);
	for (int i = 0; i < 2; i++)
		d += ns::twice(0.5 * i);
	volatile int widths = ns::width<char>() + ns::width<long>();
	(void)widths;
	for (int i = 0; i < 2; i++) {
		try {
			ns::fail(i);
		} catch (int x) {
			sum += x;
		}
	}
	std::printf("cxx: %d %.1f\n", sum, d);
	return 0;
}
