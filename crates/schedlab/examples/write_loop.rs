//! Rewrite one file with [`schedlab::experiment::write_atomic`] in a loop, forever:
//! the victim of `tools/kill9-write.sh`, which `kill -9`s it at random moments and
//! counts the temporary files left behind.
//!
//! Usage: `write_loop PATH MEGABYTES`.

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(path), Some(mb)) = (args.next(), args.next()) else {
        eprintln!("usage: write_loop PATH MEGABYTES");
        std::process::exit(2);
    };
    let Ok(mb) = mb.parse::<usize>() else {
        eprintln!("MEGABYTES must be a whole number");
        std::process::exit(2);
    };
    let bytes = vec![b'x'; mb << 20];
    loop {
        if let Err(e) = schedlab::experiment::write_atomic(std::path::Path::new(&path), &bytes) {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    }
}
