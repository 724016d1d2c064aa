// jsfib.js - JavaScript the JIT compiles: a recursive fib (optimized by V8 once hot) called in a loop for
// SECONDS (argv[2], default 5), then "done N". Run it as node --perf-prof jsfib.js SECONDS: V8 writes
// jit-PID.dump (in the working directory) and maps it, and writes no perf map.
'use strict';
function fib(n) {
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}
const end = Date.now() + 1000 * Number(process.argv[2] || 5);
let calls = 0, sum = 0;
while (Date.now() < end) {
	sum += fib(25);
	calls++;
}
console.log(`done ${calls} ${sum}`);
