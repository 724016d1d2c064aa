// rs_work.rs - a Rust CPU burner with a known chain: main -> run -> pipeline::Stage::churn -> pipeline::mix.
mod pipeline {
    pub struct Stage {
        pub seed: u64,
    }
    impl Stage {
        #[inline(never)]
        pub fn churn(&mut self, rounds: u64) -> u64 {
            let mut acc = self.seed;
            for i in 0..rounds {
                acc = mix(acc, i);
            }
            self.seed = acc;
            acc
        }
    }
    #[inline(never)]
    pub fn mix(a: u64, b: u64) -> u64 {
        let mut x = a ^ b.wrapping_mul(0x9e3779b97f4a7c15);
        for _ in 0..64 {
            x = x.rotate_left(7).wrapping_mul(0xff51afd7ed558ccd) ^ (x >> 33);
        }
        unsafe { std::ptr::read_volatile(&x) }
    }
}

#[inline(never)]
fn run(seconds: f64) -> u64 {
    let start = std::time::Instant::now();
    let mut stage = pipeline::Stage { seed: 1 };
    let mut total = 0u64;
    while start.elapsed().as_secs_f64() < seconds {
        total = total.wrapping_add(stage.churn(10000));
    }
    total
}

fn main() {
    let seconds: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(3.0);
    println!("{}", run(seconds));
}
