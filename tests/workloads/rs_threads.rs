// rs_threads.rs - a thread as Rust's std::thread starts it, running spin for the seconds given while the
// main thread waits: its stack should begin clone3 -> start_thread -> std's thread_start -> ... -> spin.
#[inline(never)]
fn spin(k: u64) -> u64 {
    let mut s = 0u64;
    for i in 0..200000u64 {
        s = s.wrapping_add((i ^ k).wrapping_mul(31));
    }
    unsafe { std::ptr::read_volatile(&s) }
}

fn main() {
    let seconds: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(3.0);
    let h = std::thread::spawn(move || {
        let t = std::time::Instant::now();
        let mut s = 0u64;
        while t.elapsed().as_secs_f64() < seconds {
            s = s.wrapping_add(spin(3));
        }
        s
    });
    println!("{}", h.join().unwrap());
}
